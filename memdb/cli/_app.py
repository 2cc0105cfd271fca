"""The ``memdb`` command group, its global options and error handling.

A memdb error prints ``error: <message>`` on stderr and exits with status 1 (click's usage
errors exit with 2); with ``--json`` it also prints ``{"error": {"type", "message"}}`` on
stdout, the body the HTTP and MCP doors give.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import click
import psycopg

from ..core.errors import MemdbError, translate
from ..core.masking import redact
from ..families.store import MemoryStore

__all__ = ["cli", "main", "store", "emit_json", "json_option", "options", "State",
           "keep_stores_open", "close_kept_stores"]

# The shell daemon's (memdb.shell): stores kept open between commands, by what opened them
# (None: each command opens its own and closes it when it ends).
_kept: dict[tuple[Any, ...], MemoryStore] | None = None


def keep_stores_open() -> None:
    """From now on, commands in this process share stores that stay open (the shell
    daemon's mode) until :func:`close_kept_stores`."""
    global _kept
    if _kept is None:
        _kept = {}


def close_kept_stores() -> None:
    """Close the kept stores (releasing the embedded server); commands open their own
    again."""
    global _kept
    kept, _kept = _kept or {}, None
    for kept_store in kept.values():
        kept_store.close()


class CliError(click.ClickException):
    """A memdb error, shown as ``error: <message>`` with exit status 1."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


_NO_SUCH_COMMAND: Any = getattr(click.exceptions, "NoSuchCommand", None)  # click 8.4+


class Group(click.Group):
    group_class = type  # the command groups (memdb session, documents...) are Groups too

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        """click's, except that "Did you mean" (click 8.4+) names only commands --help
        lists."""
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            if _NO_SUCH_COMMAND is None or not isinstance(exc, _NO_SUCH_COMMAND):
                raise
            visible = [name for name, cmd in self.commands.items() if not cmd.hidden]
            raise _NO_SUCH_COMMAND(exc.command_name, possibilities=visible, ctx=ctx) from None

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["memdb.json"] = "--json" in args
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        wants_json = ctx.meta.get("memdb.json", False)
        try:
            return super().invoke(ctx)
        except MemdbError as exc:  # messages are redacted where made; redact() is the net
            message = redact(str(exc) or type(exc).__name__)
            if wants_json and not ctx.meta.get("memdb.emitted"):  # as the other doors give it
                emit_json({"error": {"type": type(exc).__name__, "message": message}})
            raise CliError(message) from exc
        except psycopg.Error as exc:  # the store translates these; this is the safety net
            raise CliError(redact(translate(exc))) from exc


class _Notice(logging.Handler):
    """memdb's one-time notices (logger ``memdb.schema``: the embedded server created its
    schema on first use) as one stderr line each."""

    def emit(self, record: logging.LogRecord) -> None:
        click.echo(record.getMessage(), err=True)


def _show_notices() -> None:
    logger = logging.getLogger("memdb.schema")
    if not any(isinstance(h, _Notice) for h in logger.handlers):
        logger.addHandler(_Notice())
        logger.setLevel(logging.INFO)


class State:
    """The global options, and the store opened on first use (closed when the command ends)."""

    def __init__(self, dsn: str | None, tenant: str, subject: str | None = None,
                 read_dsn: str | None = None) -> None:
        self.dsn, self.tenant, self.subject = dsn, tenant, subject
        self.read_dsn = read_dsn  # a hot standby for reads (None: $MEMDB_READ_DSN or none)
        # --dsn taken from $MEMDB_DSN: resolved by memdb itself, so migrations can use
        # $MEMDB_ADMIN_DSN (an explicit --dsn is used for both)
        self.dsn_from_env = False
        self.tenant_given = False  # --tenant on the command line (not the default)
        self._store: MemoryStore | None = None
        self.opened_ms = 0.0

    def store(self) -> MemoryStore:
        if self._store is None:
            start = time.perf_counter()
            key = (None if self.dsn_from_env else self.dsn, self.tenant, self.subject,
                   self.read_dsn)
            opened = _kept.get(key) if _kept is not None else None
            if opened is None:
                opened = MemoryStore(key[0], tenant=self.tenant, subject=self.subject,
                                     read_dsn=self.read_dsn)
                if _kept is not None:
                    _kept[key] = opened
            self._store = opened
            self.opened_ms = (time.perf_counter() - start) * 1000
        return self._store

    def close(self) -> None:
        if self._store is not None and _kept is None:  # a kept store stays open
            self._store.close()
        self._store = None


def store() -> MemoryStore:
    return click.get_current_context().find_object(State).store()


def emit_json(data: Any) -> None:
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta["memdb.emitted"] = True  # an error after it adds no second document
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))



def json_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True,
                        help="Print one JSON document instead of text.")(f)


def options(*specs: tuple[Sequence[str], dict[str, Any]]) -> Callable[..., Any]:
    def apply(f: Callable[..., Any]) -> Callable[..., Any]:
        for names, kwargs in reversed(specs):
            f = click.option(*names, **kwargs)(f)
        return f
    return apply


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--dsn", envvar="MEMDB_DSN", show_envvar=True, metavar="URL",
              help="PostgreSQL URL. Default: $MEMDB_DSN, else the embedded server "
                   "(in $MEMDB_HOME or the per-user data folder).")
@click.option("--read-dsn", envvar="MEMDB_READ_DSN", show_envvar=True, metavar="URL",
              help="A hot standby of the primary: reads and searches run there "
                   "(docs/scaling.md). Default: $MEMDB_READ_DSN, else none.")
@click.option("--tenant", default="default", show_default=True,
              help="The tenant (isolation boundary) every command works in.")
@click.option("--as-subject", "as_subject", metavar="SUBJECT",
              help="Subject isolation: see and write only this subject's memories "
                   "(row-level security; other subjects' writes are refused).")
@click.version_option(package_name="memdb")
@click.pass_context
def cli(ctx: click.Context, dsn: str | None, read_dsn: str | None, tenant: str,
        as_subject: str | None) -> None:
    """memdb: Postgres-native long-term memory for AI agents."""
    _show_notices()
    state = State(dsn or None, tenant, as_subject, read_dsn=read_dsn)
    source = click.core.ParameterSource
    state.dsn_from_env = ctx.get_parameter_source("dsn") is source.ENVIRONMENT
    state.tenant_given = ctx.get_parameter_source("tenant") is source.COMMANDLINE
    ctx.obj = state
    ctx.call_on_close(state.close)


def main(args: Sequence[str] | None = None) -> None:
    """The ``memdb`` console script."""
    cli.main(args=args, prog_name="memdb")
