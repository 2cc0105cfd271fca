-- memdb.search_neighbors(p_tenant text, p_ids uuid[], p_scores double precision[],
--                        p_window integer DEFAULT 1, p_weight double precision DEFAULT 0.5,
--                        p_filter jsonb DEFAULT '{}')
--   -> TABLE(id uuid, score double precision, neighbor_of uuid, distance integer)
-- Neighbour expansion (search option "neighbors"): a conversation turn rarely stands alone.
-- For each hit p_ids[i] (with score p_scores[i]) the p_window memories before it and the
-- p_window after it in its session: the same tenant and subject and the same non-null
-- session_id, ordered by (created_at, id); memories written in one batch share created_at,
-- so give them created_at in turn order if their order matters. A memory without a session_id
-- has no neighbours and is nobody's neighbour: memories written one after the other outside
-- a conversation (notes, facts, rules) are not one stream and lend each other nothing. A neighbour at distance d
-- (1 = adjacent) gets score p_scores[i] * p_weight ^ d. Neighbours must pass p_filter
-- (memdb.matches: scope, kind, as_of, ...), so expansion never leaves the search's filter; a
-- neighbour skipped by the filter is stepped over. One row per (hit, neighbour); a hit may
-- also be another hit's neighbour (memdb.search_hybrid keeps the higher score).
-- A window above 10 raises invalid_parameter_value; below 1, no rows.
-- Runs as the caller (row-level security applies); each neighbour is one short descent of
-- memories_stream_idx (tenant, subject, coalesce(session_id, ''), created_at, id), on the
-- tenant's shard on Citus (the index also holds the session-less memories under ''; the
-- lookup reads only a hit's own non-null session_id, and "b.session_id IS NOT NULL" keeps
-- the session-less ones out should a session_id be the empty string).
-- Example: SELECT n.* FROM memdb.memories m,
--            memdb.search_neighbors('default', ARRAY[m.id], ARRAY[1.0], 1, 0.5, '{}') n
--          WHERE m.source_id = 'D1:3';
CREATE OR REPLACE FUNCTION memdb.search_neighbors(p_tenant text, p_ids uuid[], p_scores double precision[],
                                                  p_window integer DEFAULT 1,
                                                  p_weight double precision DEFAULT 0.5,
                                                  p_filter jsonb DEFAULT '{}')
RETURNS TABLE (id uuid, score double precision, neighbor_of uuid, distance integer)
LANGUAGE plpgsql STABLE
ROWS 20
AS $$
DECLARE
    f jsonb := coalesce(p_filter, '{}'::jsonb);
    v_subjects text[];
BEGIN
    IF p_window IS NULL OR p_window < 1 OR p_ids IS NULL THEN
        RETURN;
    END IF;
    IF p_window > 10 THEN
        RAISE EXCEPTION 'the neighbour window must be at most 10, got %', p_window
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM memdb.check_filter(f);
    IF cardinality(p_ids) = 0 THEN
        RETURN;  -- no hits, no neighbours
    END IF;
    IF f - 'subject' = '{}'::jsonb THEN
        -- the filters searches use most (none, subjects only): a static statement, whose plan
        -- is kept (the neighbours' subject is the hit's: the filter only checks it)
        v_subjects := CASE jsonb_typeof(f -> 'subject') WHEN 'string' THEN ARRAY[f ->> 'subject']
                      ELSE memdb.jtext_array(f -> 'subject') END;  -- NULL: no subject
        RETURN QUERY
        SELECT n.id, h.score * power(coalesce(p_weight, 0.5), n.distance), h.id, n.distance::integer
        FROM unnest(p_ids, p_scores) AS h(id, score)
        -- each hit's row by its key (OFFSET 0 keeps the lookup per hit: the generic plan does
        -- not know how many hits there are, and could hash a scan of the tenant's sessions)
        CROSS JOIN LATERAL (SELECT m.subject, m.session_id, m.created_at, m.id FROM memdb.memories m
                            WHERE m.tenant = p_tenant AND m.id = h.id AND m.session_id IS NOT NULL
                            OFFSET 0) m
        CROSS JOIN LATERAL (
            (SELECT b.id, row_number() OVER (ORDER BY b.created_at DESC, b.id DESC) AS distance
             FROM memdb.memories b
             WHERE b.tenant = p_tenant AND b.subject = m.subject
               AND coalesce(b.session_id, '') = m.session_id AND b.session_id IS NOT NULL
               AND (b.created_at, b.id) < (m.created_at, m.id)
               AND (v_subjects IS NULL OR b.subject = ANY (v_subjects))
               AND b.valid_to IS NULL AND (b.expires_at IS NULL OR b.expires_at > now())
             ORDER BY b.created_at DESC, b.id DESC
             LIMIT p_window)
            UNION ALL
            (SELECT a.id, row_number() OVER (ORDER BY a.created_at, a.id) AS distance
             FROM memdb.memories a
             WHERE a.tenant = p_tenant AND a.subject = m.subject
               AND coalesce(a.session_id, '') = m.session_id AND a.session_id IS NOT NULL
               AND (a.created_at, a.id) > (m.created_at, m.id)
               AND (v_subjects IS NULL OR a.subject = ANY (v_subjects))
               AND a.valid_to IS NULL AND (a.expires_at IS NULL OR a.expires_at > now())
             ORDER BY a.created_at, a.id
             LIMIT p_window)
        ) n
        WHERE h.id IS NOT NULL AND h.score IS NOT NULL;
        RETURN;
    END IF;
    -- any other filter: a one-shot plan (EXECUTE): the filter is known when planning, so
    -- memdb.matches folds away the absent keys instead of checking the filter again on every row
    RETURN QUERY EXECUTE $q$
        SELECT n.id, h.score * power($5, n.distance), h.id, n.distance::integer
        FROM unnest($2::uuid[], $3::double precision[]) AS h(id, score)
        JOIN memdb.memories m ON m.tenant = $1 AND m.id = h.id AND m.session_id IS NOT NULL
        CROSS JOIN LATERAL (
            (SELECT b.id, row_number() OVER (ORDER BY b.created_at DESC, b.id DESC) AS distance
             FROM memdb.memories b
             WHERE b.tenant = $1 AND b.subject = m.subject
               AND coalesce(b.session_id, '') = m.session_id AND b.session_id IS NOT NULL
               AND (b.created_at, b.id) < (m.created_at, m.id)
               AND memdb.matches(b, $6)
             ORDER BY b.created_at DESC, b.id DESC
             LIMIT $4)
            UNION ALL
            (SELECT a.id, row_number() OVER (ORDER BY a.created_at, a.id) AS distance
             FROM memdb.memories a
             WHERE a.tenant = $1 AND a.subject = m.subject
               AND coalesce(a.session_id, '') = m.session_id AND a.session_id IS NOT NULL
               AND (a.created_at, a.id) > (m.created_at, m.id)
               AND memdb.matches(a, $6)
             ORDER BY a.created_at, a.id
             LIMIT $4)
        ) n
        WHERE h.id IS NOT NULL AND h.score IS NOT NULL
    $q$
    USING p_tenant, p_ids, p_scores, p_window, coalesce(p_weight, 0.5), coalesce(p_filter, '{}'::jsonb);
END
$$;
