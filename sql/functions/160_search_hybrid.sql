-- memdb.search_hybrid(p_tenant text, p_query text, p_embedding vector DEFAULT NULL,
--                     p_k integer DEFAULT 10, p_filter jsonb DEFAULT '{}', p_options jsonb DEFAULT '{}',
--                     p_keyword_routes jsonb DEFAULT NULL)
--   -> TABLE(id uuid, rank integer, score double precision, fused double precision,
--            multiplier double precision, vector_rank integer, vector_score double precision,
--            bm25_rank integer, bm25_score double precision, exact_rank integer,
--            exact_score double precision, mmr_score double precision)
-- One search over every route, fused, explained:
--   1. each route returns its own top `depth` candidates inside p_filter (memdb.check_filter;
--      depth: memdb.search_depth): vector (memdb.search_vector, needs p_embedding), bm25
--      (memdb.search_bm25), exact (memdb.search_exact) - the keyword routes through
--      memdb.keyword_route_rows, or taken from p_keyword_routes: what
--      memdb.search_keyword_routes returned for the same tenant, query, k, filter and options,
--      run ahead while the query was being embedded (refused, 22023, for other arguments);
--   2. weighted Reciprocal Rank Fusion: fused = sum over routes of weight / (rrf_k + rank);
--   3. score = fused * multiplier, multiplier = memdb.score_multiplier(...) (decay, hotness
--      from memdb.mark_used counts of the filter's subject - or the memory's own -, importance;
--      all weights 0 by default; never applied to category 'system');
--   3b. the system boost (option system_boost, default 1; 0 turns it off): an active memory of
--      category 'system' (a rule) scores up to (1 + system_boost) times as much, but never
--      more than any candidate that beats it: a raw score at least as high on every fused
--      route (weight > 0; a route that missed a memory scores it lowest) and higher on one;
--      and never less than without the boost. It is placed after the candidates that beat it.
--      So the boost decides mixed evidence (a rule better on one route, a memory on another)
--      and ties in the rule's favour, and a rule that only shares a character or a name with
--      the query cannot pass the memories that match it better on every route.
--      multiplier = score / fused, the boost included;
--   3c. with neighbors set (off here by default; 1 at weight 0.4 in memdb.retrieval.search.DEFAULT_OPTIONS),
--      the top candidates' session neighbours (the same non-null session_id; a memory without
--      one has none) join the candidates with score neighbor_weight ^ distance times the hit's
--      (memdb.search_neighbors; a candidate keeps the higher of its own and a lent score; route
--      columns NULL for a neighbour no route found);
--   3d. with temporal set (a weight; off here, 1 in DEFAULT_OPTIONS), the multiplier also holds
--      memdb.temporal_boost: a memory whose content carries a time scores (1 + temporal) times
--      as much when the query asks about time (memdb.temporal_intent), and (1 + temporal) more
--      when the query names a time (memdb.time_range against as_of or now()) that the memory's
--      event time (its content's time resolved against its valid_from, else its valid_from)
--      overlaps; the memory's side is read from its stored columns event_time and names_time
--      (set at write time by memdb.memories_before_write), so no candidate's text is resolved
--      here (applied only to the candidates that can reach the top: see CTE b);
--   3e. with speaker_boost set (a weight, off by default), a memory written as a transcript
--      line "Name: text" whose speaker (memdb.speaker_of) the query names (one of
--      memdb.entity_candidates(p_query): a whole word, a CJK substring) scores
--      (1 + speaker_boost) times as much (in the multiplier, after the system boost; speaker_of
--      runs once per distinct line prefix): "What books has Melanie read?"
--      prefers what Melanie said, whose name BM25 drops as too common (candidate_df_ratio);
--   3f. with session_prior set (a weight w, off by default), the session prior: a candidate in
--      a session (its subject and non-null session_id) that holds much of the candidates'
--      evidence scores (1 + w * share) times as much (in the multiplier, after the speaker
--      match, before neighbour expansion), share = the summed fused score of the candidates
--      in its session / the summed fused score of all candidates (every route's top depth,
--      session-less ones included; CTE ss): a turn among many strong turns of one
--      conversation session is more likely on topic than a lone match elsewhere. A memory
--      without a session_id gets no prior (CTEs ss, bp);
--   3g. with speaker_neighbors set (a weight w in [0, 1], off by default), the top candidates
--      that are transcript lines "Name: text" in a session also lend w times their score to
--      the nearest line of the same speaker before and after them in that session
--      (memdb.search_speaker_neighbors; CTEs slend, nb), as neighbour expansion lends;
--   4. with mmr_lambda set, memdb.mmr re-picks k of the top mmr_candidates for diversity.
-- With prf set (off by default), the BM25 route runs the query expanded by pseudo-relevance
-- feedback (memdb.prf_terms, memdb.search_bm25_weighted) instead of p_query.
-- A blank p_query returns no rows. A query with no keyword terms (only stop words,
-- punctuation or emoji) still runs the vector and exact routes (BM25 finds nothing);
-- pass p_query NULL to search by p_embedding alone.
-- Each row carries every route's rank and raw score (NULL where the route missed it).
-- Options: see memdb.check_search_options.
-- Example: SELECT * FROM memdb.search_hybrid('default', 'React 开发', NULL, 5, '{"subject":"lisi"}', '{"routes":["bm25","exact"]}');
CREATE OR REPLACE FUNCTION memdb.search_hybrid(p_tenant text, p_query text, p_embedding vector DEFAULT NULL,
                                               p_k integer DEFAULT 10, p_filter jsonb DEFAULT '{}',
                                               p_options jsonb DEFAULT '{}',
                                               p_keyword_routes jsonb DEFAULT NULL)
RETURNS TABLE (id uuid, rank integer, score double precision, fused double precision,
               multiplier double precision, vector_rank integer, vector_score double precision,
               bm25_rank integer, bm25_score double precision, exact_rank integer,
               exact_score double precision, mmr_score double precision)
LANGUAGE plpgsql STABLE
ROWS 10
AS $$
DECLARE
    o jsonb := coalesce(p_options, '{}'::jsonb);
    f jsonb := coalesce(p_filter, '{}'::jsonb);
    routes jsonb;
    use_vector boolean;
    use_bm25 boolean;
    use_exact boolean;
    depth integer;
    rrf_k double precision := coalesce((o ->> 'rrf_k')::double precision, 60);
    w_vector double precision := coalesce((o #>> '{weights,vector}')::double precision, 1);
    w_bm25 double precision := coalesce((o #>> '{weights,bm25}')::double precision, 1);
    w_exact double precision := coalesce((o #>> '{weights,exact}')::double precision, 1);
    use_mmr boolean := o ? 'mmr_lambda';
    system_boost double precision := coalesce((o ->> 'system_boost')::double precision, 1);
    pool integer;
    v_now timestamptz;
    usage_subject text;
    use_age boolean;  -- a decay or hotness weight: the memory's age matters
    use_mult boolean;  -- a decay, hotness or importance weight: memdb.score_multiplier is not 1
    use_hot boolean;  -- a hotness weight: the multiplier reads the use count
    found_rows jsonb;
    use_prf boolean;
    prf_t text[];
    prf_w double precision[];
    n_window integer;
    temporal_w double precision;
    t_intent boolean := false;
    t_range tstzrange;
    speaker_w double precision;
    q_names text[];
    session_w double precision;
    speaker_nw double precision;
BEGIN
    IF p_k IS NULL OR p_k < 1 OR p_k > 1000 THEN
        RAISE EXCEPTION 'k must be between 1 and 1000, got %', p_k USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM memdb.check_filter(f);
    PERFORM memdb.check_search_options(o);
    IF p_keyword_routes IS NOT NULL
       AND (jsonb_typeof(p_keyword_routes -> 'rows') IS DISTINCT FROM 'array'
            OR p_keyword_routes ->> 'for' IS DISTINCT FROM memdb.keyword_routes_key(p_tenant, p_query, p_k, f, o)) THEN
        RAISE EXCEPTION 'p_keyword_routes were not computed by memdb.search_keyword_routes for this tenant, query, k, filter and options'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_query IS NOT NULL AND p_query !~ '[^[:space:]]' THEN
        RETURN;  -- a blank query: nothing to look for
    END IF;
    routes := coalesce(o -> 'routes', '["vector", "bm25", "exact"]'::jsonb);
    IF routes ? 'vector' AND p_embedding IS NULL AND o ? 'routes' THEN
        RAISE EXCEPTION 'the vector route needs a query embedding' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    use_vector := routes ? 'vector' AND p_embedding IS NOT NULL;
    use_bm25 := routes ? 'bm25';
    use_exact := routes ? 'exact';
    use_prf := coalesce((o ->> 'prf')::integer, 0) > 0 AND use_bm25;
    IF use_prf AND p_keyword_routes IS NULL THEN
        SELECT array_agg(t.term), array_agg(t.weight) INTO prf_t, prf_w
        FROM memdb.prf_terms(p_tenant, p_query, f, o) t;
    END IF;
    n_window := coalesce((o ->> 'neighbors')::integer, 0);
    pool := CASE WHEN use_mmr THEN coalesce((o ->> 'mmr_candidates')::integer, greatest(30, 3 * p_k))
                 ELSE p_k END;
    depth := memdb.search_depth(p_k, o);
    v_now := coalesce((f ->> 'as_of')::timestamptz, now());
    temporal_w := coalesce((o ->> 'temporal')::double precision, 0);
    IF temporal_w > 0 AND p_query IS NOT NULL THEN
        t_intent := memdb.temporal_intent(p_query);
        t_range := memdb.time_range(p_query, v_now);
        IF NOT t_intent AND t_range IS NULL THEN
            temporal_w := 0;  -- nothing temporal asked: no factor to compute
        END IF;
    END IF;
    speaker_w := coalesce((o ->> 'speaker_boost')::double precision, 0);
    session_w := coalesce((o ->> 'session_prior')::double precision, 0);
    speaker_nw := coalesce((o ->> 'speaker_neighbors')::double precision, 0);
    IF speaker_w > 0 THEN
        q_names := memdb.entity_candidates(p_query);  -- NULL for a NULL query: no speaker named
    END IF;
    use_age := coalesce((o ->> 'decay_weight')::double precision, 0) <> 0
               OR coalesce((o ->> 'hotness_weight')::double precision, 0) <> 0;
    use_mult := use_age OR coalesce((o ->> 'importance_weight')::double precision, 0) <> 0;
    use_hot := coalesce((o ->> 'hotness_weight')::double precision, 0) <> 0;
    usage_subject := CASE jsonb_typeof(f -> 'subject')
                         WHEN 'string' THEN f ->> 'subject'
                         WHEN 'array' THEN CASE WHEN jsonb_array_length(f -> 'subject') = 1 THEN f #>> '{subject,0}' END
                     END;

    IF NOT EXISTS (SELECT 1 FROM memdb.memories m WHERE m.tenant = p_tenant) THEN
        RETURN;  -- a tenant without memories finds nothing (its query needs no embedding space yet)
    END IF;
    WITH fu AS (
        SELECT r.id,
               sum(CASE r.route WHEN 'vector' THEN w_vector WHEN 'bm25' THEN w_bm25 ELSE w_exact END
                   / (rrf_k + r.rnk)) AS fused,
               max(r.rnk) FILTER (WHERE r.route = 'vector')::integer AS vector_rank,
               max(r.raw) FILTER (WHERE r.route = 'vector') AS vector_score,
               max(r.rnk) FILTER (WHERE r.route = 'bm25')::integer AS bm25_rank,
               max(r.raw) FILTER (WHERE r.route = 'bm25') AS bm25_score,
               max(r.rnk) FILTER (WHERE r.route = 'exact')::integer AS exact_rank,
               max(r.raw) FILTER (WHERE r.route = 'exact') AS exact_score
        FROM (
            SELECT 'vector' AS route, x.id, x.score AS raw,
                   row_number() OVER (ORDER BY x.distance, x.id) AS rnk
            FROM memdb.search_vector(p_tenant, p_embedding, depth, f,
                                     (o ->> 'space_id')::integer,
                                     coalesce((o ->> 'exact_limit')::integer, 10000)) x
            WHERE use_vector
            UNION ALL
            SELECT x.route, x.id, x.raw, x.rnk
            FROM memdb.keyword_route_rows(p_tenant, p_query, depth, f, o, use_bm25, use_prf,
                                          use_exact, prf_t, prf_w) x
            WHERE p_keyword_routes IS NULL
            UNION ALL
            SELECT x.route, x.id, x.raw, x.rnk
            FROM jsonb_to_recordset(p_keyword_routes -> 'rows')
                 AS x(route text, id uuid, raw double precision, rnk bigint)
            WHERE p_keyword_routes IS NOT NULL
        ) r
        GROUP BY r.id
    ), b0 AS (
        -- base: fused * multiplier; lifted: base with the system boost of an active rule;
        -- sv, sb, se: the route scores with a miss as the lowest score
        SELECT fu.*, m.event_time, m.names_time, m.valid_from, m.subject, m.session_id,
               fu.fused * mu.mult AS base, mu.mult, mu.is_rule,
               fu.fused * mu.mult * CASE WHEN mu.is_rule THEN 1 + system_boost ELSE 1 END AS lifted,
               coalesce(fu.vector_score, '-Infinity') AS sv, coalesce(fu.bm25_score, '-Infinity') AS sb,
               coalesce(fu.exact_score, '-Infinity') AS se
        FROM fu
        -- each candidate's row by its key (OFFSET 0 keeps the lookup per candidate: the generic
        -- plan otherwise hashes a scan of the whole table when it is small)
        CROSS JOIN LATERAL (SELECT m.subject, m.session_id, m.category, m.importance, m.created_at,
                                   m.status, m.valid_from, m.event_time, m.names_time
                            FROM memdb.memories m WHERE m.tenant = p_tenant AND m.id = fu.id OFFSET 0) m
        -- its use count, looked up per candidate and only under the hotness weight, the one
        -- that reads it (as a join, the generic plan merged the tenant's whole usage table into
        -- every search: 2.6 -> 18 ms for 90,000 usage rows)
        LEFT JOIN LATERAL (SELECT u.use_count FROM memdb.memory_usage u
                           WHERE use_hot AND u.tenant = p_tenant AND u.memory_id = fu.id
                             AND u.subject = coalesce(usage_subject, m.subject) OFFSET 0) u ON true
        CROSS JOIN LATERAL (
            -- with no weight memdb.score_multiplier is exactly 1 (and reads six options per
            -- candidate to find out)
            SELECT CASE WHEN use_mult
                        THEN memdb.score_multiplier(m.category, m.importance, u.use_count,
                                                    CASE WHEN use_age THEN extract(epoch FROM v_now - m.created_at) / 86400.0 END,
                                                    o)
                        ELSE 1.0::double precision END AS mult,
                   (m.category = 'system' AND m.status = 'active') AS is_rule
        ) mu
    ), ss AS (
        -- the session prior (step 3f): each session's share of the candidates' summed fused
        -- score, and its factor 1 + session_w * share (1 for a memory without a session)
        SELECT b0.subject, b0.session_id,
               1 + session_w * sum(b0.fused) / nullif((SELECT sum(x.fused) FROM b0 x), 0) AS prior
        FROM b0
        WHERE session_w > 0 AND b0.session_id IS NOT NULL
        GROUP BY b0.subject, b0.session_id
    ), bp AS (
        SELECT b0.*, coalesce(ss.prior, 1) AS prior
        FROM b0 LEFT JOIN ss ON ss.subject = b0.subject AND ss.session_id = b0.session_id
    ), b AS (
        -- the temporal factor (at most t_max) only where it can matter: a candidate whose
        -- lifted score times t_max, the speaker factor's most and its session prior stays
        -- below the pool-th base * prior stays out of the pool anyway (every factor is >= 1),
        -- so it keeps the factor 1
        SELECT bp.id, bp.fused, bp.vector_rank, bp.vector_score, bp.bm25_rank, bp.bm25_score,
               bp.exact_rank, bp.exact_score, bp.base * tb.f AS base, bp.mult * tb.f AS mult,
               bp.is_rule, bp.lifted * tb.f AS lifted, bp.sv, bp.sb, bp.se, bp.prior
        FROM bp
        CROSS JOIN LATERAL (
            SELECT CASE WHEN temporal_w > 0
                             AND bp.lifted * (1 + temporal_w * (t_intent::integer + (t_range IS NOT NULL)::integer))
                                 * (1 + speaker_w) * bp.prior
                                 >= coalesce((SELECT x.base * x.prior FROM bp x
                                              ORDER BY x.base * x.prior DESC OFFSET pool - 1 LIMIT 1), 0)
                        THEN memdb.temporal_boost(bp.event_time, bp.names_time, bp.valid_from,
                                                  t_intent, t_range, temporal_w)
                        ELSE 1 END AS f
        ) tb
    ), beaten AS (
        -- a boosted rule stays below every candidate that beats it (a raw score at least as
        -- high on every fused route, higher on one; a missing score is lowest): the boost
        -- settles mixed evidence, it never overrides unanimous evidence; `above` (how many
        -- candidates beat the rule) breaks score ties
        SELECT r.id, min(o2.lifted) AS cap, count(*) AS above
        FROM b r
        JOIN b o2 ON o2.id <> r.id
                 AND (w_vector = 0 OR o2.sv >= r.sv) AND (w_bm25 = 0 OR o2.sb >= r.sb)
                 AND (w_exact = 0 OR o2.se >= r.se)
                 AND ((w_vector > 0 AND o2.sv > r.sv) OR (w_bm25 > 0 AND o2.sb > r.sb)
                      OR (w_exact > 0 AND o2.se > r.se))
        WHERE r.is_rule AND system_boost > 0
        GROUP BY r.id
    ), sp_line AS (
        -- speaker match: a candidate's line prefix (the text before its first colon within the
        -- 42 characters memdb.speaker_of reads); speaker_of runs once per distinct prefix (a
        -- conversation has few speakers), not once per candidate
        SELECT y.id, split_part(split_part(y.head, ':', 1), '：', 1) AS prefix
        FROM (SELECT b.id, (SELECT left(m.content, 42) FROM memdb.memories m
                            WHERE m.tenant = p_tenant AND m.id = b.id) AS head
              FROM b WHERE speaker_w > 0 OFFSET 0) y
        WHERE strpos(y.head, ':') + strpos(y.head, '：') > 0
    ), sp_prefix AS MATERIALIZED (
        SELECT d.prefix
        FROM (SELECT DISTINCT x.prefix FROM sp_line x OFFSET 0) d  -- OFFSET 0: distinct first
        WHERE memdb.speaker_of(d.prefix || ':') = ANY(q_names)
    ), sp_named AS (
        SELECT l.id FROM sp_line l JOIN sp_prefix n ON n.prefix = l.prefix
    ), c AS (
        SELECT b.*, CASE WHEN b.is_rule THEN greatest(b.base, least(b.lifted, bt.cap)) ELSE b.base END
                    * CASE WHEN sn.id IS NULL THEN 1 ELSE 1 + speaker_w END
                    * b.prior AS score,
               coalesce(bt.above, 0) AS above
        FROM b LEFT JOIN beaten bt ON bt.id = b.id LEFT JOIN sp_named sn ON sn.id = b.id
    ), lend AS (
        -- neighbour expansion: the top pool candidates lend their session neighbours a score;
        -- only those whose lent score (weight * score) beats the pool's last score can change
        -- the result, so only they look their neighbours up
        SELECT t.id, t.score
        FROM (SELECT c.id, c.score FROM c ORDER BY c.score DESC, c.above, c.id LIMIT pool) t
        WHERE n_window > 0
          AND t.score * coalesce((o ->> 'neighbor_weight')::double precision, 0.5)
              > coalesce((SELECT c.score FROM c ORDER BY c.score DESC, c.above, c.id
                          OFFSET pool - 1 LIMIT 1), 0)
    ), slend AS (
        -- speaker neighbours (step 3g): as lend, with the speaker_neighbors weight
        SELECT t.id, t.score
        FROM (SELECT c.id, c.score FROM c ORDER BY c.score DESC, c.above, c.id LIMIT pool) t
        WHERE speaker_nw > 0
          AND t.score * speaker_nw
              > coalesce((SELECT c.score FROM c ORDER BY c.score DESC, c.above, c.id
                          OFFSET pool - 1 LIMIT 1), 0)
    ), nb AS (
        SELECT x.id, max(x.score) AS score
        FROM (SELECT y.id, y.score
              FROM memdb.search_neighbors(
                       p_tenant, ARRAY(SELECT lend.id FROM lend ORDER BY lend.id),
                       ARRAY(SELECT lend.score FROM lend ORDER BY lend.id),
                       n_window, coalesce((o ->> 'neighbor_weight')::double precision, 0.5), f) y
              WHERE n_window > 0
              UNION ALL
              SELECT y.id, y.score
              FROM memdb.search_speaker_neighbors(
                       p_tenant, ARRAY(SELECT slend.id FROM slend ORDER BY slend.id),
                       ARRAY(SELECT slend.score FROM slend ORDER BY slend.id), speaker_nw, f) y
              WHERE speaker_nw > 0) x
        GROUP BY x.id
    ), cn AS (
        SELECT coalesce(c.id, nb.id) AS id, greatest(c.score, nb.score) AS score, c.fused, c.mult,
               coalesce(c.above, 0) AS above, c.vector_rank, c.vector_score, c.bm25_rank,
               c.bm25_score, c.exact_rank, c.exact_score
        FROM c FULL JOIN nb ON nb.id = c.id
    )
    SELECT jsonb_agg(to_jsonb(s) ORDER BY s.pos) INTO found_rows
    FROM (
        SELECT c.id, row_number() OVER (ORDER BY c.score DESC, c.above, c.id) AS pos,
               c.score, c.fused, CASE WHEN c.fused > 0 THEN c.score / c.fused ELSE c.mult END AS multiplier,
               c.vector_rank, c.vector_score, c.bm25_rank, c.bm25_score, c.exact_rank, c.exact_score
        FROM cn c
        ORDER BY c.score DESC, c.above, c.id
        LIMIT pool
    ) s;

    IF found_rows IS NULL THEN
        RETURN;
    END IF;
    IF NOT use_mmr THEN
        RETURN QUERY
        SELECT x.id, x.pos, x.score, x.fused, x.multiplier, x.vector_rank, x.vector_score,
               x.bm25_rank, x.bm25_score, x.exact_rank, x.exact_score, NULL::double precision
        FROM jsonb_to_recordset(found_rows) AS x(
                 id uuid, pos integer, score double precision, fused double precision, multiplier double precision,
                 vector_rank integer, vector_score double precision, bm25_rank integer,
                 bm25_score double precision, exact_rank integer, exact_score double precision)
        ORDER BY x.pos
        LIMIT p_k;
        RETURN;
    END IF;
    RETURN QUERY
    WITH c AS (
        SELECT * FROM jsonb_to_recordset(found_rows) AS x(
                 id uuid, pos integer, score double precision, fused double precision, multiplier double precision,
                 vector_rank integer, vector_score double precision, bm25_rank integer,
                 bm25_score double precision, exact_rank integer, exact_score double precision)
    )
    SELECT c.id, p.pick, c.score, c.fused, c.multiplier, c.vector_rank, c.vector_score,
           c.bm25_rank, c.bm25_score, c.exact_rank, c.exact_score, p.mmr_score
    FROM memdb.mmr((SELECT array_agg(c2.id ORDER BY c2.pos) FROM c c2),
                   (SELECT array_agg(c2.score ORDER BY c2.pos) FROM c c2),
                   p_k, (o ->> 'mmr_lambda')::double precision, p_tenant) p
    JOIN c ON c.id = p.id
    ORDER BY p.pick;
END
$$;
