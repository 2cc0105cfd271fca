-- memdb.search_speaker_neighbors(p_tenant text, p_ids uuid[], p_scores double precision[],
--                                p_weight double precision DEFAULT 0.5, p_filter jsonb DEFAULT '{}')
--   -> TABLE(id uuid, score double precision, neighbor_of uuid)
-- Speaker neighbours (search option "speaker_neighbors"): in a conversation one speaker's next
-- line often continues what they said, while the line in between is the other party's.
-- For each hit p_ids[i] (score p_scores[i]) that is a transcript line "Name: text"
-- (memdb.speaker_of), the nearest line of the same speaker before it and the nearest after it
-- in its session (same tenant, subject and non-null session_id, by (created_at, id), looking
-- at most 10 memories each way), each scored p_scores[i] * p_weight. A memory without a
-- session_id or a speaker has no speaker neighbours. Neighbours must pass p_filter
-- (memdb.matches), as in memdb.search_neighbors; one row per (hit, neighbour).
-- Runs as the caller (row-level security applies); each look is one short descent of
-- memories_stream_idx (tenant, subject, coalesce(session_id, ''), created_at, id); with no
-- filter or subjects only, a static statement (its plan kept), else a one-shot plan.
-- Example: SELECT n.* FROM memdb.memories m,
--            memdb.search_speaker_neighbors('default', ARRAY[m.id], ARRAY[1.0], 0.4, '{}') n
--          WHERE m.source_id = 'D1:3';
CREATE OR REPLACE FUNCTION memdb.search_speaker_neighbors(p_tenant text, p_ids uuid[],
                                                          p_scores double precision[],
                                                          p_weight double precision DEFAULT 0.5,
                                                          p_filter jsonb DEFAULT '{}')
RETURNS TABLE (id uuid, score double precision, neighbor_of uuid)
LANGUAGE plpgsql STABLE
ROWS 20
AS $$
DECLARE
    f jsonb := coalesce(p_filter, '{}'::jsonb);
    v_subjects text[];
BEGIN
    IF p_ids IS NULL OR cardinality(p_ids) = 0 THEN
        RETURN;
    END IF;
    PERFORM memdb.check_filter(f);
    IF f - 'subject' = '{}'::jsonb THEN
        -- the filters searches use most (none, subjects only): a static statement, whose plan
        -- is kept, as in memdb.search_neighbors (the neighbours' subject is the hit's)
        v_subjects := CASE jsonb_typeof(f -> 'subject') WHEN 'string' THEN ARRAY[f ->> 'subject']
                      ELSE memdb.jtext_array(f -> 'subject') END;  -- NULL: no subject
        RETURN QUERY
        SELECT n.id, h.score * coalesce(p_weight, 0.5), h.id
        FROM unnest(p_ids, p_scores) AS h(id, score)
        -- each hit's row by its key (OFFSET 0 keeps the lookup per hit)
        CROSS JOIN LATERAL (SELECT m.subject, m.session_id, m.created_at, m.id,
                                   memdb.speaker_of(m.content) AS who
                            FROM memdb.memories m
                            WHERE m.tenant = p_tenant AND m.id = h.id AND m.session_id IS NOT NULL
                            OFFSET 0) m
        CROSS JOIN LATERAL (
            (SELECT b.id
             FROM (SELECT b.id, b.content, b.created_at
                   FROM memdb.memories b
                   WHERE b.tenant = p_tenant AND b.subject = m.subject
                     AND coalesce(b.session_id, '') = m.session_id AND b.session_id IS NOT NULL
                     AND (b.created_at, b.id) < (m.created_at, m.id)
                     AND (v_subjects IS NULL OR b.subject = ANY (v_subjects))
                     AND b.valid_to IS NULL AND (b.expires_at IS NULL OR b.expires_at > now())
                   ORDER BY b.created_at DESC, b.id DESC
                   LIMIT 10) b
             WHERE memdb.speaker_of(b.content) = m.who
             ORDER BY b.created_at DESC, b.id DESC
             LIMIT 1)
            UNION ALL
            (SELECT a.id
             FROM (SELECT a.id, a.content, a.created_at
                   FROM memdb.memories a
                   WHERE a.tenant = p_tenant AND a.subject = m.subject
                     AND coalesce(a.session_id, '') = m.session_id AND a.session_id IS NOT NULL
                     AND (a.created_at, a.id) > (m.created_at, m.id)
                     AND (v_subjects IS NULL OR a.subject = ANY (v_subjects))
                     AND a.valid_to IS NULL AND (a.expires_at IS NULL OR a.expires_at > now())
                   ORDER BY a.created_at, a.id
                   LIMIT 10) a
             WHERE memdb.speaker_of(a.content) = m.who
             ORDER BY a.created_at, a.id
             LIMIT 1)
        ) n
        WHERE h.id IS NOT NULL AND h.score IS NOT NULL AND m.who IS NOT NULL;
        RETURN;
    END IF;
    -- any other filter: a one-shot plan (EXECUTE), memdb.matches folded for the filter
    RETURN QUERY EXECUTE $q$
        SELECT n.id, h.score * $4, h.id
        FROM unnest($2::uuid[], $3::double precision[]) AS h(id, score)
        JOIN memdb.memories m ON m.tenant = $1 AND m.id = h.id AND m.session_id IS NOT NULL
        CROSS JOIN LATERAL (SELECT memdb.speaker_of(m.content) AS who) s
        CROSS JOIN LATERAL (
            (SELECT b.id
             FROM (SELECT b.id, b.content, b.created_at
                   FROM memdb.memories b
                   WHERE b.tenant = $1 AND b.subject = m.subject
                     AND coalesce(b.session_id, '') = m.session_id AND b.session_id IS NOT NULL
                     AND (b.created_at, b.id) < (m.created_at, m.id)
                     AND memdb.matches(b, $5)
                   ORDER BY b.created_at DESC, b.id DESC
                   LIMIT 10) b
             WHERE memdb.speaker_of(b.content) = s.who
             ORDER BY b.created_at DESC, b.id DESC
             LIMIT 1)
            UNION ALL
            (SELECT a.id
             FROM (SELECT a.id, a.content, a.created_at
                   FROM memdb.memories a
                   WHERE a.tenant = $1 AND a.subject = m.subject
                     AND coalesce(a.session_id, '') = m.session_id AND a.session_id IS NOT NULL
                     AND (a.created_at, a.id) > (m.created_at, m.id)
                     AND memdb.matches(a, $5)
                   ORDER BY a.created_at, a.id
                   LIMIT 10) a
             WHERE memdb.speaker_of(a.content) = s.who
             ORDER BY a.created_at, a.id
             LIMIT 1)
        ) n
        WHERE h.id IS NOT NULL AND h.score IS NOT NULL AND s.who IS NOT NULL
    $q$
    USING p_tenant, p_ids, p_scores, coalesce(p_weight, 0.5), f;
END
$$;
