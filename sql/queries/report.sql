-- Queries of `memdb report` (memdb/report/_data.py). Each runs in a transaction confined by
-- row-level security to the store's tenant (and to one subject when the report has one), so
-- the scope is the policy's; the explicit tenant filter only helps the planner.
-- "Current" memories: valid_to IS NULL (not superseded or closed).

-- name: report_totals
SELECT count(*) AS rows,
       count(*) FILTER (WHERE valid_to IS NULL) AS current,
       count(*) FILTER (WHERE superseded_by IS NOT NULL) AS superseded,
       count(*) FILTER (WHERE valid_to IS NULL AND expires_at IS NOT NULL
                          AND expires_at <= now()) AS expired_unpurged,
       count(*) FILTER (WHERE valid_to IS NULL AND status = 'hypothesis') AS hypotheses,
       count(DISTINCT subject) AS subjects,
       min(created_at) AS first_created, max(created_at) AS last_created
FROM memdb.memories
WHERE tenant = %(tenant)s;

-- name: report_kind_category
-- current memories by kind and category
SELECT kind, category, count(*) AS n
FROM memdb.memories
WHERE tenant = %(tenant)s AND valid_to IS NULL
GROUP BY kind, category
ORDER BY kind, category;

-- name: report_weekly
-- memory rows (every version) created per ISO week (weeks start on Monday, UTC), by kind and
-- category
SELECT (date_trunc('week', created_at AT TIME ZONE 'UTC'))::date AS week, kind, category,
       count(*) AS n
FROM memdb.memories
WHERE tenant = %(tenant)s
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3;

-- name: report_age
-- current memories by age (now - created_at), in fixed buckets; bucket 0..5
SELECT b AS bucket, count(*) AS n
FROM (SELECT CASE WHEN age < interval '1 day' THEN 0
                  WHEN age < interval '7 days' THEN 1
                  WHEN age < interval '30 days' THEN 2
                  WHEN age < interval '90 days' THEN 3
                  WHEN age < interval '365 days' THEN 4
                  ELSE 5 END AS b
      FROM (SELECT now() - created_at AS age FROM memdb.memories
            WHERE tenant = %(tenant)s AND valid_to IS NULL) a) x
GROUP BY b
ORDER BY b;

-- name: report_hotness
-- current memories by hotness (memdb.hotness of the owner's use count and the age, as search's
-- multiplier computes it; 0.3 .. 1.5) in 12 buckets of 0.1: bucket 1 = [0.3, 0.4) ... 12
SELECT least(width_bucket(h, 0.3, 1.5, 12), 12) AS bucket, count(*) AS n
FROM (SELECT memdb.hotness(u.use_count, extract(epoch FROM now() - m.created_at) / 86400.0) AS h
      FROM memdb.memories m
      LEFT JOIN memdb.memory_usage u ON u.memory_id = m.id AND u.subject = m.subject
      WHERE m.tenant = %(tenant)s AND m.valid_to IS NULL) x
GROUP BY 1
ORDER BY 1;

-- name: report_expiry
-- current memories that have not expired yet, by when they expire (cumulative horizons)
SELECT count(*) FILTER (WHERE expires_at <= now() + interval '7 days') AS within_7d,
       count(*) FILTER (WHERE expires_at <= now() + interval '30 days') AS within_30d,
       count(*) FILTER (WHERE expires_at <= now() + interval '365 days') AS within_365d,
       count(*) FILTER (WHERE expires_at > now() + interval '365 days') AS later,
       count(*) FILTER (WHERE expires_at IS NULL) AS never
FROM memdb.memories
WHERE tenant = %(tenant)s AND valid_to IS NULL AND (expires_at IS NULL OR expires_at > now());

-- name: report_supersessions
-- memories superseded per ISO week (of valid_to, when the newer version took over)
SELECT (date_trunc('week', valid_to AT TIME ZONE 'UTC'))::date AS week, count(*) AS n
FROM memdb.memories
WHERE tenant = %(tenant)s AND superseded_by IS NOT NULL
GROUP BY 1
ORDER BY 1;

-- name: report_traces
-- retrieval health from the kept traces (memdb.retrieval_traces)
SELECT count(*) AS searches,
       coalesce(avg((cardinality(chosen_ids) = 0)::int), 0)::float8 AS empty_rate,
       coalesce(avg(fallback::int), 0)::float8 AS fallback_rate,
       coalesce(avg((status = 'degraded')::int), 0)::float8 AS degraded_rate,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) AS p50_ms,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) AS p95_ms,
       percentile_cont(0.99) WITHIN GROUP (ORDER BY latency_ms) AS p99_ms
FROM memdb.retrieval_traces
WHERE tenant = %(tenant)s;

-- name: report_trace_intents
SELECT intent, count(*) AS n
FROM memdb.retrieval_traces
WHERE tenant = %(tenant)s
GROUP BY intent
ORDER BY n DESC, intent;

-- name: report_trace_latencies
-- the newest kept searches' latencies (for the histogram)
SELECT latency_ms::float8 AS ms
FROM memdb.retrieval_traces
WHERE tenant = %(tenant)s
ORDER BY created_at DESC
LIMIT 100000;
