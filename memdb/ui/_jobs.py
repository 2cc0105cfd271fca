"""The job queue's page of the memory browser (/ui/jobs): the tenant's queue depth by state,
the age of its oldest due job, jobs finished per hour over two days, its schedules and its
latest jobs (docs/jobs.md, "Figures")."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import Response

from ._html import tag, text
from ._pages import page_context, router, table

HOURS = 48
STATS = (("queued", "queued"), ("running", "running"), ("failed", "failed, waiting to retry"),
         ("dead", "dead"), ("done", "done"), ("cancelled", "cancelled"),
         ("done_last_hour", "done in the last hour"),
         ("dead_last_hour", "dead in the last hour"))


def _short(value: object, n: int = 120) -> str:
    s = "" if value is None else str(value)
    return s if len(s) <= n else s[:n - 1] + "…"


@router.get("/jobs")
async def jobs_page(request: Request) -> Response:
    async with page_context(request) as ctx:
        jobs = ctx.store.jobs
        stats, hourly = await jobs.stats(), await jobs.throughput(HOURS)
        schedules, latest = await jobs.schedules(), await jobs.list(limit=20)
    oldest = stats.get("oldest_due_seconds")
    body = [
        tag("h2", "Queue"),
        table(["figure", "value"],
               [[label, int(stats[key] or 0)] for key, label in STATS]
               + [["oldest due job waiting", "-" if oldest is None else f"{oldest:.0f} s"]]),
        tag("h2", f"Finished per hour (last {HOURS} h, UTC)"),
        table(["hour", "done", "dead", ""],
               [[f"{r['hour']:%Y-%m-%d %H:00}", r["done"], r["dead"],
                 text("█" * min(60, int(r["done"])) + "✗" * min(20, int(r["dead"])))]
                for r in hourly]) if hourly else tag("p", "No job finished.", class_="muted"),
        tag("h2", "Schedules"),
        table(["kind", "every (s)", "next run", "last run", "payload"],
               [[s.kind, s.period_seconds, f"{s.next_run:%Y-%m-%d %H:%M:%S}",
                 f"{s.last_run:%Y-%m-%d %H:%M:%S}" if s.last_run else "never",
                 _short(s.payload or "")] for s in schedules])
        if schedules else tag("p", "No schedules.", class_="muted"),
        tag("h2", "Latest jobs"),
        table(["id", "kind", "state", "attempts", "created", "last error"],
               [[str(j.id), j.kind, j.state, f"{j.attempts}/{j.max_attempts}",
                 f"{j.created_at:%Y-%m-%d %H:%M:%S}", _short(j.last_error)] for j in latest])
        if latest else tag("p", "No jobs.", class_="muted"),
    ]
    return ctx.page("Jobs", body)
