"""Session and context commands: ``memdb context`` (the messages for one model call within a
token budget, ``store.context``) and ``memdb session append|show|state|list|delete|summarize|
consolidate`` (``store.sessions``: the conversation buffer, the working state and the session's
working memories)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from ..core.errors import InvalidInput
from ..core.ops import catalog as ops
from ..core.ops import families as fam
from ..families.session import SessionWindow
from ._app import cli, emit_json, json_option, options, store
from ._format import short
from ._generate import declared

_window_options = options(
    (["--max-tokens"], {"type": int, "default": 2000, "show_default": True,
                        "help": "Window: at most this many tokens of recent turns (0: no limit)."}),
    (["--max-messages"], {"type": int, "default": 50, "show_default": True,
                          "help": "Window: at most this many recent turns (0: no limit)."}),
)
_subject_option = click.option("--subject", help="Whose session (default: the store's "
                               "--as-subject, else 'default').")


def _window(max_tokens: int, max_messages: int) -> SessionWindow:
    if max_tokens < 0 or max_messages < 0:
        raise InvalidInput("--max-tokens and --max-messages must be >= 0 (0: no limit)")
    return SessionWindow(max_tokens or None, max_messages or None)


def _json_object(text: str, option: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{option} is not valid JSON ({exc.msg}): {text!r}") from None
    if not isinstance(value, dict):
        raise InvalidInput(f'{option} must be a JSON object, such as \'{{"goal": "..."}}\'')
    return value


@cli.command()
@declared(ops.CONTEXT)
@click.option("--instructions", help="The answering instruction (default: answer only from "
              "the memories, cite their ids, say so when they are missing; zh or en by the "
              "query).")
@click.option("--no-instructions", is_flag=True, help="Leave the instruction out.")
@click.option("--include-query", is_flag=True, help="End with QUERY as a user message.")
@click.option("--max-memory-tokens", type=int, help="Cap the long-term memories' share.")
@click.option("--agent", help="Include this agent's meta memory (persona, limits, abilities, "
                              "lessons; memdb meta) after the rules.")
@json_option
def context(query: str, budget_tokens: int, k: int, subject: str | None, session: str | None,
            instructions: str | None, no_instructions: bool, include_query: bool,
            max_memory_tokens: int | None, agent: str | None, as_json: bool) -> None:
    """Print the OpenAI-style messages for answering QUERY within --budget tokens (never
    exceeded): the subject's system rules, relevant memories (each with its [mem:id]), the
    session summary, then the most recent turns (store.context)."""
    if no_instructions and instructions:
        raise InvalidInput("give --instructions or --no-instructions, not both")
    ctx = store().context(
        query, session, budget_tokens, subject=subject, k=k, include_query=include_query,
        instructions=None if no_instructions else (instructions or "auto"),
        max_memory_tokens=max_memory_tokens, agent=agent)
    if as_json:
        emit_json(ctx.to_dict())
        return
    for m in ctx.messages:
        click.echo(f"--- {m['role']}")
        click.echo(m["content"])
    dropped = ", ".join(f"{k} {n}" for k, n in ctx.dropped.items() if n)
    click.echo(f"--- {ctx.tokens}/{ctx.budget} tokens"
               + (f"; left out: {dropped}" if dropped else ""), err=True)


@cli.group()
def session() -> None:
    """Short-term memory: a session's conversation buffer, running summary and working state
    (store.sessions)."""


@session.command("append")
@declared(fam.SESSION_APPEND)
@_window_options
@click.option("--no-llm", is_flag=True,
              help="Summarize scrolled-out turns extractively even if an LLM is configured.")
@json_option
def session_append(session_id: str, role: str, content: str, subject: str | None,
                max_tokens: int, max_messages: int, no_llm: bool, as_json: bool) -> None:
    """Append a turn (CONTENT, or - for stdin) to SESSION_ID; turns that scroll out of the
    window are folded into the running summary."""
    if content == "-":
        content = sys.stdin.read()
    kwargs: dict[str, Any] = {"llm": None} if no_llm else {}
    result = store().sessions.append(session_id, role, content, subject=subject,
                                      window=_window(max_tokens, max_messages), **kwargs)
    if as_json:
        emit_json(result.to_dict())
        return
    click.echo(f"message {result.id} ({result.tokens} tokens)"
               + (f"; folded {result.folded} into the summary ({result.summary_path})"
                  if result.folded else ""))


@session.command("show")
@declared(fam.SESSION_GET)
@_window_options
@json_option
def session_show(session_id: str, subject: str | None, max_tokens: int, max_messages: int,
                 as_json: bool) -> None:
    """Show SESSION_ID: its summary, the turns in the window and its working state."""
    view = store().sessions.get(session_id, subject=subject,
                                window=_window(max_tokens, max_messages))
    if as_json:
        emit_json(view.to_dict())
        return
    click.echo(f"session {view.session_id} (subject {view.subject}, {view.buffered} buffered)")
    if view.summary:
        click.echo(f"summary ({view.summary_path}, {view.summary_tokens} tokens): {view.summary}")
    for m in view.messages:
        click.echo(f"{m.id:>6} {m.role:<9} {short(m.content, 100)}")
    click.echo(f"state v{view.state.version}: "
               + json.dumps(view.state.to_json(), ensure_ascii=False))


@session.command("state")
@declared(fam.SESSION_STATE)
@click.option("--update", "changes", metavar="JSON",
              help="Change only these fields (a JSON object); --expected-version optional.")
@json_option
def session_state(session_id: str, subject: str | None, state: dict[str, Any] | None,
                  expected_version: int | None, changes: str | None, as_json: bool) -> None:
    """Read or write SESSION_ID's working state (optimistic concurrency by version)."""
    s = store().sessions
    if state is not None and changes:
        raise InvalidInput("give --set or --update, not both")
    if state is not None:
        if expected_version is None:
            raise InvalidInput("--set needs --expected-version (0 for a new state)")
        view = s.set_state(session_id, state, expected_version=expected_version,
                           subject=subject)
    elif changes:
        view = s.update_state(session_id, expected_version=expected_version, subject=subject,
                              **_json_object(changes, "--update"))
    else:
        view = s.get_state(session_id, subject=subject)
    data = {**view.to_json(), "version": view.version}
    if as_json:
        emit_json(data)
    else:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))


@session.command("list")
@declared(fam.SESSION_LIST)
@json_option
def session_list(subject: str | None, limit: int, as_json: bool) -> None:
    """List sessions, most recently updated first."""
    rows = store().sessions.list(subject=subject, limit=limit)
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        click.echo(f"{r['session_id']:<24} {r['subject']:<16} {r['buffered']:>5} turns  "
                   f"state v{r['state_version']}  {r['updated_at']:%Y-%m-%d %H:%M}")


@session.command("delete")
@declared(fam.SESSION_DELETE)
@json_option
def session_delete(session_id: str, subject: str | None, as_json: bool) -> None:
    """Delete SESSION_ID: its turns, summary and working state."""
    store().sessions.delete(session_id, subject=subject)
    if as_json:
        emit_json({"deleted": session_id})
    else:
        click.echo(f"deleted session {session_id}")
