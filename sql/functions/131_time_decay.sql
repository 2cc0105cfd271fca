-- memdb.time_decay(p_age_days double precision, p_half_life_days double precision DEFAULT 90)
--   -> double precision
-- Exponential forgetting curve: 0.5 ^ (age_days / half_life_days), 1 for a memory made now;
-- the exponent is capped at 1000 (0.5^1000 ~ 1e-301), so ancient memories never underflow.
CREATE OR REPLACE FUNCTION memdb.time_decay(p_age_days double precision,
                                            p_half_life_days double precision DEFAULT 90)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT power(0.5, least(greatest(coalesce(p_age_days, 0), 0)
                            / greatest(coalesce(p_half_life_days, 90), 0.001), 1000))
$$;
