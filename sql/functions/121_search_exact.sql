-- memdb.search_exact(p_tenant text, p_query text, p_k integer DEFAULT 10, p_filter jsonb DEFAULT '{}')
--   -> TABLE(id uuid, score double precision)
-- The exact-match route: current memories of the tenant passing p_filter whose text contains
-- the whole query (case-insensitive; LIKE wildcards in the query are literal), through the
-- trigram index. score = length(query) / length(content): 1 for a memory that is the query.
-- A blank query returns nothing, and so does a one-character letter, digit or CJK character
-- (it would match most memories; the BM25 route finds it as a word); any other single
-- character, such as an emoji (🍵) or '%', is searched like a longer query. Nor does a short
-- phrase of English stop words only, up to four words ('the i', 'a to', 'of from a': ASCII
-- words that the keyword analyzer drops, so memdb.query_terms() is empty): as a substring it
-- is in a large share of all memories ('%the i%' is in 'the idea', 'the invoice', ...) and the
-- route would rank them by length alone, reading every row that holds each of its words to do
-- it (186 ms for 'the i' over 100,000 memories; docs/performance.md). The vector route still
-- answers it. Longer ones ('it is what it is', 'to be or not to be') are searched.
-- A query of three or more words searches the trigram index for its two longest distinct words
-- of five or more characters only (each a substring of the query, so every memory holding the
-- query holds them) and tests the whole query on those rows: the index no longer intersects
-- the long posting lists of every common word's trigrams (docs/performance.md). Shorter
-- queries, and queries of short words, search the index for all of their trigrams, as before.
-- The rows and scores are the same either way.
-- SECURITY DEFINER, so the trigram index serves tenant-wide searches (row-level security would
-- rule it out); the caller's tenant and subject isolation is applied by memdb.confine().
CREATE OR REPLACE FUNCTION memdb.search_exact(p_tenant text, p_query text, p_k integer DEFAULT 10,
                                              p_filter jsonb DEFAULT '{}')
RETURNS TABLE (id uuid, score double precision)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
ROWS 50
AS $$
DECLARE
    q text := lower(btrim(regexp_replace(coalesce(p_query, ''), '\s+', ' ', 'g')));
    v_words text[];  -- the query's words, longest first
    v_n_words integer;
BEGIN
    IF p_k IS NULL OR p_k < 1 OR p_k > 10000 THEN
        RAISE EXCEPTION 'k must be between 1 and 10000, got %', p_k USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM memdb.check_filter(p_filter);
    p_filter := memdb.confine(p_tenant, p_filter);
    IF p_filter IS NULL OR q = ''
       OR (length(q) = 1
           AND q ~ '[[:alnum:]\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]')
       OR (q ~ '^[a-z'' ,.;:!?-]+$' AND q ~ '[a-z]'
           AND q !~ '([a-z'']+[^a-z'']+){4}[a-z'']'  -- at most four words
           AND memdb.query_terms(q) = '{}') THEN
        RETURN;
    END IF;
    SELECT array_agg(w.word ORDER BY length(w.word) DESC, w.word), sum(w.n)
      INTO v_words, v_n_words
      FROM (SELECT r.m[1] AS word, count(*) AS n
              FROM regexp_matches(q, '[[:alnum:]]+', 'g') AS r(m) GROUP BY r.m[1]) w;
    IF coalesce(v_n_words, 0) < 3 OR coalesce(length(v_words[2]), 0) < 5 THEN
        v_words := NULL;  -- the whole query goes to the trigram index
    END IF;
    RETURN QUERY EXECUTE format($q$
        SELECT m.id, (length($3)::double precision / greatest(length(m.content), 1)) AS score
        FROM memdb.memories m
        WHERE m.tenant = $1 AND %s AND %s
        ORDER BY score DESC, m.id
        LIMIT $5
    $q$, CASE WHEN v_words IS NULL THEN 'lower(m.content) LIKE $4'
              -- the index for the two words ('%word%': alphanumeric, no LIKE escapes needed);
              -- the query on the rows they find (an expression the index does not serve)
              ELSE 'lower(m.content) LIKE $6 AND lower(m.content) LIKE $7'
                   ' AND (lower(m.content) || '''') LIKE $4' END,
         coalesce(memdb.filter_predicate(p_filter), 'memdb.matches(m, $2)'))  -- cheap to plan
    USING p_tenant, coalesce(p_filter, '{}'::jsonb), q,
          '%' || replace(replace(replace(q, '\', '\\'), '%', '\%'), '_', '\_') || '%', p_k,
          '%' || v_words[1] || '%', '%' || v_words[2] || '%';
END
$$;
