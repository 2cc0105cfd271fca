-- memdb.entity_words(p_text text) -> text
-- p_text as the matcher of memdb.query_entities sees it: the memdb.entity_norm form of every
-- run of letters, digits and CJK characters, separated and surrounded by single spaces
-- (' who works with 李四 '). A name occurs in a text when ' ' || name || ' ' is a substring of
-- its words (Latin names match whole words only: "al" is not found in "also"); a name with CJK
-- characters also matches inside a run (CJK text has no spaces: '李四' in '李四的同事').
CREATE OR REPLACE FUNCTION memdb.entity_words(p_text text)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT ' ' || btrim(regexp_replace(memdb.normalize_text(p_text),
                                       '[^a-z0-9_#+\u00c0-\u024f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]+',
                                       ' ', 'g')) || ' '
$$;
