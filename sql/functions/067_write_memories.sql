-- memdb.write_memories(p_items jsonb, p_embeddings vector[] DEFAULT NULL,
--                      p_space_id integer DEFAULT NULL, p_options jsonb DEFAULT '{}')
--   -> TABLE(ord integer, id uuid, outcome text, related_id uuid, similarity double precision,
--            detail text)
-- The write path's one SQL call: each item of p_items (a JSON array of memories, keys as in
-- memdb.add_memories, plus status 'active'|'hypothesis' and correction_of, the text a
-- correction denies) becomes exactly one of these outcomes, in input order (ord, 1-based):
--   duplicate   the same normalized content is current in the same scope (tenant, subject,
--               scope, project_id, session_id): that row is bumped (memdb.bump_memory);
--   superseded  the item has a norm_key and current rows of the same (tenant, subject,
--               category, normalized norm_key) exist, or it is a correction (correction_of)
--               of a current memory of the same subject and category - the one containing the
--               denied text, else the most similar at cosine >= correction_threshold: the item
--               is inserted and the old rows get valid_to = now() and superseded_by (history
--               op 'supersede', reason naming the new version); related_id is the old row.
--               A hypothesis never supersedes;
--   merged      with near_dup_threshold set: a current memory of the same scope and category,
--               in the same embedding space, has cosine >= the threshold and memdb.same_words:
--               it is bumped, not rewritten, and a history row (op 'update', reason
--               'merged near-duplicate (cosine ...): <text>') records what was merged;
--               related_id is that row, similarity the cosine;
--   created / hypothesis   a new row (status 'active' / 'hypothesis').
-- Every item is checked before anything is locked or written (a bad one fails the whole call,
-- invalid_parameter_value 22023, naming the item and the key): it must be a JSON object with
-- only the keys above; content a string; text keys strings; importance, confidence and
-- tag_version numbers; ttl_seconds a number > 0 (a row born expired would be invisible);
-- metadata an object; tags an array. created_by defaults to the actor (setting memdb.actor,
-- which MemoryStore(actor=...) sets, else the login: session_user), the one history rows
-- record.
-- Options: near_dup_threshold (cosine; absent or null: no near-duplicate merging),
-- correction_threshold (default 0.93), source_order (see memdb.source_strength).
-- Items are processed in input order, each seeing the ones before it (a repeat of an item
-- of the same call is a duplicate but does not bump it).
-- New rows are collected and written together in one INSERT (memdb.insert_pending): the
-- statement-level history and BM25 triggers then run once per call, not once per row; an item
-- that must see the table as its predecessors left it (a slot version, a correction, a merge
-- into a new row of this call) has them written first. Race-free: before any
-- row is touched, a transaction-level advisory lock is taken on each (tenant, subject,
-- category) of the batch, in sorted order, so concurrent writers of the same subject and
-- category queue and the second sees the first's row; the unique dedup index is the last
-- line of defence (an insert that still collides becomes a duplicate bump).
-- On plain PostgreSQL the function runs its statements with generic plans (plan_cache_mode,
-- set by the migration: generic_plan_functions in sql/queries/citus.sql).
-- After its inserts the call has memdb.ensure_vector_index build space p_space_id's HNSW index
-- when the database has come to hold memdb.hnsw_min_rows memories (default 10000).
-- Example: SELECT * FROM memdb.write_memories('[{"content": "我喜欢喝绿茶", "subject": "alice",
--          "category": "preferences", "norm_key": "drink", "source_id": "turn-1"}]');
CREATE OR REPLACE FUNCTION memdb.write_memories(p_items jsonb, p_embeddings vector[] DEFAULT NULL,
                                                p_space_id integer DEFAULT NULL,
                                                p_options jsonb DEFAULT '{}')
RETURNS TABLE (ord integer, id uuid, outcome text, related_id uuid,
               similarity double precision, detail text)
