"""The ``memdb`` command line: one command per :class:`~memdb.MemoryStore` method, each with
``--help`` and ``--json``.

    memdb add "Alice prefers green tea" --subject alice --category preferences
    memdb search "what does Alice drink?" --subject alice --json
"""

from . import demo, embeddings, evaluate, lifecycle, memories, search  # noqa: F401  (registers the commands)
from ._app import cli, main

__all__ = ["cli", "main"]
