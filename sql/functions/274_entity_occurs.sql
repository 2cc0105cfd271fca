-- memdb.entity_occurs(p_name text, p_words text) -> boolean
-- Whether the entity name p_name (normalized, memdb.entity_norm) occurs in a text given as
-- memdb.entity_words(text): Latin names as whole words, names holding CJK characters anywhere
-- (CJK text has no spaces). Names shorter than 2 characters never match (too ambiguous).
-- Example: SELECT memdb.entity_occurs('李四', memdb.entity_words('谁和李四一起工作？'));  -- true
CREATE OR REPLACE FUNCTION memdb.entity_occurs(p_name text, p_words text)
RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT length(p_name) >= 2
       AND CASE WHEN p_name ~ '[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]'
                THEN position(btrim(memdb.entity_words(p_name)) IN p_words) > 0
                ELSE length(btrim(memdb.entity_words(p_name))) > 0
                     AND position(memdb.entity_words(p_name) IN p_words) > 0
           END
$$;
