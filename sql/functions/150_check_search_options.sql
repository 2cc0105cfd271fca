-- memdb.check_search_options(p_options jsonb) -> boolean
-- Validates the options of memdb.search_hybrid and returns true, or raises
-- invalid_parameter_value (22023) naming the bad option. Options (all optional):
--   routes: array of "vector", "bm25", "exact" (default all; vector needs a query vector)
--   weights: {"vector": w, "bm25": w, "exact": w}, w >= 0 (default 1 each)
--   depth: candidates per route, 1..1000 (default max(50, 2k))
--   rrf_k: > 0 (default 60)
--   k1 >= 0, b in [0, 1], candidate_df_ratio in (0, 1]: BM25 (see memdb.search_bm25)
--   mmr_lambda in [0, 1]: turns MMR on; mmr_candidates 1..1000 (default max(30, 3k))
--   decay_weight, hotness_weight, importance_weight in [0, 1]; half_life_days > 0
--   (see memdb.score_multiplier); system_boost >= 0 (default 1: active 'system' memories
--   score up to (1 + system_boost) times as much, capped by the candidates that beat them on
--   every route, see memdb.search_hybrid); exact_limit >= 0 (see memdb.search_vector); space_id.
--   neighbors 0..10 (default 0 = off): each returned hit brings the memories up to that many
--   places before and after it in its session (memdb.search_neighbors), scored neighbor_weight
--   (in [0, 1], default 0.5) ^ distance times the hit's score;
--   prf 0..100 (default 0 = off): pseudo-relevance feedback, the BM25 route runs the query
--   expanded with prf_terms 1..100 (default 10) terms from the first pass's top prf memories,
--   the original terms weighted prf_weight in [0, 1] (default 0.5) (memdb.prf_terms).
--   temporal in [0, 10] (default 0 = off): the weight of memdb.temporal_boost (memories that
--   carry a time, for a query that asks about time or names one; see memdb.search_hybrid).
--   speaker_boost in [0, 10] (default 0 = off): a transcript line "Name: text" whose speaker
--   the query names scores (1 + speaker_boost) times as much (memdb.speaker_of).
--   session_prior in [0, 10] (default 0 = off): a memory in a session (subject, session_id)
--   that holds a share of the candidates' summed fused score scores (1 + session_prior *
--   share) times as much (see memdb.search_hybrid, step 3f).
--   speaker_neighbors in [0, 1] (default 0 = off): a transcript line "Name: text" in a session
--   brings the nearest line of its speaker before and after it there, scored speaker_neighbors
--   times its score (memdb.search_speaker_neighbors; memdb.search_hybrid, step 3g).
CREATE OR REPLACE FUNCTION memdb.check_search_options(p_options jsonb)
RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    k text;
    v jsonb;
    x numeric;
    e jsonb;
    r text;
BEGIN
    IF p_options IS NULL THEN
        RETURN true;
    END IF;
    IF jsonb_typeof(p_options) <> 'object' THEN
        RAISE EXCEPTION 'search options must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR k, v IN SELECT * FROM jsonb_each(p_options) LOOP
        IF k = 'routes' THEN
            IF jsonb_typeof(v) <> 'array' OR jsonb_array_length(v) = 0 THEN
                RAISE EXCEPTION 'option "routes" must be a non-empty array' USING ERRCODE = 'invalid_parameter_value';
            END IF;
            FOR e IN SELECT jsonb_array_elements(v) LOOP
                IF jsonb_typeof(e) <> 'string' OR e #>> '{}' NOT IN ('vector', 'bm25', 'exact') THEN
                    RAISE EXCEPTION 'unknown route %, expected vector, bm25 or exact', e
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
            END LOOP;
        ELSIF k = 'weights' THEN
            IF jsonb_typeof(v) <> 'object' THEN
                RAISE EXCEPTION 'option "weights" must be an object' USING ERRCODE = 'invalid_parameter_value';
            END IF;
            FOR r IN SELECT jsonb_object_keys(v) LOOP
                IF r NOT IN ('vector', 'bm25', 'exact') THEN
                    RAISE EXCEPTION 'unknown route "%" in weights', r USING ERRCODE = 'invalid_parameter_value';
                END IF;
                IF jsonb_typeof(v -> r) <> 'number' OR (v ->> r)::numeric < 0 THEN
                    RAISE EXCEPTION 'weight of route "%" must be a number >= 0', r USING ERRCODE = 'invalid_parameter_value';
                END IF;
            END LOOP;
        ELSIF k IN ('depth', 'rrf_k', 'k1', 'b', 'candidate_df_ratio', 'mmr_lambda', 'mmr_candidates',
                    'decay_weight', 'hotness_weight', 'importance_weight', 'half_life_days',
                    'exact_limit', 'space_id', 'system_boost', 'neighbors', 'neighbor_weight',
                    'prf', 'prf_terms', 'prf_weight', 'speaker_boost', 'temporal',
                    'session_prior', 'speaker_neighbors') THEN
            IF jsonb_typeof(v) <> 'number' THEN
                RAISE EXCEPTION 'option "%" must be a number', k USING ERRCODE = 'invalid_parameter_value';
            END IF;
            x := (v #>> '{}')::numeric;
            IF (k IN ('depth', 'mmr_candidates') AND (x < 1 OR x > 1000 OR x <> trunc(x)))
               OR (k IN ('rrf_k', 'half_life_days') AND x <= 0)
               OR (k IN ('k1', 'system_boost') AND x < 0)
               OR (k IN ('b', 'mmr_lambda', 'decay_weight', 'hotness_weight', 'importance_weight',
                         'neighbor_weight', 'prf_weight', 'speaker_neighbors') AND (x < 0 OR x > 1))
               OR (k = 'neighbors' AND (x < 0 OR x > 10 OR x <> trunc(x)))
               OR (k = 'prf' AND (x < 0 OR x > 100 OR x <> trunc(x)))
               OR (k = 'speaker_boost' AND (x < 0 OR x > 10))
               OR (k = 'prf_terms' AND (x < 1 OR x > 100 OR x <> trunc(x)))
               OR (k IN ('temporal', 'session_prior') AND (x < 0 OR x > 10))
               OR (k = 'candidate_df_ratio' AND (x <= 0 OR x > 1))
               OR (k IN ('exact_limit', 'space_id') AND (x < 0 OR x <> trunc(x))) THEN
                RAISE EXCEPTION 'option "%" is out of range: %', k, x USING ERRCODE = 'invalid_parameter_value';
            END IF;
        ELSE
            RAISE EXCEPTION 'unknown search option "%"', k USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END LOOP;
    RETURN true;
END
$$;
