-- memdb.trace_stats(p_tenant text, p_since timestamptz DEFAULT NULL) -> jsonb
-- Health of planned retrieval from the tenant's traces (since p_since, default all kept):
-- {"searches", "empty_rate", "fallback_rate", "degraded_rate", "llm_plan_rate",
--  "p50_ms", "p95_ms", "intents": {intent: count}, "statuses": {status: count}}.
CREATE OR REPLACE FUNCTION memdb.trace_stats(p_tenant text, p_since timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE sql STABLE
AS $$
    WITH t AS (
        SELECT * FROM memdb.retrieval_traces
        WHERE tenant = p_tenant AND (p_since IS NULL OR created_at >= p_since)
    )
    SELECT jsonb_build_object(
        'searches', (SELECT count(*) FROM t),
        'empty_rate', (SELECT coalesce(avg((cardinality(chosen_ids) = 0)::int), 0) FROM t),
        'fallback_rate', (SELECT coalesce(avg(fallback::int), 0) FROM t),
        'degraded_rate', (SELECT coalesce(avg((status = 'degraded')::int), 0) FROM t),
        'llm_plan_rate', (SELECT coalesce(avg((plan_source = 'llm')::int), 0) FROM t),
        'p50_ms', (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) FROM t),
        'p95_ms', (SELECT percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) FROM t),
        'intents', (SELECT coalesce(jsonb_object_agg(intent, n), '{}'::jsonb)
                    FROM (SELECT intent, count(*) AS n FROM t GROUP BY intent) x),
        'statuses', (SELECT coalesce(jsonb_object_agg(status, n), '{}'::jsonb)
                     FROM (SELECT status, count(*) AS n FROM t GROUP BY status) x))
$$;
