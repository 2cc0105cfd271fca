"""``memdb graph link|neighbors|search`` (``store.graph``): extract entities and relations
from memories and link them, an entity's neighbourhood, and hybrid search with the graph
route."""

from __future__ import annotations

import click

from ..core.ops import families as fam
from ..demo import summarize_hit
from ._app import emit_json, json_option, store
from ._format import print_hits
from ._generate import declared
from ._groups import graph


@graph.command("link")
@declared(fam.GRAPH_LINK)
@json_option
def link(memory_ids: list[str] | None, subject: str | None, heuristic: bool,
         timeout: float | None, limit: int, as_json: bool) -> None:
    """Extract entities and relations from memories and link them into the entity graph.

    The configured LLM extracts (strict JSON, validated); with none, or on any failure, a
    heuristic for Chinese and English does.
    """
    kwargs = {"llm": None} if heuristic else {}
    result = store().graph.link(memory_ids or None, subject=subject, timeout=timeout,
                                limit=limit, **kwargs)
    if as_json:
        emit_json(result.to_dict())
        return
    paths = ", ".join(f"{k} {n}" for k, n in sorted(result.paths.items())) or "none"
    click.echo(f"linked {result.linked} memories ({paths}), skipped {result.skipped}; "
               f"{result.mentions} mentions, {result.relations} relations in {result.ms} ms")
    for reason, n in sorted(result.fallbacks.items()):
        click.echo(f"  heuristic fallback x{n}: {reason}")


@graph.command("neighbors")
@declared(fam.GRAPH_NEIGHBORS)
@json_option
def neighbors(entity: str, hops: int, limit: int, as_json: bool) -> None:
    """Show ENTITY's neighbourhood in the entity graph: the entity and its relations."""
    view = store().graph.neighbors(entity, hops=hops, limit=limit)
    if as_json:
        emit_json(view.to_dict())
        return
    for e in view.entities:
        aliases = f" (aliases: {', '.join(e['aliases'])})" if e["aliases"] else ""
        click.echo(f"{e['name']} [{e['type']}] subject={e['subject']} "
                   f"mentions={e['mentions']}{aliases}")
    if not view.relations:
        click.echo("no relations", err=True)
    for r in view.relations:
        click.echo(f"  {'  ' * (r.depth - 1)}{r.source} -[{r.type} {r.strength:.2f}]-> "
                   f"{r.target}  (memory {r.memory_id})")


@graph.command("search")
@declared(fam.GRAPH_SEARCH)
@json_option
def search(query: str, k: int, hops: int, entities: list[str] | None,
           routes: list[str] | None, subject: str | None, as_json: bool) -> None:
    """Hybrid search with the graph route: memories mentioning the entities reached from
    those QUERY names, fused with vector, BM25 and exact match."""
    conditions = {"subject": subject} if subject else {}
    hits = store().graph.search(query, k=k, hops=hops, routes=routes, entities=entities,
                                **conditions)
    if as_json:
        emit_json({"query": query, "hits": [h.to_dict() for h in hits]})
    elif not hits:
        click.echo("no memories match", err=True)
    else:
        print_hits([summarize_hit(h) | {"routes": {
            r: h.details[f"{r}_rank"] for r in ("vector", "bm25", "exact", "graph")
            if h.details.get(f"{r}_rank") is not None}} for h in hits], with_id=True)
