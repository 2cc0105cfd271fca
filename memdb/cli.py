"""The ``memdb`` command line: one command per :class:`~memdb.MemoryStore` method.

Every command takes ``--json`` for machine-readable output. A memdb error prints
``error: <message>`` on stderr and exits with status 1 (click's usage errors exit with 2).

    memdb add "Alice prefers green tea" --subject alice --category preferences
    memdb search "what does Alice drink?" --subject alice --json
"""

from __future__ import annotations

import json
import sys
import time
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any

import click
import psycopg

from .demo import summarize_hit
from .errors import InvalidInput, MemdbError, translate
from .models import Category, HistoryEntry, Kind, Memory, Scope, SourceType
from .store import MemoryStore

__all__ = ["cli", "main"]

CONTENT_CHARS = 160  # content is cut to this many characters in list and search tables


def _values(enum_type: type) -> str:
    return ", ".join(m.value for m in enum_type)


class CliError(click.ClickException):
    """A memdb error, shown as ``error: <message>`` with exit status 1."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemdbError as exc:
            raise CliError(str(exc) or type(exc).__name__) from exc
        except psycopg.Error as exc:  # the store translates these; this is the safety net
            raise CliError(str(translate(exc))) from exc


class _State:
    """The global options, and the store opened on first use (closed when the command ends)."""

    def __init__(self, dsn: str | None, tenant: str) -> None:
        self.dsn, self.tenant = dsn, tenant
        self._store: MemoryStore | None = None
        self.opened_ms = 0.0

    def store(self) -> MemoryStore:
        if self._store is None:
            start = time.perf_counter()
            self._store = MemoryStore(self.dsn, tenant=self.tenant)
            self.opened_ms = (time.perf_counter() - start) * 1000
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


def _store() -> MemoryStore:
    return click.get_current_context().find_object(_State).store()


# -- output -------------------------------------------------------------------------------
def _emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _short(text: str, limit: int = CONTENT_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Columns padded to their widest cell (CJK counts double); the last is left ragged."""
    widths = [max(_width(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        cells = [c + " " * (w - _width(c)) for c, w in zip(row, widths, strict=False)]
        click.echo("  ".join([*cells, row[-1]]).rstrip())


def _provenance(m: Memory) -> str:
    return f"{m.source_type.value}:{m.source_id or '-'}"


def _print_hits(hits: Sequence[dict[str, Any]], with_id: bool = False) -> None:
    """Ranked hits (as :func:`memdb.demo.summarize_hit` dicts) as a table."""
    header = ["#", "score", "kind", "category", "subject", "provenance", "routes", "content"]
    rows = [[str(h["rank"]), f"{h['score']:.3f}", h["kind"], h["category"], h["subject"],
             f"{h['source_type']}:{h['source_id'] or '-'}",
             " ".join(f"{r}:{n}" for r, n in h["routes"].items()) or "-",
             _short(h["content"])] for h in hits]
    if with_id:
        header.insert(1, "id")
        for row, h in zip(rows, hits, strict=True):
            row.insert(1, h["id"])
    _table(header, rows)


def _print_memory(m: Memory) -> None:
    for key, value in m.to_dict().items():
        if isinstance(value, (dict, list)):
            value = json.dumps(value, ensure_ascii=False)
        click.echo(f"{key:<17} {'-' if value is None else value}")


def _print_history(entries: Sequence[HistoryEntry]) -> None:
    for e in entries:
        row = e.after or e.before or {}
        changed = ""
        if e.before and e.after:
            keys = [k for k in e.after if k not in ("updated_at", "version")
                    and e.before.get(k) != e.after[k]]
            changed = f"  changed: {', '.join(keys) or '-'}"
        click.echo(f"{e.at.isoformat()}  {e.op:<7} v{row.get('version', '?')}  "
                   f"actor={e.actor or '-'}  reason={e.reason or '-'}{changed}")
        click.echo(f"    {_short(str(row.get('content', '')))}")


# -- option helpers ------------------------------------------------------------------------
def _json_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True,
                        help="Print one JSON document instead of text.")(f)


def _options(*specs: tuple[Sequence[str], dict[str, Any]]) -> Callable[..., Any]:
    def apply(f: Callable[..., Any]) -> Callable[..., Any]:
        for names, kwargs in reversed(specs):
            f = click.option(*names, **kwargs)(f)
        return f
    return apply


def _parse_metadata(text: str | None) -> dict[str, Any] | None:
    """``--metadata`` as a dict; InvalidInput (exit 1) when it is not a JSON object."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"--metadata is not valid JSON ({exc.msg} at column {exc.colno}): "
                           f"{text!r}") from None
    if not isinstance(value, dict):
        raise InvalidInput('--metadata must be a JSON object, such as \'{"lang": "zh"}\'')
    return value


_filter_options = _options(
    (["--subject"], {"help": "Only this subject (whose memory: a user or an agent)."}),
    (["--kind"], {"multiple": True, "help": f"Only these kinds (repeatable): {_values(Kind)}."}),
    (["--category"], {"multiple": True,
                      "help": f"Only these categories (repeatable): {_values(Category)}."}),
    (["--scope"], {"help": f"Only this scope: {_values(Scope)}."}),
    (["--agent"], {"help": "Only memories written by this agent."}),
    (["--project-id"], {"help": "Only this project's memories."}),
    (["--session-id"], {"help": "Only this session's memories."}),
    (["--source-type"], {"multiple": True,
                         "help": f"Only these provenances (repeatable): {_values(SourceType)}."}),
    (["--tag", "tags"], {"multiple": True, "help": "Only memories carrying this tag "
                         "(repeatable: all are required)."}),
    (["--any-tag", "tags_any"], {"multiple": True,
                                 "help": "Only memories carrying at least one of these tags."}),
    (["--min-importance"], {"type": float, "help": "Only importance >= this (0 to 1)."}),
    (["--metadata"], {"help": "Only memories whose metadata contains this JSON object."}),
    (["--created-after"], {"help": "Only memories created after this ISO 8601 time."}),
    (["--created-before"], {"help": "Only memories created before this ISO 8601 time."}),
    (["--as-of"], {"help": "See the versions that were current at this ISO 8601 time."}),
    (["--include-expired"], {"is_flag": True, "help": "Also show expired memories."}),
)


def _filter(opts: dict[str, Any]) -> dict[str, Any]:
    """The filter keywords of MemoryStore.list/search from the parsed filter options."""
    out = {k: (list(val) if isinstance(val, tuple) else val) for k, val in opts.items()
           if val is not None and val != () and val is not False}
    if "metadata" in out:
        out["metadata"] = _parse_metadata(out["metadata"])
    return out


# -- commands ------------------------------------------------------------------------------
@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--dsn", envvar="MEMDB_DSN", show_envvar=True, metavar="URL",
              help="PostgreSQL URL. Default: $MEMDB_DSN, else the embedded server "
                   "(in $MEMDB_HOME or the per-user data folder).")
@click.option("--tenant", default="default", show_default=True,
              help="The tenant (isolation boundary) every command works in.")
@click.version_option(package_name="memdb")
@click.pass_context
def cli(ctx: click.Context, dsn: str | None, tenant: str) -> None:
    """memdb: Postgres-native long-term memory for AI agents."""
    state = _State(dsn or None, tenant)
    ctx.obj = state
    ctx.call_on_close(state.close)


@cli.command()
@_json_option
def migrate(as_json: bool) -> None:
    """Create or upgrade the memdb schema to the newest revision."""
    revision = _store().migrate()
    if as_json:
        _emit_json({"revision": revision})
    else:
        click.echo(f"schema at revision {revision}")


@cli.command()
@click.argument("text")
@_options(
    (["--subject"], {"default": "default", "show_default": True,
                     "help": "Whose memory it is (a user or an agent)."}),
    (["--kind"], {"default": "semantic", "show_default": True,
                  "help": f"One of: {_values(Kind)}."}),
    (["--category"], {"default": "general", "show_default": True,
                      "help": f"One of: {_values(Category)}."}),
    (["--scope"], {"default": "user", "show_default": True, "help": f"One of: {_values(Scope)}."}),
    (["--agent"], {"help": "The agent that wrote the memory."}),
    (["--project-id"], {"help": "Project id (needed with --scope project)."}),
    (["--session-id"], {"help": "Session id (needed with --scope session)."}),
    (["--importance"], {"type": float, "default": 0.5, "show_default": True,
                        "help": "How much the memory matters, 0 to 1."}),
    (["--confidence"], {"type": float, "default": 1.0, "show_default": True,
                        "help": "How sure the source is, 0 to 1."}),
    (["--source-type"], {"default": "user_statement", "show_default": True,
                         "help": f"Provenance, one of: {_values(SourceType)}."}),
    (["--source-id"], {"help": "Where exactly it came from (message id, file, URL...)."}),
    (["--created-by"], {"help": "Who or what recorded it."}),
    (["--tag", "tags"], {"multiple": True, "help": "A tag (repeatable)."}),
    (["--metadata"], {"help": "A JSON object stored with the memory."}),
    (["--ttl"], {"type": float, "help": "Expire after this many seconds."}),
    (["--expires-at"], {"help": "Expire at this ISO 8601 time."}),
    (["--norm-key"], {"help": "A stable key for the fact (a later memory with it supersedes)."}),
    (["--reason"], {"help": "Why, recorded in the history."}),
)
@_json_option
def add(text: str, as_json: bool, reason: str | None, metadata: str | None,
        tags: tuple[str, ...], **fields: Any) -> None:
    """Remember TEXT ("-" reads it from stdin).

    Identical text in the same scope is not stored twice: the existing memory is bumped.
    """
    if text == "-":
        text = sys.stdin.read()
    result = _store().add(text, reason=reason, metadata=_parse_metadata(metadata),
                          tags=list(tags) or None, **fields)
    if as_json:
        _emit_json({"id": str(result.id), "created": result.created})
    else:
        status = "created" if result.created else "deduplicated (already stored)"
        click.echo(f"{result.id} {status}")


@cli.command()
@click.argument("memory_id", metavar="ID")
@_json_option
def get(memory_id: str, as_json: bool) -> None:
    """Show one memory by its ID."""
    memory = _store().get(memory_id)
    if as_json:
        _emit_json(memory.to_dict())
    else:
        _print_memory(memory)


@cli.command("list")
@_filter_options
@click.option("--limit", type=int, default=100, show_default=True, help="At most this many.")
@click.option("--offset", type=int, default=0, show_default=True, help="Skip this many first.")
@_json_option
def list_(limit: int, offset: int, as_json: bool, **filters: Any) -> None:
    """List current memories passing the filters, newest first."""
    memories = _store().list(limit=limit, offset=offset, **_filter(filters))
    if as_json:
        _emit_json([m.to_dict() for m in memories])
    elif not memories:
        click.echo("no memories match", err=True)
    else:
        _table(["id", "kind", "category", "subject", "provenance", "content"],
               [[str(m.id), m.kind.value, m.category.value, m.subject, _provenance(m),
                 _short(m.content)] for m in memories])


def _pairs(values: Sequence[str], option: str) -> dict[str, float] | None:
    """``NAME=NUMBER`` options (``--weight bm25=0.5``) as a dict; InvalidInput otherwise."""
    out: dict[str, float] = {}
    for item in values:
        name, sep, number = item.partition("=")
        try:
            out[name.strip()] = float(number)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise InvalidInput(f"{option} takes NAME=NUMBER, got {item!r}")
    return out or None


@cli.command()
@click.argument("query")
@click.option("-k", "--k", "k", type=int, default=10, show_default=True,
              help="How many hits to return.")
@_filter_options
@_options(
    (["--route", "routes"], {"multiple": True,
                             "help": "Run only these routes (repeatable): vector, bm25, exact."}),
    (["--weight", "weights"], {"multiple": True, "metavar": "ROUTE=W",
                               "help": "RRF weight of a route (repeatable), e.g. bm25=0.5."}),
    (["--mmr"], {"type": float, "metavar": "LAMBDA",
                 "help": "Diversify the hits with MMR (lambda 0 to 1; 1 = relevance only)."}),
    (["--decay"], {"multiple": True, "metavar": "KEY=VALUE",
                   "help": "Score multiplier settings (repeatable): decay_weight, "
                           "half_life_days, hotness_weight, importance_weight."}),
    (["--explain", "--sql", "explain"], {"is_flag": True,
                                         "help": "Also show the SQL, its parameters and timings."}),
)
@_json_option
def search(query: str, k: int, as_json: bool, routes: tuple[str, ...],
           weights: tuple[str, ...], mmr: float | None, decay: tuple[str, ...], explain: bool,
           **filters: Any) -> None:
    """Find the memories that best match QUERY, best first.

    Hybrid search: vector, BM25 and exact-match routes fused by weighted RRF in SQL.
    """
    hits = _store().search(query, k=k, routes=list(routes) or None,
                           weights=_pairs(weights, "--weight"), mmr=mmr,
                           decay=_pairs(decay, "--decay"), explain=explain, **_filter(filters))
    if as_json:
        _emit_json({"query": query, "hits": [h.to_dict() for h in hits],
                    "explain": getattr(hits, "explain", None)})
        return
    if hits:
        _print_hits([summarize_hit(h) for h in hits], with_id=True)
    else:
        click.echo("no memories match", err=True)
    if explain and getattr(hits, "explain", None):
        info = hits.explain
        click.echo(f"\n-- embed {info['embed_ms']} ms, database {info['db_ms']} ms, "
                   f"hits per route {json.dumps(info['routes'])}")
        click.echo(f"-- params {json.dumps(info['params'], ensure_ascii=False, default=str)}")
        click.echo(info["sql"].strip())


@cli.command("mark-used")
@click.argument("memory_ids", metavar="ID...", nargs=-1, required=True)
@click.option("--subject", help="Whose use to record (default: each memory's own subject).")
@_json_option
def mark_used(memory_ids: tuple[str, ...], subject: str | None, as_json: bool) -> None:
    """Record that these memories were used (e.g. cited); hotness ranking reads it."""
    n = _store().mark_used(memory_ids, subject=subject)
    if as_json:
        _emit_json({"marked": n})
    else:
        click.echo(f"marked {n} memories as used")


@cli.command()
@click.argument("memory_id", metavar="ID")
@_options(
    (["--content"], {"help": "New text (it is re-embedded)."}),
    (["--kind"], {"help": f"One of: {_values(Kind)}."}),
    (["--category"], {"help": f"One of: {_values(Category)}."}),
    (["--agent"], {"help": "The agent that wrote the memory."}),
    (["--importance"], {"type": float, "help": "How much the memory matters, 0 to 1."}),
    (["--confidence"], {"type": float, "help": "How sure the source is, 0 to 1."}),
    (["--source-type"], {"help": f"Provenance, one of: {_values(SourceType)}."}),
    (["--source-id"], {"help": "Where exactly it came from."}),
    (["--norm-key"], {"help": "A stable key for the fact."}),
    (["--tag", "tags"], {"multiple": True, "help": "Replace the tags (repeatable)."}),
    (["--metadata"], {"help": "Replace the metadata with this JSON object."}),
    (["--ttl"], {"type": float, "help": "Expire this many seconds from now."}),
    (["--expires-at"], {"help": "Expire at this ISO 8601 time."}),
    (["--no-expiry"], {"is_flag": True, "help": "Never expire."}),
    (["--reason"], {"help": "Why, recorded in the history."}),
)
@_json_option
def update(memory_id: str, as_json: bool, reason: str | None, no_expiry: bool,
           **options: Any) -> None:
    """Change fields of the memory ID (its version goes up by one)."""
    changes = {k: val for k, val in options.items() if val is not None and val != ()}
    if "metadata" in changes:
        changes["metadata"] = _parse_metadata(changes["metadata"])
    if "tags" in changes:
        changes["tags"] = list(changes["tags"])
    if no_expiry:
        if "ttl" in changes or "expires_at" in changes:
            raise InvalidInput("give --no-expiry or --ttl/--expires-at, not both")
        changes["expires_at"] = None
    memory = _store().update(memory_id, reason=reason, **changes)
    if as_json:
        _emit_json(memory.to_dict())
    else:
        _print_memory(memory)


@cli.command()
@click.argument("memory_id", metavar="ID")
@click.option("--reason", help="Why, recorded in the history.")
@_json_option
def delete(memory_id: str, reason: str | None, as_json: bool) -> None:
    """Delete the memory ID (its history is kept)."""
    _store().delete(memory_id, reason=reason)
    if as_json:
        _emit_json({"id": memory_id, "deleted": True})
    else:
        click.echo(f"deleted {memory_id}")


@cli.command()
@click.argument("memory_id", metavar="ID")
@_json_option
def history(memory_id: str, as_json: bool) -> None:
    """Show every recorded change of the memory ID.

    Oldest first; the history survives the memory's deletion.
    """
    entries = _store().history(memory_id)
    if as_json:
        _emit_json([e.to_dict() for e in entries])
    else:
        _print_history(entries)


@cli.command()
@_json_option
def purge(as_json: bool) -> None:
    """Delete this tenant's expired memories.

    Expired memories are already invisible to every read; this frees their rows.
    """
    n = _store().purge_expired()
    if as_json:
        _emit_json({"purged": n})
    else:
        click.echo(f"purged {n} expired memories")


@cli.command()
@_json_option
def count(as_json: bool) -> None:
    """Count this tenant's rows (all versions, expired included)."""
    n = _store().count()
    if as_json:
        _emit_json({"count": n})
    else:
        click.echo(str(n))


@cli.command()
@_json_option
@click.pass_obj
def demo(state: _State, as_json: bool) -> None:
    """Try memdb with no setup: store a dozen memories and search them.

    Uses the embedded PostgreSQL (or --dsn); running it again adds nothing new.
    """
    from . import demo as demo_module

    report = demo_module.run(state.store(), opened_ms=state.opened_ms)
    report["where"] = _where(state)
    if as_json:
        _emit_json(report)
        return
    click.echo(f"memdb demo: {report['where']}, tenant {report['tenant']!r}, "
               f"schema revision {report['revision']}")
    click.echo(f"{report['memories']} memories: {report['new']} new, "
               f"{report['already_stored']} already stored")
    for n, s in enumerate(report["searches"], start=1):
        conditions = ", ".join(
            f"{k}={','.join(v) if isinstance(v, list) else v}" for k, v in s["filter"].items()
        ) or "no filter"
        click.echo(f"\nsearch {n}: {s['query']!r} (k={s['k']}, {conditions})")
        _print_hits(s["hits"])
    t = report["timings_ms"]
    click.echo(f"\ntimings: server start + migrate {t['start_and_migrate']:.0f} ms, "
               f"embedder load {t['embedder_load']:.0f} ms, {report['memories']} writes "
               f"{t['writes']:.0f} ms, {len(report['searches'])} searches {t['searches']:.0f} ms")


def _where(state: _State) -> str:
    """Where the data lives, without credentials."""
    if state.dsn is None:
        from .embedded import default_home

        return f"embedded PostgreSQL in {default_home()}"
    from psycopg.conninfo import conninfo_to_dict

    p = conninfo_to_dict(state.dsn)
    return f"PostgreSQL {p.get('host', 'localhost')}:{p.get('port', 5432)}/{p.get('dbname', '')}"


def main(args: Sequence[str] | None = None) -> None:
    """The ``memdb`` console script."""
    cli.main(args=args, prog_name="memdb")
