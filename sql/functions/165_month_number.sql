-- memdb.month_number(p_name text) -> integer
-- 1..12 for an English month name or its abbreviation (any case: "may", "Sept", "December"),
-- NULL otherwise. Used by memdb.time_range.
-- Example: SELECT memdb.month_number('Sept');  -> 9
CREATE OR REPLACE FUNCTION memdb.month_number(p_name text)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT array_position(ARRAY['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'],
                          left(lower(p_name), 3))
    WHERE lower(p_name) ~ '^(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sep(t|tember)?|oct(ober)?|nov(ember)?|dec(ember)?)$'
$$;
