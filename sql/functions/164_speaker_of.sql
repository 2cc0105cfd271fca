-- memdb.speaker_of(p_content text) -> text
-- The speaker of a transcript line "Name: text" (or "Name：text"), in memdb.entity_norm form:
-- the 1 to 4 words before the first colon, within the first 42 characters, the first starting
-- with a letter (Latin or CJK), made of letters, digits, dots, hyphens and apostrophes; NULL
-- otherwise ("Note: ..." is a speaker too: the search option speaker_boost only counts a
-- speaker the query names, see memdb.search_hybrid). One expression, so it is inlined.
-- Example: SELECT memdb.speaker_of('Melanie: I read "Charlotte''s Web" last week');  -- 'melanie'
--          SELECT memdb.speaker_of('张三：我下周去杭州');                               -- '张三'
CREATE OR REPLACE FUNCTION memdb.speaker_of(p_content text)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT memdb.entity_norm(substring(left(p_content, 42) FROM
        '^\s*([a-zA-Z\u00c0-\u024f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]'
        '[a-zA-Z0-9\u00c0-\u024f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af.''-]*'
        '(?:\s+[a-zA-Z0-9\u00c0-\u024f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af.''-]+){0,3})\s*[:：]'))
$$;
