"""Planned retrieval on the command line: ``memdb plan``, ``memdb recall``, ``memdb traces
list|show|stats|purge|erase`` and ``memdb maintenance reclassify``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import click

from ..core.errors import InvalidInput
from ..core.ops import catalog as ops
from ..core.ops import families as fam
from ..demo import summarize_hit
from ..retrieval.recall import DEFAULT_BACKSTOP
from ..retrieval.search import SearchOptions
from ._app import cli, emit_json, json_option, store
from ._format import print_hits, short, table
from ._generate import declared
from ._groups import maintenance, traces
from ._shared import FINITE, filter_args, filters_but


def _print_plan(plan: dict[str, Any]) -> None:
    flags = [f"source={plan['source']}"]
    if plan["fallback"]:
        flags.append(f"fallback ({plan['reason']})")
    if plan["ambiguous"]:
        flags.append("ambiguous")
    click.echo(f"intent {plan['intent']}  " + "  ".join(flags))
    for n, q in enumerate(plan["queries"], start=1):
        cats = ",".join(q["categories"]) or "(all)"
        click.echo(f"  q{n}  {q['strategy']:<11} w={q['weight']:<4} in {cats:<30} {q['text']}")


@cli.command()
@click.argument("query")
@click.option("--heuristic", is_flag=True, help="Never ask the LLM (heuristic plan only).")
@json_option
def plan(query: str, heuristic: bool, as_json: bool) -> None:
    """Show the plan QUERY gets: intent, typed queries (categories, strategy, weight), source.

    Nothing is searched. The LLM is asked only for ambiguous queries, and only when
    MEMDB_LLM_MODEL is set.
    """
    from ..retrieval.planner import heuristic_plan

    if not query.strip():
        raise InvalidInput("query must not be blank")
    the_plan = heuristic_plan(query) if heuristic else store().plan(query)
    if as_json:
        emit_json(the_plan.to_json())
    else:
        _print_plan(the_plan.to_json())


@cli.command()
@declared(ops.RECALL)
@filters_but("subject", "kind", "category", "tags", "uri_prefix")
@click.option("--hotness", type=FINITE,
              help="Hotness weight, 0 to 1 (default 0: off); never applied to system.")
@click.option("--backstop", type=FINITE,
              help=f"Weight of the all-categories route beside the scoped ones, 0-10 "
                   f"(default {DEFAULT_BACKSTOP:g}; 0 = only as the fallback and the anchor).")
@click.option("--general", "general", flag_value=True, default=None,
              help="Scoped queries also search 'general' (memories no rule could place).")
@click.option("--no-general", "general", flag_value=False,
              help="Scoped queries leave out 'general' (the default).")
@click.option("--no-anchor", is_flag=True,
              help="Let a scoped route pull in memories the flat search ranked below k "
                   "(default: the flat top k, ordered by the plan).")
@click.option("--no-trace", is_flag=True, help="Do not write a retrieval trace.")
@click.option("--decompose", is_flag=True, default=None,
              help="Split a question joining two facts into sub-queries (the LLM's when one "
                   "is configured, else the heuristic's) and fuse their searches as the "
                   "all-categories route (off by default).")
@json_option
def recall(query: str, k: int, subject: str | None, categories: list[str] | None,
           kinds: list[str] | None, tags_all: list[str] | None, uri_prefix: str | None,
           hotness: float | None, backstop: float | None, general: bool | None,
           no_anchor: bool, no_trace: bool, decompose: bool | None, as_json: bool,
           **filters: Any) -> None:
    """Planned search: decide where to look, search there, never silently miss.

    Returns the memories a flat search finds at k, ordered by the plan (--no-anchor lets the
    plan's categories pull in others). Prints the status (ok, no_relevant_memory, degraded
    and why), the plan and the hits.
    """
    res = store().recall(query, k=k, hotness=hotness, backstop=backstop, with_general=general,
                         anchor=False if no_anchor else None,
                         trace=False if no_trace else None,
                         options=SearchOptions(decompose=decompose) if decompose else None,
                         **filter_args({**filters, "subject": subject, "category": categories,
                                        "kind": kinds, "tags": tags_all,
                                        "uri_prefix": uri_prefix}))
    if as_json:
        emit_json({"query": query, **res.to_dict()})
        return
    reasons = f" ({', '.join(res.reasons)})" if res.reasons else ""
    click.echo(f"status {res.status.value}{reasons}  trace {res.trace_id or '-'}")
    if res.plan is not None:
        _print_plan(res.plan.to_json())
    if res.decomposition is not None:
        d = res.decomposition
        how = d.source + (f", fallback ({d.reason})" if d.fallback else "")
        click.echo(f"sub-queries ({how}): " + (" | ".join(d.subqueries) or "none"))
    if res:
        print_hits([summarize_hit(h) | {"routes": {r: v.get("rank") for r, v in
                                                    (h.details.get("routes") or {}).items()}}
                    for h in res], with_id=True)
    else:
        click.echo("no memories match", err=True)


def _show_trace(t: dict[str, Any]) -> None:
    for key in ("id", "created_at", "subject", "query", "intent", "plan_source", "status",
                "reasons", "fallback", "categories", "k", "latency_ms", "timings"):
        click.echo(f"{key:<12} {t[key]}")
    _print_plan(t["plan"] | {"ambiguous": t["plan"].get("ambiguous", False)})
    click.echo("candidates:")
    chosen = {str(x) for x in t["chosen_ids"]}
    for c in t["candidates"]:
        mark = "*" if c["id"] in chosen else " "
        routes = " ".join(f"{r}:{v.get('rank')}" for r, v in (c["routes"] or {}).items())
        click.echo(f" {mark} {c['id']}  {c['score']:.4f}  {c['category']:<11} {routes}")


def _list_traces(rows: list[dict[str, Any]]) -> None:
    table(["id", "when", "status", "intent", "source", "fb", "n", "ms", "query"],
          [[str(r["id"]), r["created_at"].strftime("%m-%d %H:%M:%S"), r["status"], r["intent"],
            r["plan_source"], "y" if r["fallback"] else "-", str(r["results"]),
            f"{r['latency_ms']:.0f}", short(r["query"], 60)] for r in rows])


def _emit(out: Any, as_json: bool) -> None:
    if as_json:
        emit_json(out)
    else:
        click.echo(", ".join(f"{k} {v}" for k, v in out.items()))


@traces.command("list")
@declared(fam.TRACES_LIST)
@json_option
def traces_list(limit: int, as_json: bool) -> None:
    """List retrieval traces, newest first."""
    rows = store().traces.list(limit)
    if as_json:
        emit_json(rows)
    else:
        _list_traces(rows)


@traces.command("show")
@declared(fam.TRACE_GET)
@json_option
def traces_show(id: str, as_json: bool) -> None:
    """Show trace ID: the redacted query, plan, candidates with their per-route ranks, chosen
    ids and latency."""
    t = store().traces.get(id)
    if as_json:
        emit_json(t)
    else:
        _show_trace(t)


@traces.command("purge")
@declared(fam.TRACES_PURGE)
@json_option
def traces_purge(older_than_days: float | None, as_json: bool) -> None:
    """Delete traces older than the retention period."""
    _emit({"purged": store().traces.purge(older_than_days)}, as_json)


@traces.command("erase")
@declared(fam.TRACES_ERASE)
@json_option
def traces_erase(subject: str, as_json: bool) -> None:
    """Delete every trace that searched or returned SUBJECT's memories."""
    _emit({"erased": store().traces.erase(subject)}, as_json)


