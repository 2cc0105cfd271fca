"""Lifecycle commands, grouped as the store's families: ``memdb maintenance run|sediment|
forget-by-importance|forget-by-age|forget-by-capacity|decay-hypotheses``, ``memdb session
summarize|consolidate``, ``memdb review list|approve|reject``, ``memdb subject
export|forget|summary``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from ..core.errors import InvalidInput
from ..core.ops import catalog as ops
from ..core.ops import families as fam
from ._app import CliError, cli, emit_json, json_option, store
from ._format import short, table
from ._generate import declared
from ._groups import maintenance, subject
from ._output import to_stdout, written
from ._shared import FINITE, pairs
from .session import session

_NUMERIC_OPTIONS = ("batch_limit", "importance_threshold", "age_days", "age_max_uses",
                    "capacity_per_session", "capacity_half_life_days",
                    "hypothesis_half_life_days", "hypothesis_floor", "hypothesis_min_step",
                    "lock_timeout_ms")


def _maintenance_options(steps: tuple[str, ...], settings: tuple[str, ...]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for key, value in (pairs(settings, "--set") or {}).items():
        if key not in _NUMERIC_OPTIONS:
            raise InvalidInput(f"unknown --set key {key!r}; known: {', '.join(_NUMERIC_OPTIONS)}")
        options[key] = int(value) if value.is_integer() else value
    if steps:
        options["steps"] = list(steps)
    return options


def _step_text(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return str(value)


def maintenance_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The options of `memdb maintenance run` and `memdb admin maintain`: --dry-run, --step, --set,
    --until-done, --json."""
    for option in reversed((
        click.option("--dry-run", is_flag=True,
                     help="Report what would be done (the pass runs and is rolled back)."),
        click.option("--step", "steps", multiple=True,
                     type=click.Choice(["purge_expired", "forget_importance", "forget_age",
                                        "forget_capacity", "hypotheses"]),
                     help="Run only these steps (repeatable). Default: all."),
        click.option("--set", "settings", multiple=True, metavar="KEY=NUMBER",
                     help=f"A step setting (repeatable): {', '.join(_NUMERIC_OPTIONS)}."),
        click.option("--until-done", is_flag=True,
                     help="Repeat passes while a step hit its batch limit (progress on stderr)."),
        json_option,
    )):
        f = option(f)
    return f


def run_maintenance(call: Callable[..., dict[str, Any]], *, dry_run: bool,
                    steps: tuple[str, ...], settings: tuple[str, ...], until_done: bool,
                    as_json: bool) -> None:
    """Run ``call(dry_run=..., **options)`` (a store's or the admin's maintain) once, or
    while it reports more to do with --until-done, and print the passes."""
    options = _maintenance_options(steps, settings)
    passes = []
    while True:
        result = call(dry_run=dry_run, **options)
        passes.append(result)
        if not (until_done and result.get("more")) or dry_run or result.get("skipped"):
            break
        click.echo(f"pass {len(passes)}: {result['steps']} (more to do)", err=True)
    final = passes[-1] if len(passes) == 1 else {**passes[-1], "passes": passes}
    if as_json:
        emit_json(final)
        return
    if result.get("skipped"):
        click.echo(f"skipped: {result.get('reason')}")
        return
    for n, p in enumerate(passes, 1):
        if len(passes) > 1:
            click.echo(f"pass {n}:")
        for step, value in p["steps"].items():
            click.echo(f"{step:<18} {_step_text(value)}")
    click.echo(("dry run: nothing changed" if dry_run else "done")
               + ("; more to do (run again)" if result.get("more") else ""))


@maintenance.command("run")
@maintenance_options
@click.option("--all-tenants", is_flag=True, hidden=True,
              help="Refused: maintenance over every tenant is `memdb admin maintain`.")
