"""``memdb meta``: an agent's meta memory (what it knows about itself: persona, abilities,
limits, lessons), kept under the subject ``agent:<name>`` (:mod:`memdb.families.meta`)."""

from __future__ import annotations

import click

from ..core.errors import Rejected
from ..core.ops import families as fam
from ..families.meta import ASPECTS, LABELS
from ._app import cli, emit_json, json_option, store
from ._generate import declared


@cli.group()
def meta() -> None:
    """An agent's meta memory: persona, abilities, limits and lessons (subject agent:NAME)."""


@meta.command("add")
@declared(fam.META_ADD)
@json_option
def add(content: str, aspect: str, agent: str, importance: float | None, source_id: str | None,
        reason: str | None, as_json: bool) -> None:
    """Remember TEXT as part of the agent's ASPECT, through the write gate."""
    fields = {k: val for k, val in (("importance", importance), ("source_id", source_id))
              if val is not None}
    try:
        result = store().meta.add(content, aspect=aspect, agent=agent, reason=reason, **fields)
    except Rejected as exc:
        if as_json:
            emit_json({"outcome": "rejected", "reasons": list(exc.reasons)})
        raise
    if as_json:
        emit_json(result.to_dict())
    else:
        click.echo(f"{result.id or '-'} {result.outcome}")


@meta.command("show")
@declared(fam.META_READ)
@json_option
def show(agent: str, limit: int, as_json: bool) -> None:
    """Print the agent's meta memory by aspect, each item with its memory id
    (memdb.agent_meta in SQL)."""
    doc = store().meta.read(agent, limit=limit)
    if as_json:
        emit_json(doc)
        return
    if not doc["memory_ids"]:
        click.echo(f"no meta memory for {doc['subject']!r} yet")
        return
    for aspect in ASPECTS:
        if doc[aspect]:
            click.echo(f"{aspect} ({LABELS['zh'][aspect]}):")
            for item in doc[aspect]:
                click.echo(f"  - {item['content']}  [{item['importance']:.2f}] {item['id']}")
