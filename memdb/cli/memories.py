"""Commands over single memories: migrate, add, get, list, update, delete, history, count,
mark-used."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import Any

import click

from ..core.errors import InvalidInput, Rejected
from ..core.models import Category, Kind, Scope, SourceType
from ..core.ops import catalog as ops
from ..core.ops import families as fam
from ..write.gate import DEFAULT_POLICY
from . import files
from ._app import cli, emit_json, json_option, options, store
from ._format import print_history, print_memory, provenance, short, table
from ._generate import declared
from ._shared import FINITE, filter_args, filter_options, parse_metadata, values


@cli.command()
@json_option
def migrate(as_json: bool) -> None:
    """Create or upgrade the memdb schema to the newest revision."""
    revision = store().migrate()
    if as_json:
        emit_json({"revision": revision})
    else:
        click.echo(f"schema at revision {revision}")


def _content(_: click.Context, __: click.Parameter, value: str | None) -> str | None:
    return None if value is None else _CONTENT.check(value)


_CONTENT = next(p for p in ops.ADD.params if p.name == "content")


@cli.command()
@click.argument("text", metavar="CONTENT", required=False, callback=_content)
@declared(ops.ADD, skip=("source", "content"))
@options(
    (["--scope"], {"default": "user", "show_default": True, "help": f"One of: {values(Scope)}."}),
    (["--agent"], {"help": "The agent that wrote the memory."}),
    (["--project-id"], {"help": "Project id (needed with --scope project)."}),
    (["--confidence"], {"type": FINITE, "default": 1.0, "show_default": True,
                        "help": "How sure the source is, 0 to 1."}),
    (["--source-type"], {"default": "user_statement", "show_default": True,
                         "help": f"Provenance, one of: {values(SourceType)}."}),
    (["--source-id"], {"help": "Where exactly it came from (message id, file, URL...). "
                                "Default for a user_statement: the command line itself, "
                                "cli:<UTC time>."}),
    (["--created-by"], {"help": "Who or what recorded it."}),
    (["--metadata"], {"help": "A JSON object stored with the memory."}),
    (["--ttl"], {"type": FINITE, "help": "Expire after this many seconds."}),
    (["--expires-at"], {"help": "Expire at this ISO 8601 time."}),
    (["--norm-key"], {"help": "A stable key for the fact (a later memory with it supersedes)."}),
    (["--rule"], {"is_flag": True,
                  "help": "Mark it as a rule explicitly (the gate then needs no rule cue)."}),
    (["--dry-run"], {"is_flag": True,
                     "help": "Show what would happen (the gate's decision and the outcome); "
                             "write nothing."}),
    (["--no-gate"], {"is_flag": True,
                     "help": "Skip the write gate's checks (TTL defaults and merging stay)."}),
    *files.FILE_OPTIONS,
)
@json_option
@click.pass_context
def add(ctx: click.Context, text: str | None, as_json: bool, reason: str | None,
        metadata: str | None, tags: list[str] | None, dry_run: bool, no_gate: bool,
        file: str | None, name: str | None, ocr: str | None, no_caption: bool,
        keep_bytes: int | None, **fields: Any) -> None:
    """Remember CONTENT ("-" reads it from stdin), through the write gate; or, with --file
    PATH, the image at PATH as a perceptual memory (docs/perceptual.md).

    Facts and rules need a source: a user_statement (the default) typed here without
    --source-id is recorded as coming from the command line (cli:<UTC time>); other source
    types need --source-id. Model inferences become hypotheses. Identical text in
    the same scope is not stored twice (the existing memory is bumped); a near duplicate is
    merged; a new version of a --norm-key slot, or a correction ("不是A，是B"), supersedes
    the old one. A refused memory prints the gate's reasons and exits with status 1. Without
    --category the category is classified from the text (memdb.write.classify).

    CONTENT: The memory: one self-contained statement.
    """
    if file is not None:
        if text is not None:
            raise click.UsageError("give CONTENT or --file, not both")
        others = files.given(ctx, {p.name for p in ctx.command.params}
                             - set(files.TEXT_ONLY_ALLOWED))
        if others:
            raise click.UsageError(f"--file does not take {', '.join(others)}")
        files.remember_file(file, as_json=as_json, subject=fields["subject"], name=name,
                            ocr=ocr, no_caption=no_caption, keep_bytes=keep_bytes, tags=tags,
                            reason=reason)
        return
    if text is None:
        raise click.UsageError("Missing argument 'CONTENT' (or --file PATH).")
    file_only = files.given(ctx, files.FILE_ONLY)
    if file_only:
        raise click.UsageError(f"{', '.join(file_only)} only go with --file")
    content = text
    if content == "-":  # a UTF-8 BOM (Windows editors, PowerShell pipes) is not content
        content = sys.stdin.read().removeprefix("\ufeff")
    fields["source_id"] = command_line_source(fields["source_type"], fields["source_id"])
    result = store().add_many([{"content": content, "metadata": parse_metadata(metadata),
                                "tags": tags, **fields}],
                              reason=reason, bypass_gate=no_gate, dry_run=dry_run)[0]
    if as_json:
        emit_json(result.to_dict())
    else:
        click.echo(f"{result.id or '-'} {result.outcome}{' (dry run)' if dry_run else ''}")
        for line in result.reasons:
            click.echo(f"  {line}")
    if result.rejected:
        hint = ("; name the source with --source-id" if fields["source_id"] is None
                and any(r.startswith("no_source") for r in result.reasons) else "")
        raise Rejected("the write gate refused the memory: " + "; ".join(result.reasons)
                       + hint, result.reasons)


def command_line_source(source_type: str, source_id: str | None) -> str | None:
    """The source of a memory typed on the command line: ``source_id`` when given; for a
    user_statement without one, the command line itself, ``cli:<UTC time>`` (the gate's
    provenance: who said it and when); for any other source type none (that source is not
    the command line: the gate asks for --source-id)."""
    if source_id is not None or source_type != SourceType.USER_STATEMENT.value:
        return source_id
    return "cli:" + datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@cli.command()
@click.argument("texts", metavar="TEXT...", nargs=-1, required=True)
@options(
    (["--kind"], {"default": "semantic", "show_default": True,
                  "help": f"One of: {values(Kind)}."}),
    (["--category"], {"default": "general", "show_default": True,
                      "help": f"One of: {values(Category)}."}),
    (["--source-type"], {"default": "user_statement", "show_default": True,
                         "help": f"Provenance, one of: {values(SourceType)}."}),
    (["--source-id"], {"help": "Where exactly it came from (message id, file, URL...)."}),
    (["--rule"], {"is_flag": True, "help": "Mark them as rules explicitly."}),
)
@json_option
def gate(texts: tuple[str, ...], as_json: bool, **fields: Any) -> None:
    """Show the write gate's decision on each TEXT, as `memdb add` would meet it (a
    user_statement without --source-id comes from the command line); nothing is embedded or
    written."""
    fields["source_id"] = command_line_source(fields["source_type"], fields["source_id"])
    decisions = DEFAULT_POLICY.decide_many([{"content": t, **fields} for t in texts])
    if as_json:
        emit_json([{"content": t, **d.to_dict()} for t, d in zip(texts, decisions, strict=True)])
        return
    for text, decision in zip(texts, decisions, strict=True):
        click.echo(f"{decision.outcome:<10} {decision.role:<7} {short(text)}")
        for line in decision.reasons:
            click.echo(f"  {line}")


@cli.command()
@declared(ops.GET)
@json_option
def get(memory: str, as_json: bool) -> None:
    """Show one memory by its id or URI (mem://subject/category/id)."""
    found = store().get(memory)
    if as_json:
        emit_json(found.to_dict())
    else:
        print_memory(found)


@cli.command("list")
@filter_options
@click.option("--limit", type=int, default=100, show_default=True, help="At most this many.")
@click.option("--offset", type=int, default=0, show_default=True, help="Skip this many first.")
@json_option
def list_(limit: int, offset: int, as_json: bool, **filters: Any) -> None:
    """List current memories passing the filters, newest first."""
    memories = store().list(limit=limit, offset=offset, **filter_args(filters))
    if as_json:
        emit_json([m.to_dict() for m in memories])
    elif not memories:
        click.echo("no memories match", err=True)
    else:
        table(["id", "kind", "category", "subject", "provenance", "content"],
               [[str(m.id), m.kind.value, m.category.value, m.subject, provenance(m),
                 short(m.content)] for m in memories])


@cli.command("mark-used")
@click.argument("memory_ids", metavar="ID...", nargs=-1, required=True)
@click.option("--subject", help="Whose use to record (default: each memory's own subject).")
@json_option
def mark_used(memory_ids: tuple[str, ...], subject: str | None, as_json: bool) -> None:
    """Record that these memories were used (e.g. cited); hotness ranking reads it."""
    n = store().mark_used(memory_ids, subject=subject)
    if as_json:
        emit_json({"marked": n})
    else:
        click.echo(f"marked {n} memories as used")


@cli.command()
@declared(ops.GET)  # the memory by id or URI, as get takes it
@declared(ops.UPDATE, skip=("id", "source"))
@options(
    (["--kind"], {"help": f"One of: {values(Kind)}."}),
    (["--agent"], {"help": "The agent that wrote the memory."}),
    (["--confidence"], {"type": FINITE, "help": "How sure the source is, 0 to 1."}),
    (["--source-type"], {"help": f"Provenance, one of: {values(SourceType)}."}),
    (["--source-id"], {"help": "Where exactly it came from."}),
    (["--norm-key"], {"help": "A stable key for the fact."}),
    (["--metadata"], {"help": "Replace the metadata with this JSON object."}),
    (["--ttl"], {"type": FINITE, "help": "Expire this many seconds from now."}),
    (["--expires-at"], {"help": "Expire at this ISO 8601 time."}),
    (["--no-expiry"], {"is_flag": True, "help": "Never expire."}),
    (["--no-gate"], {"is_flag": True,
                     "help": "Skip the write gate's checks of the changed memory."}),
)
@json_option
def update(memory: str, as_json: bool, reason: str | None, no_expiry: bool,
           no_gate: bool, **options: Any) -> None:
    """Change fields of the memory (its id or URI, mem://subject/category/id); its version
    goes up by one. --tag replaces the tags."""
    changes = {k: val for k, val in options.items() if val is not None and val != ()}
    if "metadata" in changes:
        changes["metadata"] = parse_metadata(changes["metadata"])
    if no_expiry:
        if "ttl" in changes or "expires_at" in changes:
            raise InvalidInput("give --no-expiry or --ttl/--expires-at, not both")
        changes["expires_at"] = None
    changed = store().update(memory, reason=reason, bypass_gate=no_gate, **changes)
    if as_json:
        emit_json(changed.to_dict())
    else:
        print_memory(changed)


@cli.command()
@declared(ops.GET)  # the memory by id or URI, as get takes it
@declared(ops.DELETE, skip=("id",))
@json_option
def delete(memory: str, reason: str | None, as_json: bool) -> None:
    """Delete the memory (its id or URI, mem://subject/category/id); its history is kept."""
    store().delete(memory, reason=reason)
    if as_json:
        emit_json({"id": memory, "deleted": True})
    else:
        click.echo(f"deleted {memory}")


@cli.command()
@declared(fam.HISTORY)
@json_option
def history(memory: str, as_json: bool) -> None:
    """Show every recorded change of the memory (its id or URI, mem://subject/category/id).

    Oldest first; the history survives the memory's deletion.
    """
    entries = store().history(memory)
    if as_json:
        emit_json([e.to_dict() for e in entries])
    else:
        print_history(entries)


@cli.command()
@json_option
def count(as_json: bool) -> None:
    """Count this tenant's rows (all versions, expired included)."""
    n = store().count()
    if as_json:
        emit_json({"count": n})
    else:
        click.echo(str(n))


