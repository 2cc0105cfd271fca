-- memdb.forget_subject(p_tenant text, p_subject text, p_dry_run boolean DEFAULT false) -> jsonb
-- Erasure: deletes everything about one subject of a tenant, in the caller's transaction:
-- its memories (every version, expired ones too), and from every table of
-- memdb.subject_tables() the rows of the subject or about its memories (history rows that hold
-- their text, usage counts, review-queue entries, sediment runs, and later tables such as
-- traces as they are added; also the retrieval traces of other searches that returned the
-- subject's memories, through memdb.erase_traces). The BM25 triggers decrement the tenant's statistics; terms whose
-- document frequency falls to 0 are then deleted, so none of the subject's lexemes remain as
-- evidence. The history rows the deletion itself writes are deleted too: afterwards no query,
-- history or statistic holds the subject's text. No erasure record naming the subject is kept
-- (keep one outside memdb if you need it). Other subjects' rows are untouched.
-- Returns counts per table ({"memories": n, "memory_history": n, ..., "bm25_terms": n});
-- with p_dry_run the counts it would delete, nothing changed.
-- SECURITY DEFINER (fixed search_path, names qualified): erasure is the one way history rows
-- and BM25 terms are deleted, and the application role may delete neither directly (revision
-- 0010). It confines its caller as the policies would (memdb.confine): a confined caller
-- (memdb_app) may erase a subject of its own tenant (memdb.tenant), and only its own subject
-- when memdb.subject is set; every row it deletes or counts is of that tenant (and of that
-- subject when memdb.subject is set), so it reaches exactly the rows row-level security would
-- let the caller delete. Out of scope (another tenant or subject, or no tenant set) it sees no
-- rows: every count is 0 and nothing changes.
CREATE OR REPLACE FUNCTION memdb.forget_subject(p_tenant text, p_subject text,
                                                p_dry_run boolean DEFAULT false)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    prev_reason text := current_setting('memdb.reason', true);
    v_ids uuid[];
    v_terms text[];
    v_docs bigint[];
    v_counts jsonb;
    v_cond text;
    -- how row-level security would confine the caller: 'tenant' (memdb.tenant only), 'subject'
    -- (memdb.tenant and memdb.subject), NULL (the admin: not confined)
    v_scope text;
    n bigint;
    t record;
BEGIN
    IF p_tenant IS NULL OR p_subject IS NULL THEN
        RAISE EXCEPTION 'forget_subject needs a tenant and a subject' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF memdb.confine(p_tenant, pg_catalog.jsonb_build_object('subject', p_subject)) IS NULL THEN
        -- out of the caller's scope: nothing of that subject is visible to it
        SELECT pg_catalog.jsonb_object_agg(x.name, 0) INTO v_counts
        FROM (SELECT s.table_name AS name FROM memdb.subject_tables() s
              UNION SELECT unnest(ARRAY['memories', 'retrieval_traces', 'bm25_terms'])) x;
        RETURN v_counts;
    END IF;
    IF memdb.confine(NULL, NULL) IS NULL THEN  -- confined: no tenant is NULL's tenant
        v_scope := CASE WHEN memdb.confine(p_tenant, '{}'::jsonb) = '{}'::jsonb THEN 'tenant'
                        ELSE 'subject' END;  -- confine added memdb.subject to the filter
    END IF;
    -- lock the subject's rows first (in id order), so a concurrent update waits for the erasure
    SELECT coalesce(array_agg(l.id), '{}') INTO v_ids
    FROM (SELECT m.id FROM memdb.memories m
          WHERE m.tenant = p_tenant AND m.subject = p_subject
          ORDER BY m.id FOR UPDATE) l;
    -- the subject's lexemes among current memories (the ones counted in bm25_terms), with
    -- how many of its documents hold each
    SELECT coalesce(array_agg(d.term ORDER BY d.term), '{}'), coalesce(array_agg(d.docs ORDER BY d.term), '{}')
      INTO v_terms, v_docs
      FROM (SELECT u.lexeme AS term, count(*) AS docs
            FROM memdb.memories m CROSS JOIN LATERAL unnest(m.tsv) u
            WHERE m.tenant = p_tenant AND m.subject = p_subject AND m.valid_to IS NULL
            GROUP BY u.lexeme) d;
    v_counts := jsonb_build_object('memories', cardinality(v_ids));
    FOR t IN SELECT * FROM memdb.subject_tables() LOOP
        -- every such table has the tenant, and a row referring to the memories is the same
        -- tenant's (its foreign key includes it): one tenant's rows, one shard on Citus
        v_cond := format('x.tenant = $1 AND (%s)', concat_ws(' OR ',
                            CASE WHEN t.has_subject THEN 'x.subject = $2' END,
                            CASE WHEN t.has_memory_id THEN 'x.memory_id = ANY ($3)' END));
        -- a confined caller reaches only the rows row-level security would let it touch
        IF v_scope = 'tenant' AND t.has_subject THEN
            v_cond := format('(%s) AND x.tenant = $1', v_cond);
        ELSIF v_scope = 'subject' AND t.has_subject THEN
            v_cond := format('(%s) AND x.tenant = $1 AND x.subject = $2', v_cond);
        END IF;
        IF p_dry_run THEN
            EXECUTE format('SELECT count(*) FROM memdb.%I x WHERE %s', t.table_name, v_cond)
              INTO n USING p_tenant, p_subject, v_ids;
        ELSE
            EXECUTE format('DELETE FROM memdb.%I x WHERE %s', t.table_name, v_cond)
              USING p_tenant, p_subject, v_ids;
            GET DIAGNOSTICS n = ROW_COUNT;
        END IF;
        v_counts := v_counts || jsonb_build_object(t.table_name, n);
    END LOOP;
    -- traces of other searches (tenant-wide ones are stored with subject '*') that returned
    -- the subject's memories
    IF v_scope = 'subject' THEN
        n := 0;  -- other subjects' traces are out of a subject-confined caller's reach
    ELSIF p_dry_run THEN
        SELECT count(*) INTO n FROM memdb.retrieval_traces x
        WHERE x.tenant = p_tenant AND x.subject <> p_subject
          AND x.result_subjects @> ARRAY[p_subject];
    ELSE
        n := memdb.erase_traces(p_tenant, p_subject);
    END IF;
    v_counts := jsonb_set(v_counts, '{retrieval_traces}',
                          to_jsonb(coalesce((v_counts ->> 'retrieval_traces')::bigint, 0) + n));
    IF p_dry_run THEN
        SELECT count(*) INTO n
        FROM memdb.bm25_terms b JOIN unnest(v_terms, v_docs) AS f(term, docs) ON f.term = b.term
        WHERE b.tenant = p_tenant AND b.df - f.docs <= 0;
        RETURN v_counts || jsonb_build_object('bm25_terms', n);
    END IF;
    PERFORM memdb.set_local('memdb.reason', 'forget_subject');
    DELETE FROM memdb.memories m WHERE m.tenant = p_tenant AND m.subject = p_subject;
    PERFORM memdb.set_local('memdb.reason', coalesce(prev_reason, ''));
    -- rows the deletion itself made (the history trigger's 'delete' rows hold the text too)
    FOR t IN SELECT * FROM memdb.subject_tables() s WHERE s.has_subject LOOP
        EXECUTE format('DELETE FROM memdb.%I x WHERE x.tenant = $1 AND x.subject = $2', t.table_name)
          USING p_tenant, p_subject;
    END LOOP;
    DELETE FROM memdb.bm25_terms b
    WHERE b.tenant = p_tenant AND b.term = ANY (v_terms) AND b.df <= 0;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN v_counts || jsonb_build_object('bm25_terms', n);
END
$$;
