"""Commands of the agent interface: tool-schema (the function-calling tool definition),
tool-call (execute one tool call), remember (extract facts from a conversation turn)."""

from __future__ import annotations

import json
import sys

import click

from ..core.ops.remember import REMEMBER
from ..families.tool import tool_schema
from ._app import cli, emit_json, json_option, store
from ._generate import declared
from ._shared import FINITE


@cli.command("tool-schema")
@click.option("--format", "fmt", default="openai", show_default=True,
              type=click.Choice(["openai", "function", "anthropic", "json_schema"]),
              help="openai: a Chat Completions tools[] item; function: the bare "
                   "name/description/parameters; anthropic: input_schema; json_schema: only "
                   "the parameters.")
@json_option
def tool_schema_cmd(fmt: str, as_json: bool) -> None:
    """Print the memory tool's definition for function calling (always JSON; --json is
    accepted for uniformity)."""
    click.echo(json.dumps(tool_schema(fmt), ensure_ascii=False, indent=2))


@cli.command("tool-call")
@click.argument("arguments")
@click.option("--subject", help="Whose memories the call reads and writes (default: default).")
@click.option("--source-id", help="The turn id recorded as provenance of writes.")
@json_option
def tool_call(arguments: str, subject: str | None, source_id: str | None,
              as_json: bool) -> None:
    """Execute one memory tool call: ARGUMENTS is its JSON arguments ("-" reads stdin),
    e.g. '{"action": "search", "query": "tea"}'. Prints the tool result (always JSON, as
    the model would get it); exits 1 when the result is an error."""
    if arguments == "-":
        arguments = sys.stdin.read()
    tool = store().tool(subject=subject, source_id=source_id)
    result = tool.dispatch({"function": {"name": tool.name, "arguments": arguments}})
    click.echo(result)
    if not json.loads(result).get("ok"):
        sys.exit(1)


@cli.command()
@click.argument("words", nargs=-1, required=True, metavar="TEXT...")
@declared(REMEMBER, skip=("text",))  # the turn: TEXT's words, or "-" for stdin
@click.option("--no-llm", is_flag=True, help="Use the heuristic extractor even if "
                                             "MEMDB_LLM_MODEL is set.")
@click.option("--timeout", type=FINITE, help="Seconds to wait for the LLM at most "
                                            "(default $MEMDB_LLM_TIMEOUT_REMEMBER or 60).")
@json_option
def remember(words: tuple[str, ...], session_id: str | None, subject: str | None,
             turn_id: str | None, no_llm: bool, timeout: float | None, dry_run: bool,
             wait: bool, as_json: bool) -> None:
    """Extract facts from TEXT (what the user said; "-" reads stdin), reconcile them with
    similar memories and write them through the write gate (LLM from MEMDB_LLM_*, else
    Chinese/English heuristics). --no-wait: keep the turn and return its job at once (a
    worker does the extraction: `memdb worker`, `memdb serve`)."""
    body = sys.stdin.read() if words == ("-",) else " ".join(words)
    kwargs = {"llm": None} if no_llm else {}
    result = store().remember(body, session_id=session_id, subject=subject, turn_id=turn_id,
                              timeout=timeout, dry_run=dry_run, wait=wait, **kwargs)
    if not wait:
        if as_json:
            emit_json(result.to_dict())
        else:
            click.echo(f"job {result.job_id}: {result.state} (turn {result.turn_id} kept as "
                       f"memory {result.memory_id or '-'}, {result.outcome})")
        return
    if as_json:
        emit_json(result.to_dict())
        return
    click.echo(f"turn {result.turn_id}: {result.path}"
               + (f" (LLM not used: {result.fallback_reason})" if result.fallback_reason
                  else ""))
    if not result.decisions:
        click.echo("nothing to remember")
    for d in result.decisions:
        click.echo(f"{d.action:8} {d.outcome or '-':11} {d.memory_id or '-':36} "
                   f"[{d.category}, {d.importance:.2f}] {d.content}")
        if d.path != result.path or d.fallback:
            click.echo(f"{'':10}from the {d.path} extractor"
                       + (f": {d.fallback}" if d.fallback else ""))
        for reason in d.gate_reasons:
            click.echo(f"{'':10}{reason}")
    for x in result.refused:
        click.echo(f"refused  {x.item!r}: {x.reason}")
