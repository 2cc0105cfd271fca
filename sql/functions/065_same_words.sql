-- memdb.same_words(p_a text, p_b text) -> boolean
-- The lexical half of near-duplicate detection: true when the words of one text (CJK
-- characters one by one, other runs of letters and digits as words; after
-- memdb.normalize_text) include all the words of the other, and both or neither are negated
-- (not/no/never/n't, 不/没/别/勿/未/无). Embeddings alone cannot tell 前端工程师 from
-- 后端工程师 (cosine 0.99 with multilingual-e5-small) or "I like coffee" from "I don't like
-- coffee"; a near duplicate must pass both this and the cosine threshold (memdb.write_memories).
-- Each text is normalized once and the negation test (cheap) decides first; the word lists
-- need no DISTINCT, as containment ignores repeats.
-- Example: SELECT memdb.same_words('我喜欢喝绿茶', '我很喜欢喝绿茶');  -- true
CREATE OR REPLACE FUNCTION memdb.same_words(p_a text, p_b text)
RETURNS boolean
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
    a text := memdb.normalize_text(p_a);
    b text := memdb.normalize_text(p_b);
    c_word constant text :=
        '([\u3400-\u9fff\uf900-\ufaff]|[^[:space:][:punct:]\u3400-\u9fff\uf900-\ufaff]+)';
    c_neg constant text :=
        '\m(not|no|never|none|nothing|nobody|neither|nor|cannot|without)\M|n''t\M|[不没沒别別勿未无無]';
    wa text[];
    wb text[];
BEGIN
    IF (a ~ c_neg) <> (b ~ c_neg) THEN
        RETURN false;
    END IF;
    wa := ARRAY(SELECT x[1] FROM regexp_matches(a, c_word, 'g') AS x);
    wb := ARRAY(SELECT x[1] FROM regexp_matches(b, c_word, 'g') AS x);
    RETURN wa <@ wb OR wb <@ wa;
END
$$;
