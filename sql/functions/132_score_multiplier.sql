-- memdb.score_multiplier(p_category text, p_importance real, p_use_count integer,
--                        p_age_days double precision, p_options jsonb) -> double precision
-- The final multiplier a hybrid search applies to a memory's fused score:
--     (1 - wd + wd * time_decay(age, half_life))          wd = options.decay_weight
--   * (1 - wh + wh * hotness(use_count, age))             wh = options.hotness_weight
--   * (1 - wi + wi * (0.5 + importance))                  wi = options.importance_weight
-- Every weight defaults to 0 (multiplier 1). Memories in category 'system' always get 1:
-- rules never fade.
CREATE OR REPLACE FUNCTION memdb.score_multiplier(p_category text, p_importance real, p_use_count integer,
                                                  p_age_days double precision, p_options jsonb)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN p_category = 'system' THEN 1.0 ELSE
          (1 - coalesce((p_options ->> 'decay_weight')::double precision, 0)
             + coalesce((p_options ->> 'decay_weight')::double precision, 0)
               * memdb.time_decay(p_age_days, coalesce((p_options ->> 'half_life_days')::double precision, 90)))
        * (1 - coalesce((p_options ->> 'hotness_weight')::double precision, 0)
             + coalesce((p_options ->> 'hotness_weight')::double precision, 0)
               * memdb.hotness(p_use_count, p_age_days))
        * (1 - coalesce((p_options ->> 'importance_weight')::double precision, 0)
             + coalesce((p_options ->> 'importance_weight')::double precision, 0) * (0.5 + coalesce(p_importance, 0.5)))
    END
$$;