@traces.command("stats")
@declared(fam.TRACES_STATS)
@json_option
def stats(since_hours: float | None, as_json: bool) -> None:
    """Health of planned retrieval from the traces: empty-result, fallback and degraded rates,
    p50/p95 latency, intent distribution."""
    since = None if since_hours is None else timedelta(hours=since_hours)
    result = store().traces.stats(since)
    if as_json:
        emit_json(result)
        return
    click.echo(f"searches {result['searches']}")
    for key in ("empty_rate", "fallback_rate", "degraded_rate", "llm_plan_rate"):
        click.echo(f"{key:<14} {100 * float(result[key] or 0):.1f}%")
    for key in ("p50_ms", "p95_ms"):
        value = result[key]
        click.echo(f"{key:<14} {'-' if value is None else f'{value:.1f}'}")
    click.echo("intents        " + ", ".join(f"{k} {v}" for k, v in sorted(
        result["intents"].items(), key=lambda kv: -kv[1])))


@maintenance.command("reclassify")
@click.option("--dry-run", is_flag=True, help="Only report what would move.")
@click.option("--batch-size", type=int, default=500, show_default=True,
              help="Memories re-classified per transaction.")
@json_option
def reclassify(dry_run: bool, batch_size: int, as_json: bool) -> None:
    """Re-classify memories with the current rules (memdb.write.classify.TAG_VERSION): those
    classified by older rules, or never.

    Explicitly categorized memories are left alone. --dry-run reports how many would move
    (per from->to) and a sample, writing nothing.
    """
    report = store().maintenance.reclassify(dry_run=dry_run, batch_size=batch_size)
    if as_json:
        emit_json(report)
        return
    verb = "would move" if dry_run else "moved"
    click.echo(f"scanned {report['scanned']}, {verb} {report['moved']}, "
               f"unchanged {report['unchanged']} (tag_version {report['tag_version']})")
    for move, n in sorted(report["moves"].items(), key=lambda kv: -kv[1]):
        click.echo(f"  {move:<28} {n}")
    for s in report["sample"]:
        click.echo(f"  e.g. {s['from']}->{s['to']} [{s['rule']}] {short(s['content'], 60)}")
