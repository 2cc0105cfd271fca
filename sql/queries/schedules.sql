-- Schedules of recurring jobs (memdb.job_schedules; memdb/families/jobs/_schedules.py) and the queue's
-- figures over time (memdb report). Run in transactions confined to a tenant (RLS), except
-- enqueue_due_schedules, which a worker runs as memdb_app with no tenant (SECURITY DEFINER).

-- name: set_schedule
-- a new schedule is due now (or at next_run); changing one's period or payload keeps its next
-- run unless the new period ends sooner (at %(soon)s: the caller's clock plus the period;
-- Citus takes no volatile or stable function, now() or timestamptz + interval, in DO UPDATE)
INSERT INTO memdb.job_schedules AS s (tenant, kind, payload, period_seconds, next_run)
VALUES (%(tenant)s, %(kind)s, %(payload)s, %(period)s, coalesce(%(next_run)s, now()))
ON CONFLICT (tenant, kind) DO UPDATE
SET payload = excluded.payload, period_seconds = excluded.period_seconds,
    next_run = coalesce(%(next_run)s::timestamptz,
                        least(s.next_run, %(soon)s::timestamptz)),
    updated_at = %(now)s::timestamptz
RETURNING *;

-- name: list_schedules
SELECT * FROM memdb.job_schedules WHERE tenant = %(tenant)s ORDER BY kind;

-- name: remove_schedule
DELETE FROM memdb.job_schedules WHERE tenant = %(tenant)s AND kind = %(kind)s RETURNING kind;

-- name: enqueue_due_schedules
SELECT * FROM memdb.enqueue_due_schedules(%(tenants)s, %(kinds)s);

-- name: job_throughput
-- jobs finished per hour (done, dead) over the last hours, oldest first
SELECT date_trunc('hour', finished_at) AS hour,
       count(*) FILTER (WHERE state = 'done') AS done,
       count(*) FILTER (WHERE state = 'dead') AS dead
FROM memdb.jobs
WHERE tenant = %(tenant)s AND state IN ('done', 'dead')
  AND finished_at > now() - make_interval(hours => %(hours)s)
GROUP BY 1 ORDER BY 1;
