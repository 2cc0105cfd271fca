-- memdb.hotness(p_use_count integer, p_age_days double precision, p_base double precision DEFAULT 1)
--   -> double precision
-- How "hot" a memory is from how often the caller used it (memdb.mark_used) and its age:
--   base * (1 + min(0.5, 0.05 * use_count)) * max(0.3, 1 - age_days / 365)
-- so between 0.3 * base (old, never used) and 1.5 * base (new, used 10+ times).
CREATE OR REPLACE FUNCTION memdb.hotness(p_use_count integer, p_age_days double precision,
                                         p_base double precision DEFAULT 1)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT p_base * (1 + least(0.5, 0.05 * greatest(coalesce(p_use_count, 0), 0)))
                  * greatest(0.3, 1 - greatest(coalesce(p_age_days, 0), 0) / 365.0)
$$;
