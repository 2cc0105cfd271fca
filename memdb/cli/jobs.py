"""``memdb jobs list|get|wait|cancel|retry|stats`` (store.jobs) and ``memdb worker`` (a
:class:`memdb.families.jobs.Worker` in the foreground; docs/jobs.md)."""

from __future__ import annotations

import importlib
from typing import Any

import click

from ..core.errors import InvalidInput
from ..families.jobs import STATES, Job, Worker
from ..families.store import MemoryStore
from ._app import State, cli, emit_json, json_option, store
from ._format import short, table


def _show(job: Job, as_json: bool) -> None:
    if as_json:
        emit_json(job.to_json())
        return
    click.echo(f"{job.id}  {job.kind}  {job.state}  attempts {job.attempts}/{job.max_attempts}"
               f"  subject {job.subject or '(the whole tenant)'}")
    click.echo(f"  created {job.created_at:%Y-%m-%d %H:%M:%S}  run after "
               f"{job.run_after:%Y-%m-%d %H:%M:%S}"
               + (f"  finished {job.finished_at:%Y-%m-%d %H:%M:%S}" if job.finished_at else ""))
    if job.last_error:
        click.echo(f"  last error: {short(job.last_error, 200)}")
    if job.result is not None:
        click.echo(f"  result: {short(str(job.result), 200)}")


@cli.group()
def jobs() -> None:
    """The tenant's job queue (store.jobs): list, get, wait, cancel, retry, stats."""


@jobs.command("list")
@click.option("--state", type=click.Choice(STATES), help="Only jobs in this state.")
@click.option("--kind", help="Only jobs of this kind.")
@click.option("--limit", type=int, default=50, show_default=True, help="At most this many.")
@json_option
def jobs_list(state: str | None, kind: str | None, limit: int, as_json: bool) -> None:
    """The tenant's jobs, newest first (with --as-subject: that subject's only)."""
    found = store().jobs.list(state=state, kind=kind, limit=limit)
    if as_json:
        emit_json([j.to_json() for j in found])
    elif not found:
        click.echo("no jobs")
    else:
        table(("id", "kind", "subject", "state", "attempts", "created", "last error"),
              [(str(j.id), j.kind, j.subject or "", j.state, f"{j.attempts}/{j.max_attempts}",
                f"{j.created_at:%Y-%m-%d %H:%M:%S}", short(j.last_error or "", 60))
               for j in found])


@jobs.command("get")
@click.argument("job_id")
@json_option
def jobs_get(job_id: str, as_json: bool) -> None:
    """One job by id: its state, attempts, last error and result."""
    _show(store().jobs.get(job_id), as_json)


@jobs.command("wait")
@click.argument("job_id")
@click.option("--timeout", type=float, default=60.0, show_default=True,
              help="Seconds to wait for the job to finish (done, dead or cancelled).")
@json_option
def jobs_wait(job_id: str, timeout: float, as_json: bool) -> None:
    """Wait until a job is finished, then show it (exit status 1 if it is not done)."""
    try:
        job = store().jobs.wait(job_id, timeout=timeout)
    except TimeoutError as exc:
        raise click.ClickException(str(exc)) from None
    _show(job, as_json)
    if job.state != "done":
        raise SystemExit(1)


@jobs.command("cancel")
@click.argument("job_id")
@json_option
def jobs_cancel(job_id: str, as_json: bool) -> None:
    """Cancel a job that is not being handled (it is never run)."""
    _show(store().jobs.cancel(job_id), as_json)


@jobs.command("retry")
@click.argument("job_id")
@json_option
def jobs_retry(job_id: str, as_json: bool) -> None:
    """Queue a dead, failed or cancelled job again now."""
    _show(store().jobs.retry(job_id), as_json)


@jobs.command("stats")
@json_option
def jobs_stats(as_json: bool) -> None:
    """Queue depth by state, the age of the oldest due job, the last hour's throughput."""
    stats = store().jobs.stats()
    if as_json:
        emit_json(stats)
    else:
        for key, value in stats.items():
            click.echo(f"{key:<20} {value if value is not None else '-'}")


@cli.command()
@click.option("--tenant", "tenants", multiple=True,
              help="Only this tenant's jobs (repeatable). Default: every tenant.")
@click.option("--until-idle", is_flag=True,
              help="Drain: exit once no job is due (instead of waiting for new ones).")
@click.option("--concurrency", type=click.IntRange(1, 256), default=1, show_default=True,
              help="Jobs handled at once (threads).")
@click.option("--kind", "kinds", multiple=True,
              help="Only jobs of this kind (repeatable). Default: every registered kind.")
@click.option("--import", "modules", multiple=True, metavar="MODULE",
              help="Import this Python module first (repeatable): it registers handlers "
                   "on memdb.families.jobs.handlers.")
@click.option("--lease", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
              help="Seconds a claimed job stays reserved if this worker dies.")
@click.option("--poll-interval", type=click.FloatRange(min=0.1), default=30.0,
              show_default=True, help="Longest idle sleep without a notification.")
@json_option
@click.pass_context
def worker(ctx: click.Context, tenants: tuple[str, ...], until_idle: bool, concurrency: int,
           kinds: tuple[str, ...], modules: tuple[str, ...], lease: float,
           poll_interval: float, as_json: bool) -> None:
    """Run queued jobs: claims them across tenants (fairly, FOR UPDATE SKIP LOCKED), wakes on
    NOTIFY, stops gracefully on SIGTERM or Ctrl-C (jobs being handled finish first)."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise InvalidInput(f"cannot import {module!r}: {exc}") from None
    state = ctx.find_object(State)
    dsn = None if state.dsn_from_env else state.dsn

    def factory(tenant: str) -> Any:
        return MemoryStore(dsn, tenant=tenant, pool_size=2)

    runner = Worker(dsn, concurrency=concurrency, tenants=list(tenants) or None,
                    kinds=list(kinds) or None, lease=lease, poll_interval=poll_interval,
                    store_factory=factory)
    if not runner.kinds:
        raise InvalidInput("no job handler is registered: name the modules that register "
                           "them with --import")
    if not as_json:
        click.echo(f"worker {runner.id}: kinds {', '.join(runner.kinds)}", err=True)
    counts = runner.run(until_idle=until_idle, handle_signals=True)
    if as_json:
        emit_json(counts)
    else:
        click.echo(", ".join(f"{k} {v}" for k, v in counts.items()))
