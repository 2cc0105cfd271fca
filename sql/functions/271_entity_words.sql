-- memdb.entity_words(p_text text) -> text
-- p_text as the entity matcher sees it: memdb.normalize_text (NFKC, lower case), every run of
-- letters, digits and CJK characters kept, everything else a single space, and a space
-- between a Latin run and a CJK run ('李四使用neovim写代码' -> ' 李四使用 neovim 写代码 '),
-- so Latin names are whole words and CJK runs stay whole. See memdb.entity_candidates.
CREATE OR REPLACE FUNCTION memdb.entity_words(p_text text)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT ' ' || btrim(regexp_replace(regexp_replace(regexp_replace(
               regexp_replace(memdb.normalize_text(p_text),
                              '[^a-z0-9_#+\u00c0-\u024f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]+', ' ', 'g'),
               '([a-z0-9_#+\u00c0-\u024f])([\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af])', '\1 \2', 'g'),
               '([\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af])([a-z0-9_#+\u00c0-\u024f])', '\1 \2', 'g'),
               '\s+', ' ', 'g')) || ' '
$$;
