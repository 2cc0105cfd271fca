-- memdb.mmr(p_ids uuid[], p_relevance double precision[], p_k integer, p_lambda double precision DEFAULT 0.7,
--           p_tenant_of_ids text DEFAULT NULL)
--   -> TABLE(id uuid, pick integer, mmr_score double precision)
-- Greedy maximal marginal relevance over candidates p_ids with relevance p_relevance (same
-- order; scaled here to [0, 1] by the maximum): each pick maximizes
--     lambda * relevance - (1 - lambda) * max cosine similarity to the memories already picked
-- using the stored embeddings (a candidate without one counts as similar to nothing).
-- Returns up to p_k ids in pick order. p_tenant_of_ids: the tenant all of p_ids belong to, when
-- known (memdb.search_hybrid passes it).
CREATE OR REPLACE FUNCTION memdb.mmr(p_ids uuid[], p_relevance double precision[], p_k integer,
                                     p_lambda double precision DEFAULT 0.7,
                                     p_tenant_of_ids text DEFAULT NULL)
RETURNS TABLE (id uuid, pick integer, mmr_score double precision)
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    n integer := coalesce(cardinality(p_ids), 0);
    vecs vector[];
    rel double precision[];
    maxsim double precision[];
    chosen boolean[];
    top double precision;
    best integer;
    best_score double precision;
    cand_score double precision;
    sim double precision;
    i integer;
    r integer;
BEGIN
    IF p_lambda IS NULL OR p_lambda < 0 OR p_lambda > 1 THEN
        RAISE EXCEPTION 'MMR lambda must be in [0, 1], got %', p_lambda USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF n = 0 OR p_k IS NULL OR p_k < 1 THEN
        RETURN;
    END IF;
    IF cardinality(p_relevance) <> n THEN
        RAISE EXCEPTION 'mmr needs one relevance per id' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_tenant_of_ids IS NULL THEN
        SELECT array_agg(m.embedding ORDER BY c.ord) INTO vecs
        FROM unnest(p_ids) WITH ORDINALITY AS c(id, ord)
        LEFT JOIN memdb.memories m ON m.id = c.id;
    ELSE  -- one tenant's ids: a primary-key probe, and on Citus a one-shard query
        SELECT array_agg(m.embedding ORDER BY c.ord) INTO vecs
        FROM unnest(p_ids) WITH ORDINALITY AS c(id, ord)
        LEFT JOIN memdb.memories m ON m.tenant = p_tenant_of_ids AND m.id = c.id;
    END IF;
    SELECT max(x) INTO top FROM unnest(p_relevance) AS x;
    top := CASE WHEN top IS NULL OR top <= 0 THEN 1 ELSE top END;
    rel := ARRAY(SELECT coalesce(x, 0) / top FROM unnest(p_relevance) AS x);
    maxsim := array_fill(0::double precision, ARRAY[n]);
    chosen := array_fill(false, ARRAY[n]);
    FOR r IN 1 .. least(p_k, n) LOOP
        best := NULL;
        FOR i IN 1 .. n LOOP
            CONTINUE WHEN chosen[i];
            cand_score := p_lambda * rel[i] - (1 - p_lambda) * maxsim[i];
            IF best IS NULL OR cand_score > best_score THEN
                best := i;
                best_score := cand_score;
            END IF;
        END LOOP;
        chosen[best] := true;
        id := p_ids[best];
        pick := r;
        mmr_score := best_score;
        RETURN NEXT;
        IF vecs[best] IS NOT NULL THEN
            FOR i IN 1 .. n LOOP
                CONTINUE WHEN chosen[i] OR vecs[i] IS NULL
                              OR vector_dims(vecs[i]) <> vector_dims(vecs[best]);
                sim := 1 - (vecs[i] <=> vecs[best]);
                IF sim > maxsim[i] THEN
                    maxsim[i] := sim;
                END IF;
            END LOOP;
        END IF;
    END LOOP;
END
$$;
