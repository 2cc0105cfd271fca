"""The search options a caller tunes per query, each declared once: its range, default and help.

:class:`memdb.retrieval.search.SearchOptions` checks its values against these declarations before
the
round trip, the CLI's ``memdb search`` flags are generated from them, docs/operations.md lists
them, and ``memdb.check_search_options`` (SQL, for psql callers) refuses the same values:
``tests/test_ops.py`` calls it at both ends of every declared range, and just past them.
"""

from __future__ import annotations

from ._param import Param

__all__ = ["SEARCH_OPTIONS", "ranged"]

SEARCH_OPTIONS: tuple[Param, ...] = (
    Param("neighbors", "int", "Bring each hit's session neighbours up to N turns away "
          "(0 = off).", 1, minimum=0, maximum=10, metavar="N"),
    Param("neighbor_weight", "float", "A neighbour scores W ** distance times its hit.", 0.4,
          minimum=0, maximum=1, metavar="W"),
    Param("prf", "int", "Pseudo-relevance feedback: expand the BM25 query from the first "
          "pass's top N memories (0 = off).", 0, minimum=0, maximum=100, metavar="N"),
    Param("prf_terms", "int", "How many expansion terms feedback adds.", 10, minimum=1,
          maximum=100, metavar="M"),
    Param("prf_weight", "float", "Weight of the original query terms under feedback.", 0.5,
          minimum=0, maximum=1, metavar="ALPHA"),
    Param("temporal", "float", "For a question about time, memories that carry a time score "
          "(1 + W) times as much, (1 + W) more when they fall in a time the query names "
          "(0 = off).", 1, minimum=0, maximum=10, metavar="W"),
    Param("session_prior", "float", "A memory in a session holding a share of the candidates' "
          "score scores (1 + W * share) times as much (0 = off).", 0, minimum=0, maximum=10,
          metavar="W"),
    Param("speaker_neighbors", "float", "A transcript line 'Name: text' brings its speaker's "
          "previous and next line in its session, scored W times it (0 = off).", 0.4,
          minimum=0, maximum=1, metavar="W"),
    Param("speaker_weight", "float", "Transcript lines 'Name: text' whose speaker the query "
          "names score (1 + W) times as much (0 = off).", 0, minimum=0, maximum=10,
          metavar="W", flags=("--speaker",)),
    Param("decompose", "bool", "Split a question joining two facts into sub-queries and fuse "
          "their searches.", False),
)


def ranged() -> tuple[tuple[str, float, float], ...]:
    """(name, minimum, maximum) of every numeric option (what SearchOptions checks)."""
    return tuple((p.name, p.minimum, p.maximum) for p in SEARCH_OPTIONS
                 if p.minimum is not None and p.maximum is not None)
