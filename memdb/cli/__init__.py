"""The ``memdb`` command line: the store's core verbs as commands (``memdb add``, ``search``,
``recall``, ``get``...) and each family as a group (``memdb session``, ``documents``,
``graph``, ``review``, ``traces``, ``maintenance``, ``subject``, ``meta``), every command with
``--help`` and ``--json``.

    memdb add "Alice prefers green tea" --subject alice --category preferences
    memdb search "what does Alice drink?" --subject alice --json
    memdb documents ingest docs/ && memdb documents ask "how do I rotate keys?"
"""

from . import (  # noqa: F401  (registers the commands)
    admin,
    agent,
    ask,
    demo,
    embeddings,
    evaluate,
    files,
    graph,
    ingest,
    job_schedules,
    jobs,
    keys,
    lifecycle,
    mcp,
    memories,
    meta,
    planner,
    profile,
    report,
    search,
    serve,
    server,
    session,
)
from ._app import cli, close_kept_stores, keep_stores_open, main

__all__ = ["cli", "main", "keep_stores_open", "close_kept_stores"]
