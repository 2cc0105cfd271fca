-- memdb.cjk_ngrams(p_run text) -> text
-- One run of CJK characters as space-separated tokens: every character (unigram) followed by
-- the pair it starts (bigram), so 前端工程师 -> "前 前端 端 端工 工 工程 程 程师 师".
-- Used by memdb.tokenize(); no extension or dictionary needed.
CREATE OR REPLACE FUNCTION memdb.cjk_ngrams(p_run text)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT coalesce(string_agg(
               CASE WHEN i < length(p_run) THEN substr(p_run, i, 1) || ' ' || substr(p_run, i, 2)
                    ELSE substr(p_run, i, 1) END,
               ' ' ORDER BY i), '')
    FROM generate_series(1, length(p_run)) AS i
$$;