def maintain(dry_run: bool, steps: tuple[str, ...], settings: tuple[str, ...],
             all_tenants: bool, until_done: bool, as_json: bool) -> None:
    """Run maintenance on this tenant (--tenant; only --as-subject's rows when given): purge
    expired memories, forget by importance, age and capacity, and decay unconfirmed
    hypotheses (memdb.run_maintenance). Category system is never forgotten. Every tenant at
    once: `memdb admin maintain`, as the admin login.
    """
    if all_tenants:
        raise CliError("--all-tenants is refused: a store maintains only its own tenant; run "
                       "`memdb admin maintain` as the admin login (MEMDB_ADMIN_DSN) for every "
                       "tenant. Nothing was changed")
    run_maintenance(store().maintenance.run, dry_run=dry_run, steps=steps, settings=settings,
                    until_done=until_done, as_json=as_json)


@session.command("consolidate")
@declared(ops.CONSOLIDATE)
@click.option("--subject", help="Only this subject's memories of the session.")
@json_option
def consolidate(session_id: str, threshold: float, dry_run: bool, subject: str | None,
                as_json: bool) -> None:
    """Move SESSION_ID's important working memories to episodic (importance x 1.1, max 1)."""
    moved = store().sessions.consolidate(session_id, threshold=threshold, subject=subject,
                                         dry_run=dry_run)
    if as_json:
        emit_json({"dry_run": dry_run, "moved": [c.to_dict() for c in moved]})
    else:
        for c in moved:
            click.echo(f"{c.id}  {c.old_importance:.2f} -> {c.new_importance:.2f}")
        click.echo(f"{'would move' if dry_run else 'moved'} {len(moved)} memories to episodic")


@session.command("summarize")
@click.argument("session_id")
@click.option("--subject", help="Whose memories (needed when the session has several).")
@click.option("--max-sentences", type=int, default=5, show_default=True,
              help="At most this many sentences.")
@click.option("--offline", is_flag=True,
              help="Use the extractive summary even if an LLM is configured.")
@click.option("--dry-run", is_flag=True, help="Print the summary without storing it.")
@json_option
def summarize(session_id: str, subject: str | None, max_sentences: int, offline: bool,
              dry_run: bool, as_json: bool) -> None:
    """Summarize SESSION_ID's working memories into one episodic memory.

    Through the LLM of MEMDB_LLM_* when set, else (or when it fails) extractively, offline.
    """
    kwargs: dict[str, Any] = {"llm": None} if offline else {}
    s = store().sessions.summarize(session_id, subject=subject, max_sentences=max_sentences,
                                   dry_run=dry_run, **kwargs)
    if as_json:
        emit_json(s.to_dict())
        return
    why = f" ({s.fallback_reason})" if s.fallback_reason else ""
    click.echo(f"path: {s.path}{why}", err=True)
    click.echo(s.content)
    if s.memory_id:
        click.echo(f"{s.memory_id} {'created' if s.created else 'already stored'}", err=True)


@maintenance.command("sediment")
@click.option("--subject", help="Only this subject (default: every subject with summaries).")
@click.option("--days", type=int, default=30, show_default=True,
              help="Read the session summaries of the last DAYS days.")
@click.option("--min-sessions", type=int, default=3, show_default=True,
              help="A pattern must recur in at least this many summaries.")
@click.option("--dry-run", is_flag=True, help="Show what would be written; write nothing.")
@json_option
def sediment(subject: str | None, days: int, min_sessions: int, dry_run: bool,
             as_json: bool) -> None:
    """Extract preferences, decisions, lessons and patterns from session summaries into
    memories, and propose rules for review (idempotent per day and sources)."""
    results = store().maintenance.sediment(subject=subject, days=days,
                                           min_sessions=min_sessions, dry_run=dry_run)
    if as_json:
        emit_json([r.to_dict() for r in results])
        return
    if not results:
        click.echo("no session summaries in that window", err=True)
    for r in results:
        if r.skipped:
            click.echo(f"{r.subject}: already done today for these {r.summaries} summaries")
            continue
        verb = "would write" if dry_run else "wrote"
        click.echo(f"{r.subject}: {verb} {len(r.memories)} memories, proposed "
                   f"{len(r.proposed)} for review (from {r.summaries} summaries)")
        for m in [*r.memories, *r.proposed]:
            click.echo(f"  {m['class']:<10} {m['destination']:<6} {short(m['content'], 100)}")


