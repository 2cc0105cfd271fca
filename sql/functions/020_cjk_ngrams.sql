-- memdb.cjk_ngrams(p_run text) -> text
-- One run of CJK characters as space-separated tokens: every character (unigram) followed by
-- the pair it starts (bigram), so 前端工程师 -> "前 前端 端 端工 工 工程 程 程师 师".
-- Used by memdb.tokenize(); no extension or dictionary needed. Linear in the run's length.
CREATE OR REPLACE FUNCTION memdb.cjk_ngrams(p_run text)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT coalesce(string_agg(c.ch || coalesce(' ' || c.ch || c.nxt, ''), ' ' ORDER BY c.n), '')
    FROM (SELECT u.ch, u.n, lead(u.ch) OVER (ORDER BY u.n) AS nxt
          FROM unnest(regexp_split_to_array(p_run, '')) WITH ORDINALITY AS u(ch, n)) c
$$;
