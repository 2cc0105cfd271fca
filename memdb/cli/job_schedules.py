"""``memdb jobs schedule list|set|remove|run`` (store.jobs.schedule...): the tenant's schedules
of recurring jobs, enqueued by any worker once due (docs/jobs.md, "Schedules")."""

from __future__ import annotations

import json

import click

from ..core.errors import InvalidInput
from ..families.jobs import Schedule
from ._app import emit_json, json_option, store
from .jobs import jobs


def _line(s: Schedule) -> str:
    last = f"{s.last_run:%Y-%m-%d %H:%M:%S}" if s.last_run else "never"
    payload = json.dumps(s.payload, ensure_ascii=False) if s.payload else ""
    return (f"{s.kind:<28} every {s.period_seconds:>8} s  next {s.next_run:%Y-%m-%d %H:%M:%S}"
            f"  last {last}  {payload}").rstrip()


@jobs.group("schedule")
def schedule() -> None:
    """Schedules of recurring jobs (expiry, decay, sedimentation...): list, set, remove, run."""


@schedule.command("list")
@json_option
def schedule_list(as_json: bool) -> None:
    """The tenant's schedules, by kind."""
    found = store().jobs.schedules()
    if as_json:
        emit_json([s.to_json() for s in found])
    elif not found:
        click.echo("no schedules")
    for s in found if not as_json else ():
        click.echo(_line(s))


@schedule.command("set")
@click.argument("kind")
@click.option("--every", "every", type=click.IntRange(1), required=True,
              help="The period in seconds (e.g. 3600: once per clock hour).")
@click.option("--payload", default=None, help="The jobs' payload, a JSON object.")
@json_option
def schedule_set(kind: str, every: int, payload: str | None, as_json: bool) -> None:
    """Run a job of KIND every --every seconds (a new schedule is due at once)."""
    try:
        data = None if payload is None else json.loads(payload)
    except ValueError as exc:
        raise InvalidInput(f"--payload is not JSON: {exc}") from None
    s = store().jobs.schedule(kind, every, data)
    emit_json(s.to_json()) if as_json else click.echo(_line(s))


@schedule.command("remove")
@click.argument("kind")
@json_option
def schedule_remove(kind: str, as_json: bool) -> None:
    """Remove the schedule of KIND (jobs already enqueued stay)."""
    removed = store().jobs.unschedule(kind)
    if as_json:
        emit_json({"removed": removed})
    else:
        click.echo("removed" if removed else f"no schedule of {kind}")
    if not removed:
        raise SystemExit(1)


@schedule.command("run")
@json_option
def schedule_run(as_json: bool) -> None:
    """Enqueue the tenant's due schedules now (what a worker does when it wakes up)."""
    rows = store().jobs.run_schedules()
    if as_json:
        emit_json([{**r, "job_id": str(r["job_id"])} for r in rows])
    else:
        for r in rows:
            click.echo(f"{r['kind']:<28} {r['job_id']}  {'new' if r['created'] else 'existing'}")
        if not rows:
            click.echo("nothing due")