LANGUAGE plpgsql
AS $$
DECLARE
    o jsonb := coalesce(p_options, '{}'::jsonb);
    near_t double precision := (o ->> 'near_dup_threshold')::double precision;
    corr_t double precision := coalesce((o ->> 'correction_threshold')::double precision, 0.93);
    src_order jsonb := o -> 'source_order';
    caller_reason text := coalesce(current_setting('memdb.reason', true), '');
    v_actor_setting text := current_setting('memdb.actor', true);
    v_actor text := coalesce(nullif(v_actor_setting, ''), session_user);
    lock_key bigint;
    r record;
    cand memdb.memories;
    before_row memdb.memories;
    after_row memdb.memories;
    target uuid;
    how text;
    sim double precision;
    old_ids uuid[];
    why text;
    made uuid[] := '{}';
    -- new rows not inserted yet (memdb.insert_pending writes them in one statement), and every
    -- item's outcome, returned in input order at the end
    pend memdb.memories[] := '{}';
    pend_key text[] := '{}';   -- each pending row's dedup key (scope and content hash)
    pend_near text[] := '{}';  -- and its near-duplicate key (scope and category)
    v_key text;
    v_near text;
    fix record;
    pos integer;
    o_ord integer[] := '{}';
    o_id uuid[] := '{}';
    o_out text[] := '{}';
    o_rel uuid[] := '{}';
    o_sim double precision[] := '{}';
    o_det text[] := '{}';
    chk record;
    -- the keys an item may have, with the JSON type of each
    c_types constant jsonb := jsonb_build_object(
        'tenant', 'string', 'subject', 'string', 'agent', 'string', 'scope', 'string',
        'project_id', 'string', 'session_id', 'string', 'kind', 'string', 'category', 'string',
        'content', 'string', 'uri', 'string', 'search_context', 'string', 'norm_key', 'string',
        'source_type', 'string', 'source_id', 'string', 'created_by', 'string',
        'created_at', 'string', 'expires_at', 'string', 'status', 'string',
        'correction_of', 'string', 'importance', 'number', 'confidence', 'number',
        'tag_version', 'number', 'ttl_seconds', 'number', 'metadata', 'object', 'tags', 'array');
