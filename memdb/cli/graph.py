"""Entity-graph commands: ``memdb link`` (extract entities and relations from memories and link
them, :meth:`~memdb.MemoryStore.link_entities`) and ``memdb graph ENTITY`` (an entity's
neighbourhood, :meth:`~memdb.MemoryStore.graph_neighbors`)."""

from __future__ import annotations

import click

from ._app import cli, emit_json, json_option, store


@cli.command()
@click.argument("memory_ids", nargs=-1)
@click.option("--subject", help="Link this subject's memories (default: the store's "
              "--as-subject, else every subject).")
@click.option("--heuristic", is_flag=True,
              help="Use the heuristic extractor even when an LLM is configured (MEMDB_LLM_*).")
@click.option("--limit", type=int, default=100_000, show_default=True,
              help="At most this many memories (oldest first) when no ids are given.")
@json_option
def link(memory_ids: tuple[str, ...], subject: str | None, heuristic: bool, limit: int,
         as_json: bool) -> None:
    """Extract entities and relations from memories and link them into the entity graph.

    MEMORY_IDS: the memories to (re-)link (default: every current memory). The configured LLM
    extracts (strict JSON, validated); with none, or on any failure, a heuristic for Chinese
    and English does.
    """
    kwargs = {"llm": None} if heuristic else {}
    result = store().link_entities(list(memory_ids) or None, subject=subject, limit=limit,
                                   **kwargs)
    if as_json:
        emit_json(result.to_dict())
        return
    paths = ", ".join(f"{k} {n}" for k, n in sorted(result.paths.items())) or "none"
    click.echo(f"linked {result.linked} memories ({paths}), skipped {result.skipped}; "
               f"{result.mentions} mentions, {result.relations} relations in {result.ms} ms")
    for reason, n in sorted(result.fallbacks.items()):
        click.echo(f"  heuristic fallback x{n}: {reason}")


@cli.command()
@click.argument("entity")
@click.option("--hops", type=int, default=1, show_default=True,
              help="Show relations up to this many hops away (1 to 4).")
@click.option("--limit", type=int, default=100, show_default=True,
              help="At most this many relations.")
@json_option
def graph(entity: str, hops: int, limit: int, as_json: bool) -> None:
    """Show ENTITY's neighbourhood in the entity graph: the entity and its relations."""
    view = store().graph_neighbors(entity, hops=hops, limit=limit)
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
