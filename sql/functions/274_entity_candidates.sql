-- memdb.entity_candidates(p_text text) -> text[]
-- Every string an entity name (memdb.entity_norm form) may take inside p_text (its first 1000
-- characters), so entities are found by index lookups (norm_name = ANY, aliases &&) instead of
-- testing every entity against the text:
--   * runs of 1 to 4 consecutive words of memdb.entity_words(p_text), joined by a space
--     (Latin names match whole words only: 'al' is not found in 'also');
--   * the same over the text split at white space, each through memdb.entity_norm (keeps
--     names with inner punctuation: 'node.js', 'c++');
--   * every substring of 2 to 16 characters of each CJK run (CJK text has no spaces: '李四' is
--     found in '李四的同事').
-- Candidates shorter than 2 characters are left out (too ambiguous).
-- Example: SELECT memdb.entity_candidates('谁和李四一起工作？');
CREATE OR REPLACE FUNCTION memdb.entity_candidates(p_text text)
RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    WITH t AS (
        SELECT array_remove(string_to_array(btrim(memdb.entity_words(left(p_text, 1000))), ' '), '') AS w,
               array_remove(regexp_split_to_array(memdb.normalize_text(left(p_text, 1000)), '\s+'), '') AS s
    )
    SELECT coalesce(array_agg(DISTINCT c.c), '{}')
    FROM (
        SELECT array_to_string(t.w[i:i + n - 1], ' ') AS c
        FROM t, generate_series(1, cardinality(t.w)) i, generate_series(1, 4) n
        WHERE i + n - 1 <= cardinality(t.w)
        UNION ALL
        SELECT memdb.entity_norm(array_to_string(t.s[i:i + n - 1], ' '))
        FROM t, generate_series(1, cardinality(t.s)) i, generate_series(1, 4) n
        WHERE i + n - 1 <= cardinality(t.s)
        UNION ALL
        SELECT substr(x.x, i, n)
        FROM t, unnest(t.w) x(x), generate_series(1, length(x.x)) i, generate_series(2, 16) n
        WHERE x.x ~ '[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]' AND i + n - 1 <= length(x.x)
    ) c
    WHERE c.c IS NOT NULL AND length(c.c) >= 2
$$;
