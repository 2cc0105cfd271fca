"""Commands of the agent loop: profile (a subject's profile as one JSON document) and
task-end (record how a task ended: patterns, proposed rules or a reflection)."""

from __future__ import annotations

import click

from ..core.ops import families as fam
from ..retrieval.profile import LABELS, SECTIONS
from ._app import cli, emit_json, json_option, store
from ._generate import declared


@cli.command()
@declared(fam.PROFILE)
@json_option
def profile(subject: str | None, limit: int, as_json: bool) -> None:
    """Print SUBJECT's profile: communication style, stable facts (an allergy, a birthday,
    where they live...), preferences, expertise, habits and lessons, derived from its current
    memories; each item with the ids of the memories it came from (memdb.subject_profile in
    SQL)."""
    doc = store().profile(subject, limit=limit)
    if as_json:
        emit_json(doc)
        return
    if not doc["memory_ids"]:
        click.echo(f"no profile for {doc.get('subject', subject)!r} yet (no matching "
                   "memories)")
        return
    for section in SECTIONS:
        if not doc[section]:
            continue
        click.echo(f"{section} ({LABELS['zh'][section]}):")
        for item in doc[section]:
            click.echo(f"  - {item['content']}  [{item['importance']:.2f}] "
                       f"{', '.join(item['memory_ids'])}")


@cli.command("task-end")
@click.option("--session", required=True, help="The session the task ran in.")
@click.option("--outcome", required=True, type=click.Choice(["success", "failure"]),
              help="How the task ended.")
@click.option("--summary", required=True, help="What happened (\"-\" reads stdin).")
@click.option("--subject", help="Whose memories (default: default).")
@click.option("--task", help="What the task was (default: the session's working-state goal).")
@click.option("--rule", "rules", multiple=True,
              help="A rule to propose into the review queue (repeatable).")
@click.option("--fix", help="failure: what to do first next time.")
@click.option("--task-id", help="The provenance source_id (default: a hash of the call).")
@click.option("--no-llm", is_flag=True, help="Phrase the reflection offline even if "
                                             "MEMDB_LLM_MODEL is set.")
@click.option("--dry-run", is_flag=True, help="Show the gate's decisions; write nothing.")
@json_option
def task_end(session: str, outcome: str, summary: str, subject: str | None, task: str | None,
             rules: tuple[str, ...], fix: str | None, task_id: str | None, no_llm: bool,
             dry_run: bool, as_json: bool) -> None:
    """Record how a task ended: on success the summary becomes a pattern memory and its rule
    sentences are proposed for review; on failure a reflection phrased as an actionable rule
    ("下次…时，先…" / "Next time, … before …") is written. Both pass the write gate."""
    if summary == "-":
        summary = click.get_text_stream("stdin").read()
    kwargs = {"llm": None} if no_llm else {}
    result = store().task_end(session, outcome=outcome, summary=summary, subject=subject,
                              task=task, rules=list(rules), fix=fix, task_id=task_id,
                              dry_run=dry_run, **kwargs)
    if as_json:
        emit_json(result.to_dict())
        return
    click.echo(f"task {result.source_id}: {result.outcome}"
               + (f" (reflection from {result.path})" if result.path else "")
               + (" (dry run)" if dry_run else ""))
    for w in result.writes:
        click.echo(f"{w.role:10} {w.outcome:16} {w.id or '-':36} {w.content}")
        for reason in w.reasons:
            click.echo(f"{'':11}{reason}")
