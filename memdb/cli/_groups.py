"""The command groups that mirror the store's families (``memdb documents ...``, ``memdb graph
...``, ``memdb maintenance ...``, ``memdb traces ...``, ``memdb subject ...``; ``memdb session``
and ``memdb review`` live with their commands).
"""

from __future__ import annotations

from ._app import cli

__all__ = ["documents", "graph", "maintenance", "traces", "subject"]


@cli.group()
def documents() -> None:
    """Documents: ingest files and folders, list, remove and search them, and answer
    questions from them with citations (store.documents)."""


@cli.group()
def graph() -> None:
    """The entity graph: link memories' entities, an entity's neighbours, graph search
    (store.graph)."""


@cli.group()
def maintenance() -> None:
    """Maintenance of this tenant: expiry, forgetting, hypothesis decay, re-embedding,
    sedimentation, re-classification (store.maintenance)."""


@cli.group()
def traces() -> None:
    """Recall traces: list, show one, statistics, retention and erasure (store.traces)."""


@cli.group()
def subject() -> None:
    """One subject's memories as a whole: summary, export, erasure (store.subjects)."""
