-- memdb.number_word(p_word text) -> integer
-- The count a time expression names: digits ("3"), an English number word ("a", "an", "one"
-- .. "twelve", "a couple of" = 2, "a few" and "several" = 3) or a Chinese numeral up to 99
-- ("三", "两", "十二", "二十"); NULL otherwise. Used by memdb.time_range ("two weeks ago", "三天前").
-- Example: SELECT memdb.number_word('十二');  -> 12
CREATE OR REPLACE FUNCTION memdb.number_word(p_word text)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    w text := lower(btrim(p_word));
    digits constant text[] := ARRAY['一', '二', '三', '四', '五', '六', '七', '八', '九'];
    m text[];
BEGIN
    IF w ~ '^\d{1,6}$' THEN
        RETURN w::integer;
    END IF;
    IF w IN ('a', 'an', 'one') THEN RETURN 1; END IF;
    IF w IN ('two', 'a couple of', '两') THEN RETURN 2; END IF;
    IF w IN ('a few', 'several') THEN RETURN 3; END IF;
    IF w IN ('three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve') THEN
        RETURN array_position(ARRAY['three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten',
                                    'eleven', 'twelve'], w) + 2;
    END IF;
    m := regexp_match(w, '^([一二三四五六七八九])?(十)?([一二三四五六七八九])?$');
    IF m IS NULL OR w = '' OR (m[2] IS NULL AND m[3] IS NOT NULL) THEN
        RETURN NULL;
    END IF;
    IF m[2] IS NULL THEN
        RETURN array_position(digits, m[1]);
    END IF;
    RETURN coalesce(array_position(digits, m[1]), 1) * 10 + coalesce(array_position(digits, m[3]), 0);
END
$$;