BEGIN
    IF p_items IS NULL OR jsonb_typeof(p_items) <> 'array' THEN
        RAISE EXCEPTION 'items must be a JSON array' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- every item checked in one statement (the first bad one, in input order, fails the call);
    -- each key's expected JSON type looked up in c_types
    SELECT c.ord, c.problem, c.detail INTO chk
    FROM (SELECT i.ord::integer AS ord,
                 CASE WHEN jsonb_typeof(i.item) <> 'object' THEN 'type'
                      WHEN x.unknown IS NOT NULL THEN 'unknown'
                      WHEN jsonb_typeof(i.item -> 'content') IS DISTINCT FROM 'string' THEN 'content'
                      WHEN x.wrong IS NOT NULL THEN 'wrong'
                      WHEN (i.item ->> 'ttl_seconds')::double precision <= 0 THEN 'ttl' END AS problem,
                 CASE WHEN jsonb_typeof(i.item) <> 'object' THEN jsonb_typeof(i.item)
                      WHEN x.unknown IS NOT NULL THEN x.unknown
                      WHEN jsonb_typeof(i.item -> 'content') IS DISTINCT FROM 'string'
                          THEN coalesce(jsonb_typeof(i.item -> 'content'), 'nothing')
                      WHEN x.wrong IS NOT NULL THEN x.wrong
                      ELSE i.item ->> 'ttl_seconds' END AS detail
          FROM jsonb_array_elements(p_items) WITH ORDINALITY AS i(item, ord)
          CROSS JOIN LATERAL (
              SELECT string_agg(format('%I', e.key), ', ' ORDER BY e.key)
                         FILTER (WHERE NOT c_types ? e.key) AS unknown,
                     string_agg(format('%s (%s, expected %s)', e.key, jsonb_typeof(e.value),
                                       c_types ->> e.key), ', ' ORDER BY e.key)
                         FILTER (WHERE c_types ? e.key
                                   AND jsonb_typeof(e.value) NOT IN ('null', c_types ->> e.key)) AS wrong
              FROM jsonb_each(CASE WHEN jsonb_typeof(i.item) = 'object' THEN i.item
                                   ELSE '{}'::jsonb END) e) x) c
    WHERE c.problem IS NOT NULL
    ORDER BY c.ord
    LIMIT 1;
    IF chk.problem = 'type' THEN
        RAISE EXCEPTION 'item %: a memory must be a JSON object, got %', chk.ord, chk.detail
            USING ERRCODE = 'invalid_parameter_value';
    ELSIF chk.problem = 'unknown' THEN
        RAISE EXCEPTION 'item %: unknown key %', chk.ord, chk.detail
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'keys: ' || (SELECT string_agg(k, ', ' ORDER BY k) FROM jsonb_object_keys(c_types) k);
    ELSIF chk.problem = 'content' THEN
        RAISE EXCEPTION 'item %: content must be a JSON string, got %', chk.ord, chk.detail
            USING ERRCODE = 'invalid_parameter_value';
    ELSIF chk.problem = 'wrong' THEN
        RAISE EXCEPTION 'item %: wrong type for %', chk.ord, chk.detail
            USING ERRCODE = 'invalid_parameter_value';
    ELSIF chk.problem = 'ttl' THEN
        RAISE EXCEPTION 'item %: ttl_seconds must be positive, got %', chk.ord, chk.detail
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR lock_key IN
        SELECT DISTINCT memdb.write_lock_key(coalesce(x.item ->> 'tenant', 'default'),
                                             coalesce(x.item ->> 'subject', 'default'),
                                             coalesce(x.item ->> 'category', 'general')) AS k
        FROM jsonb_array_elements(p_items) AS x(item)
        ORDER BY 1
    LOOP
        PERFORM pg_advisory_xact_lock(lock_key);
    END LOOP;

    FOR r IN
        SELECT i.ord::integer AS ord, i.item, e.embedding,
               memdb.normalize_text(nullif(i.item ->> 'norm_key', '')) AS nkey,
               nullif(btrim(i.item ->> 'correction_of'), '') AS correction_of
        FROM jsonb_array_elements(p_items) WITH ORDINALITY AS i(item, ord)
        LEFT JOIN unnest(p_embeddings) WITH ORDINALITY AS e(embedding, ord) ON e.ord = i.ord
        ORDER BY i.ord
    LOOP
        cand := NULL;
        cand.id := memdb.new_memory_id();
        cand.tenant := coalesce(r.item ->> 'tenant', 'default');
        cand.subject := coalesce(r.item ->> 'subject', 'default');
        cand.agent := r.item ->> 'agent';
        cand.scope := coalesce(r.item ->> 'scope', 'user');
        cand.project_id := r.item ->> 'project_id';
        cand.session_id := r.item ->> 'session_id';
        cand.kind := coalesce(r.item ->> 'kind', 'semantic');
        cand.category := coalesce(r.item ->> 'category', 'general');
        cand.tag_version := (r.item ->> 'tag_version')::integer;
        cand.content := r.item ->> 'content';
        cand.uri := coalesce(r.item ->> 'uri', memdb.uri_for(cand.subject, cand.category, cand.id));
        cand.search_context := r.item ->> 'search_context';
        cand.content_hash := memdb.content_hash(cand.content);
        cand.norm_key := r.item ->> 'norm_key';
        cand.embedding := r.embedding;
        cand.space_id := CASE WHEN r.embedding IS NULL THEN NULL ELSE p_space_id END;
        cand.importance := coalesce((r.item ->> 'importance')::real, 0.5);
        cand.confidence := coalesce((r.item ->> 'confidence')::real, 1.0);
        cand.source_type := coalesce(r.item ->> 'source_type', 'user_statement');
        cand.source_id := r.item ->> 'source_id';
        cand.created_by := coalesce(r.item ->> 'created_by', v_actor);
        cand.metadata := coalesce(r.item -> 'metadata', '{}'::jsonb);
        cand.tags := coalesce(memdb.jtext_array(r.item -> 'tags'), '{}'::text[]);
        cand.created_at := coalesce((r.item ->> 'created_at')::timestamptz, now());
        cand.expires_at := coalesce((r.item ->> 'expires_at')::timestamptz,
                                    now() + (r.item ->> 'ttl_seconds')::double precision * interval '1 second');
        cand.status := coalesce(r.item ->> 'status', 'active');
        target := NULL; how := NULL; sim := NULL; old_ids := NULL; why := NULL;

        -- 1. an exact duplicate in the same scope: a new row of this call (not inserted yet),
        -- else a current row
        v_near := concat_ws(chr(31), quote_nullable(cand.tenant), quote_nullable(cand.subject),
                            quote_nullable(cand.scope), quote_nullable(cand.project_id),
                            quote_nullable(cand.session_id), quote_nullable(cand.category));
        v_key := concat_ws(chr(31), quote_nullable(cand.tenant), quote_nullable(cand.subject),
                           quote_nullable(cand.scope), quote_nullable(cand.project_id),
                           quote_nullable(cand.session_id), quote_nullable(cand.content_hash));
        pos := array_position(pend_key, v_key);
        IF pos IS NOT NULL THEN
            target := pend[pos].id;
        ELSE
            SELECT m.id INTO target
            FROM memdb.memories m
            WHERE m.tenant = cand.tenant AND m.subject = cand.subject AND m.scope = cand.scope
              AND m.project_id IS NOT DISTINCT FROM cand.project_id
              AND m.session_id IS NOT DISTINCT FROM cand.session_id
              AND m.content_hash = cand.content_hash AND m.valid_to IS NULL
            FOR UPDATE;
        END IF;
        IF target IS NULL AND cand.status = 'active'
           AND (r.nkey IS NOT NULL OR r.correction_of IS NOT NULL) AND cardinality(pend) > 0 THEN
            -- a slot version or a correction looks at the subject's rows: write the new ones first
            FOR fix IN SELECT * FROM memdb.insert_pending(pend, src_order) LOOP
                pos := array_position(o_id, fix.pending_id);
                o_out[pos] := 'duplicate';
                o_id := array_replace(o_id, fix.pending_id, fix.target);
            END LOOP;
            pend := '{}'; pend_key := '{}'; pend_near := '{}';
        END IF;
        IF target IS NOT NULL THEN
            how := 'duplicate';
        ELSIF cand.status = 'active' AND r.nkey IS NOT NULL THEN
            -- 2. a new version of a slot: same subject, category and normalized key
            SELECT array_agg(x.id ORDER BY x.id) INTO old_ids
            FROM (SELECT m.id FROM memdb.memories m
                  WHERE m.tenant = cand.tenant AND m.subject = cand.subject
                    AND m.category = cand.category AND m.valid_to IS NULL
                    AND m.norm_key IS NOT NULL AND memdb.normalize_text(m.norm_key) = r.nkey
                  ORDER BY m.id FOR UPDATE) x;
            why := format('superseded by a new version of %s', r.nkey);
        END IF;
        IF target IS NULL AND old_ids IS NULL AND cand.status = 'active' AND r.correction_of IS NOT NULL THEN
            -- 3. a correction: the memory holding the denied text, else the most similar
            SELECT c.id, c.sim INTO target, sim
            FROM (SELECT m.id,
                         strpos(memdb.normalize_text(m.content), memdb.normalize_text(r.correction_of)) > 0 AS holds,
                         CASE WHEN r.embedding IS NOT NULL AND m.space_id = p_space_id AND m.embedding IS NOT NULL
                              THEN 1 - (m.embedding <=> r.embedding) END AS sim
                  FROM memdb.memories m
                  WHERE m.tenant = cand.tenant AND m.subject = cand.subject
                    AND m.category = cand.category AND m.valid_to IS NULL
                    AND (m.expires_at IS NULL OR m.expires_at > now())) c
            WHERE c.holds OR c.sim >= corr_t
            ORDER BY c.holds DESC, c.sim DESC NULLS LAST, c.id
            LIMIT 1;
            IF target IS NOT NULL THEN
                PERFORM 1 FROM memdb.memories m WHERE m.tenant = cand.tenant AND m.id = target FOR UPDATE;
                old_ids := ARRAY[target];
                why := format('corrected (not %s)', r.correction_of);
                target := NULL;
            END IF;
        END IF;
        IF target IS NULL AND old_ids IS NULL AND near_t IS NOT NULL AND r.embedding IS NOT NULL THEN
            -- 4. a near duplicate in the same scope and category
            SELECT c.id, c.sim INTO target, sim
            FROM (SELECT u.* FROM (
                      (SELECT m.id, m.content, 1 - (m.embedding <=> r.embedding) AS sim
                       FROM memdb.memories m
                       WHERE m.tenant = cand.tenant AND m.subject = cand.subject
                         AND m.scope = cand.scope AND m.project_id IS NOT DISTINCT FROM cand.project_id
                         AND m.session_id IS NOT DISTINCT FROM cand.session_id
                         AND m.category = cand.category AND m.valid_to IS NULL
                         AND (m.expires_at IS NULL OR m.expires_at > now())
                         AND m.space_id = p_space_id AND m.embedding IS NOT NULL
                       ORDER BY (m.embedding <=> r.embedding) + 0, m.id  -- "+ 0": exact, not HNSW
                       LIMIT 5)
                      UNION ALL  -- and the new rows of this call not inserted yet
                      SELECT (pend[q.i]).id, (pend[q.i]).content, 1 - ((pend[q.i]).embedding <=> r.embedding)
                      FROM unnest(pend_near) WITH ORDINALITY AS q(near, i)
                      WHERE q.near = v_near
                        AND ((pend[q.i]).expires_at IS NULL OR (pend[q.i]).expires_at > now())
                        AND (pend[q.i]).space_id = p_space_id AND (pend[q.i]).embedding IS NOT NULL) u
                  ORDER BY u.sim DESC, u.id
                  LIMIT 5) c
            WHERE c.sim >= near_t AND memdb.same_words(c.content, cand.content)
            ORDER BY c.sim DESC, c.id
            LIMIT 1;
            IF target IS NOT NULL THEN
                how := 'merged';
                IF target = ANY (made) AND cardinality(pend) > 0 THEN
                    -- merging into a new row of this call: write the new rows first
                    FOR fix IN SELECT * FROM memdb.insert_pending(pend, src_order) LOOP
                        pos := array_position(o_id, fix.pending_id);
                        o_out[pos] := 'duplicate';
                        o_id := array_replace(o_id, fix.pending_id, fix.target);
                        IF target = fix.pending_id THEN
                            target := fix.target;
                        END IF;
                    END LOOP;
                    pend := '{}'; pend_key := '{}'; pend_near := '{}';
                END IF;
            END IF;
        END IF;

        IF target IS NULL AND old_ids IS NULL THEN
            -- a new row: written with the call's other new rows, in one statement
            pend := pend || cand;
            pend_key := pend_key || v_key;
            pend_near := pend_near || v_near;
            made := made || cand.id;
            o_ord := o_ord || r.ord; o_id := o_id || cand.id;
            o_out := o_out || CASE WHEN cand.status = 'hypothesis' THEN 'hypothesis' ELSE 'created' END;
            o_rel := o_rel || NULL::uuid; o_sim := o_sim || NULL::double precision; o_det := o_det || NULL::text;
            CONTINUE;
        END IF;
        IF target IS NULL THEN
            INSERT INTO memdb.memories AS m (
                id, tenant, subject, agent, scope, project_id, session_id, kind, category, uri,
                content, search_context, content_hash, norm_key, space_id, embedding, tsv,
                importance, confidence, source_type, source_id, created_by, metadata, tags,
                created_at, valid_from, expires_at, status, tag_version)
            VALUES (cand.id, cand.tenant, cand.subject, cand.agent, cand.scope, cand.project_id,
                    cand.session_id, cand.kind, cand.category, cand.uri, cand.content,
                    cand.search_context, cand.content_hash, cand.norm_key, cand.space_id,
                    cand.embedding, ''::tsvector, cand.importance, cand.confidence,
                    cand.source_type, cand.source_id, cand.created_by, cand.metadata, cand.tags,
                    cand.created_at, cand.created_at, cand.expires_at, cand.status,
                    cand.tag_version)
            ON CONFLICT (tenant, subject, scope, project_id, session_id, content_hash)
                WHERE valid_to IS NULL DO NOTHING;
            IF FOUND THEN
                IF old_ids IS NOT NULL THEN
                    PERFORM memdb.set_local('memdb.reason', concat_ws('; ', nullif(caller_reason, ''),
                                                                      why || ': ' || cand.id::text));
                    UPDATE memdb.memories m
                    SET valid_to = greatest(now(), m.valid_from), superseded_by = cand.id
                    WHERE m.tenant = cand.tenant AND m.id = ANY (old_ids);
                    PERFORM memdb.set_local('memdb.reason', caller_reason);
                    ord := r.ord; id := cand.id; outcome := 'superseded'; related_id := old_ids[1];
                    similarity := sim; detail := why;
                ELSE
                    ord := r.ord; id := cand.id;
                    outcome := CASE WHEN cand.status = 'hypothesis' THEN 'hypothesis' ELSE 'created' END;
                    related_id := NULL; similarity := NULL; detail := NULL;
                END IF;
                made := made || cand.id;
                o_ord := o_ord || ord; o_id := o_id || id; o_out := o_out || outcome;
                o_rel := o_rel || related_id; o_sim := o_sim || similarity; o_det := o_det || detail;
                CONTINUE;
            END IF;
            -- a concurrent writer (outside this subject and category's lock) got there first
            SELECT m.id INTO target
            FROM memdb.memories m
            WHERE m.tenant = cand.tenant AND m.subject = cand.subject AND m.scope = cand.scope
              AND m.project_id IS NOT DISTINCT FROM cand.project_id
              AND m.session_id IS NOT DISTINCT FROM cand.session_id
              AND m.content_hash = cand.content_hash AND m.valid_to IS NULL
            FOR UPDATE;
            how := 'duplicate'; sim := NULL;
        END IF;

        -- bump the duplicate or near duplicate (a repeat of a row this call made is not bumped)
        IF how = 'duplicate' AND target = ANY (made) THEN
            ord := r.ord; id := target; outcome := how; related_id := NULL; similarity := NULL;
            detail := NULL;
            o_ord := o_ord || ord; o_id := o_id || id; o_out := o_out || outcome;
            o_rel := o_rel || related_id; o_sim := o_sim || similarity; o_det := o_det || detail;
            CONTINUE;
        END IF;
        IF how = 'merged' THEN
            SELECT * INTO before_row FROM memdb.memories m WHERE m.tenant = cand.tenant AND m.id = target FOR UPDATE;
            why := format('merged near-duplicate (cosine %s): %s', round(sim::numeric, 4), cand.content);
            PERFORM memdb.set_local('memdb.reason', concat_ws('; ', nullif(caller_reason, ''), why));
        END IF;
        after_row := memdb.bump_memory(target, cand, src_order);
        IF how = 'merged' THEN
            PERFORM memdb.set_local('memdb.reason', caller_reason);
            IF after_row.version = before_row.version THEN
                -- only counters changed: the history trigger writes nothing, so record the merge
                INSERT INTO memdb.memory_history (memory_id, tenant, subject, op, before, after, actor, reason)
                VALUES (target, after_row.tenant, after_row.subject, 'update',
                        memdb.history_row(before_row), memdb.history_row(after_row), v_actor,
                        concat_ws('; ', nullif(caller_reason, ''), why));
            END IF;
        END IF;
        ord := r.ord; id := target; outcome := how; related_id := CASE WHEN how = 'merged' THEN target END;
        similarity := sim; detail := why;
        o_ord := o_ord || ord; o_id := o_id || id; o_out := o_out || outcome;
        o_rel := o_rel || related_id; o_sim := o_sim || similarity; o_det := o_det || detail;
    END LOOP;
    FOR fix IN SELECT * FROM memdb.insert_pending(pend, src_order) LOOP
        pos := array_position(o_id, fix.pending_id);
        o_out[pos] := 'duplicate';
        o_id := array_replace(o_id, fix.pending_id, fix.target);
    END LOOP;
    -- the space's HNSW index, once the database holds enough memories to use it
    PERFORM memdb.ensure_vector_index(p_space_id);
    RETURN QUERY
    SELECT x.ord, x.id, x.outcome, x.rel, x.sim, x.det
    FROM unnest(o_ord, o_id, o_out, o_rel, o_sim, o_det) AS x(ord, id, outcome, rel, sim, det)
    ORDER BY x.ord;
END
$$;