@cli.group(invoke_without_command=True)
@json_option
@click.pass_context
def review(ctx: click.Context, as_json: bool) -> None:
    """The review queue: rules proposed by sedimentation become memories once approved
    (store.review).

    Without a subcommand: list the pending entries (as `memdb review list`).
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(review_list, status="pending", subject=None, limit=100, as_json=as_json)


@review.command("list")
@declared(fam.REVIEW_LIST)
@json_option
def review_list(status: str, subject: str | None, limit: int, as_json: bool) -> None:
    """List review-queue entries, oldest first."""
    items = store().review.list(None if status == "all" else status, subject=subject,
                                limit=limit)
    if as_json:
        emit_json([i.to_dict() for i in items])
    elif not items:
        click.echo("the review queue is empty", err=True)
    else:
        table(["id", "status", "subject", "reason", "content"],
              [[str(i.id), i.status, i.subject, i.reason or "-", short(i.content)] for i in items])


@review.command("approve")
@declared(fam.REVIEW_APPROVE)
@json_option
def review_approve(id: str, decided_by: str | None, as_json: bool) -> None:
    """Approve entry ID: its memory is created (category system for rules)."""
    memory_id = store().review.approve(id, decided_by=decided_by)
    if as_json:
        emit_json({"id": id, "status": "approved", "memory_id": str(memory_id)})
    else:
        click.echo(f"approved {id}: memory {memory_id}")


@review.command("reject")
@declared(fam.REVIEW_REJECT)
@json_option
def review_reject(id: str, decided_by: str | None, as_json: bool) -> None:
    """Reject entry ID (no memory; the same text is not proposed again)."""
    store().review.reject(id, decided_by=decided_by)
    if as_json:
        emit_json({"id": id, "status": "rejected"})
    else:
        click.echo(f"rejected {id}")


@subject.command("forget")
@declared(fam.SUBJECT_FORGET)
@click.option("--export", "export_to", metavar="PATH",
              help="First write everything about SUBJECT to this new JSON file (\"-\": "
                   "standard output; the counts then go to standard error).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
def forget_subject(subject: str, dry_run: bool, export_to: str | None, yes: bool,
                   as_json: bool) -> None:
    """Erase everything about SUBJECT in this tenant: memories, their history, usage, review
    entries, sediment runs, and its BM25 terms. Asks first unless --yes."""
    if not (yes or dry_run) and not click.confirm(
            f"Erase every memory and trace of subject {subject!r} in tenant "
            f"{store().tenant!r}? This cannot be undone", err=True):
        raise CliError("not confirmed: nothing was deleted")
    err = to_stdout(export_to) and not dry_run
    with written(export_to or "", "export.json") as target:
        result = store().subjects.forget(subject, export_to=target if export_to else None,
                                         dry_run=dry_run)
    if as_json:
        data = result.to_dict()
        if err:
            data["exported_to"] = "-"
        click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str), err=err)
        return
    for name, n in result.counts.items():
        click.echo(f"{name:<16} {n}", err=err)
    if result.exported_to:
        click.echo("exported to standard output" if err
                   else f"exported to {result.exported_to}", err=err)
    click.echo(f"dry run: nothing deleted from subject {subject!r}" if dry_run
               else f"erased subject {subject!r}", err=err)


@subject.command("export")
@declared(fam.SUBJECT_EXPORT)
@click.argument("path")
@json_option
def export_subject(subject: str, path: str, as_json: bool) -> None:
    """Write everything about SUBJECT to PATH as JSON (refuses to overwrite a file; "-":
    standard output, the row counts then on standard error)."""
    with written(path, "export.json") as target:
        counts = store().subjects.export(subject, target)
    err = to_stdout(path)
    if as_json:
        click.echo(json.dumps({"subject": subject, "path": path, "rows": counts},
                              ensure_ascii=False, indent=2), err=err)
    else:
        for name, n in counts.items():
            click.echo(f"{name:<16} {n}", err=err)
        click.echo("exported to standard output" if err else f"exported to {path}", err=err)


@subject.command("summary")
@click.argument("name", metavar="SUBJECT", required=False)
@declared(ops.SUMMARY)
@json_option
def subject_summary(name: str | None, k: int, as_json: bool) -> None:
    """Counts of SUBJECT's current memories by kind and category, and its most important
    ones (every visible subject's without SUBJECT)."""
    result = store().subjects.summary(subject=name, k=k)
    if as_json:
        emit_json(result)
        return
    click.echo(f"total {result['total']}")
    click.echo("by kind      " + ", ".join(f"{k} {n}" for k, n in result["by_kind"].items()))
    click.echo("by category  " + ", ".join(f"{k} {n}" for k, n in result["by_category"].items()))
    for m in result["top"]:
        click.echo(f"  {m['importance']:.2f} {m['kind']:<10} {m['category']:<11} "
                   f"{short(m['content'])}")


def _print_ids(ids: list[Any], dry_run: bool, as_json: bool, what: str) -> None:
    if as_json:
        emit_json({"dry_run": dry_run, "ids": [str(i) for i in ids]})
        return
    for i in ids:
        click.echo(str(i))
    click.echo(f"{'would forget' if dry_run else 'forgot'} {len(ids)} memories ({what})",
               err=True)


_dry_run = click.option("--dry-run", is_flag=True, help="Only list what would be forgotten.")
_limit = click.option("--limit", type=int, default=1000, show_default=True,
                      help="At most this many.")


@maintenance.command("forget-by-importance")
@click.option("--threshold", type=FINITE, default=0.1, show_default=True,
              help="Forget current memories with importance below this (never system).")
@_limit
@_dry_run
@json_option
def forget_by_importance(threshold: float, limit: int, dry_run: bool, as_json: bool) -> None:
    """Forget unimportant memories (importance below --threshold; never category system)."""
    ids = store().maintenance.forget_by_importance(threshold, limit=limit, dry_run=dry_run)
    _print_ids(ids, dry_run, as_json, f"importance < {threshold}")


@maintenance.command("forget-by-age")
@click.option("--days", type=FINITE, default=180, show_default=True,
              help="Forget memories older than this, not used in that time.")
@click.option("--max-uses", type=int, default=0, show_default=True,
              help="... used at most this many times.")
@_limit
@_dry_run
@json_option
def forget_by_age(days: float, max_uses: int, limit: int, dry_run: bool,
                  as_json: bool) -> None:
    """Forget old, unused memories (never category system)."""
    ids = store().maintenance.forget_by_age(days, max_uses=max_uses, limit=limit,
                                            dry_run=dry_run)
    _print_ids(ids, dry_run, as_json, f"older than {days} days")


@maintenance.command("forget-by-capacity")
@click.option("--max-per-session", type=int, default=100, show_default=True,
              help="Keep at most this many working memories per session.")
@click.option("--half-life-days", type=FINITE, default=7, show_default=True,
              help="Time decay of importance when choosing which to keep.")
@_limit
@_dry_run
@json_option
def forget_by_capacity(max_per_session: int, half_life_days: float, limit: int,
                       dry_run: bool, as_json: bool) -> None:
    """Keep each session's most valuable working memories, forget the rest."""
    ids = store().maintenance.forget_by_capacity(max_per_session,
                                                 half_life_days=half_life_days,
                                                 limit=limit, dry_run=dry_run)
    _print_ids(ids, dry_run, as_json, f"over {max_per_session} per session")


@maintenance.command("decay-hypotheses")
@click.option("--half-life-days", type=FINITE, default=7, show_default=True,
              help="Confidence halves in this many days without confirmation.")
@click.option("--floor", type=FINITE, default=0.2, show_default=True,
              help="Forget hypotheses whose confidence falls below this.")
@_limit
@_dry_run
@json_option
def decay_hypotheses(half_life_days: float, floor: float, limit: int, dry_run: bool,
                     as_json: bool) -> None:
    """Decay the confidence of unconfirmed hypotheses; forget those below --floor."""
    changes = store().maintenance.decay_hypotheses(half_life_days, floor, limit=limit,
                                                   dry_run=dry_run)
    if as_json:
        emit_json({"dry_run": dry_run, "changes": [c.to_dict() for c in changes]})
        return
    for c in changes:
        click.echo(f"{c.id}  {c.old_confidence:.2f} -> {c.new_confidence:.2f}  {c.action}")
    click.echo(f"{'would change' if dry_run else 'changed'} {len(changes)} hypotheses",
               err=True)
