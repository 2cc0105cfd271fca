-- memdb.entity_norm(p_name text) -> text
-- The normal form of an entity name, its dedup key: memdb.normalize_text (NFKC, lower case,
-- white space folded) with surrounding quotes, brackets and punctuation removed, so
-- "“Project X”", "project x" and "Project X." are one entity. NULL for a blank name.
-- Example: SELECT memdb.entity_norm(' 《支付系统》 ');  -- '支付系统'
CREATE OR REPLACE FUNCTION memdb.entity_norm(p_name text)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT nullif(btrim(memdb.normalize_text(p_name), ' "''`“”‘’《》「」『』()（）[]【】<>.,;:!?，。；：！？、'), '')
$$;
