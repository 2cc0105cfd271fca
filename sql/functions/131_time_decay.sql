-- memdb.time_decay(p_age_days double precision, p_half_life_days double precision DEFAULT 90)
--   -> double precision
-- Exponential forgetting curve: 0.5 ^ (age_days / half_life_days), 1 for a memory made now.
CREATE OR REPLACE FUNCTION memdb.time_decay(p_age_days double precision,
                                            p_half_life_days double precision DEFAULT 90)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT power(0.5, greatest(coalesce(p_age_days, 0), 0) / greatest(coalesce(p_half_life_days, 90), 0.001))
$$;
