-- memdb.insert_pending(p_rows memdb.memories[], p_source_order jsonb DEFAULT NULL)
--   -> TABLE(pending_id uuid, target uuid)
-- The new rows memdb.write_memories collected (checked, deduplicated among themselves and
-- against the table) written in ONE INSERT, in array order: the BEFORE ROW trigger derives
-- each row's keyword index, and the statement-level history and BM25 triggers run once for
-- the whole batch instead of once per row. A row whose dedup key a concurrent writer (one
-- outside this call's advisory locks) committed in the meantime is not inserted: that writer's
-- row is bumped instead (memdb.bump_memory), and (pending_id, target) reports the swap.
CREATE OR REPLACE FUNCTION memdb.insert_pending(p_rows memdb.memories[],
                                                p_source_order jsonb DEFAULT NULL)
RETURNS TABLE (pending_id uuid, target uuid)
LANGUAGE plpgsql
AS $$
DECLARE
    v_made uuid[];
    p memdb.memories;
BEGIN
    IF coalesce(cardinality(p_rows), 0) = 0 THEN
        RETURN;
    END IF;
    WITH ins AS (
        INSERT INTO memdb.memories AS m (
            id, tenant, subject, agent, scope, project_id, session_id, kind, category, uri,
            content, search_context, content_hash, norm_key, space_id, embedding, tsv,
            importance, confidence, source_type, source_id, created_by, metadata, tags,
            created_at, valid_from, expires_at, status, tag_version)
        SELECT x.id, x.tenant, x.subject, x.agent, x.scope, x.project_id, x.session_id, x.kind,
               x.category, x.uri, x.content, x.search_context, x.content_hash, x.norm_key,
               x.space_id, x.embedding, ''::tsvector, x.importance, x.confidence, x.source_type,
               x.source_id, x.created_by, x.metadata, x.tags, x.created_at, x.created_at,
               x.expires_at, x.status, x.tag_version
        FROM unnest(p_rows) WITH ORDINALITY AS x
        ORDER BY x.ordinality
        ON CONFLICT (tenant, subject, scope, project_id, session_id, content_hash)
            WHERE valid_to IS NULL DO NOTHING
        RETURNING m.id
    )
    SELECT array_agg(ins.id) INTO v_made FROM ins;
    IF coalesce(cardinality(v_made), 0) = cardinality(p_rows) THEN
        RETURN;
    END IF;
    FOR p IN SELECT * FROM unnest(p_rows) x WHERE x.id <> ALL (coalesce(v_made, '{}')) LOOP
        SELECT m.id INTO target
        FROM memdb.memories m
        WHERE m.tenant = p.tenant AND m.subject = p.subject AND m.scope = p.scope
          AND m.project_id IS NOT DISTINCT FROM p.project_id
          AND m.session_id IS NOT DISTINCT FROM p.session_id
          AND m.content_hash = p.content_hash AND m.valid_to IS NULL
        FOR UPDATE;
        PERFORM memdb.bump_memory(target, p, p_source_order);
        pending_id := p.id;
        RETURN NEXT;
    END LOOP;
END
$$;
