"""The ``memdb`` command line: one command per :class:`~memdb.MemoryStore` method, each with
``--help`` and ``--json``.

    memdb add "Alice prefers green tea" --subject alice --category preferences
    memdb search "what does Alice drink?" --subject alice --json
"""

from . import (  # noqa: F401  (registers the commands)
    admin,
    agent,
    ask,
    demo,
    embeddings,
    evaluate,
    graph,
    ingest,
    lifecycle,
    memories,
    meta,
    planner,
    profile,
    search,
    server,
    session,
)
from ._app import cli, main

__all__ = ["cli", "main"]
