-- memdb.tokenize(p_text text) -> tsvector
-- The keyword analyzer for Chinese and English alike, used both for the stored tsvector
-- (memories.tsv) and for queries, so the two always agree.
--   * text is NFKC-normalized first (full-width Ｒｅａｃｔ -> React), then '<', '>', '&' and '/'
--     become spaces: memories are not HTML, and PostgreSQL's parser would drop '<b and c>'
--     as a tag and '&lt;' as an entity, and keep '/script' or '/etc' as one path token
--     (a<b and c>d -> b c d; List<String> -> list string; </script> -> script);
--   * Latin and other non-CJK words go through the 'english' configuration (lower case,
--     Snowball stemming, stop words dropped), compounds split at inner punctuation first
--     (Vue.js -> vue js, XK-4471 -> xk 4471, foo@bar.com -> foo bar com);
--   * runs of CJK characters (Han, kana, Hangul) become unigrams + overlapping bigrams
--     (memdb.cjk_ngrams) under the 'simple' configuration.
-- Positions are kept, so term frequencies are exact.
CREATE OR REPLACE FUNCTION memdb.tokenize(p_text text)
RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    WITH t AS (SELECT translate(normalize(p_text, NFKC), '<>&/', '    ') AS s)
    SELECT to_tsvector('english'::regconfig,
                       regexp_replace(
                           regexp_replace(t.s, '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+', ' ', 'g'),
                           '([[:alnum:]])[-._/:@#+]+(?=[[:alnum:]])', '\1 ', 'g'))
        || to_tsvector('simple'::regconfig, coalesce((
               SELECT string_agg(memdb.cjk_ngrams(r.m[1]), ' ' ORDER BY r.n)
               FROM regexp_matches(t.s, '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+', 'g')
                    WITH ORDINALITY AS r(m, n)), ''))
    FROM t
$$;
