"""Search options and results: the Python side of ``memdb.search_hybrid``.

``SearchOptions`` becomes the JSON options object the SQL function validates
(``memdb.check_search_options``); ``SearchResults`` is the ranked list of hits, with
``explain`` holding the SQL, its parameters and timings when asked for.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from ..core import validate as v
from ..core.errors import InvalidInput
from ..core.ops.search_options import ranged

__all__ = ["SearchOptions", "SearchResults", "ROUTES", "DEFAULT_OPTIONS", "keyword_routes_ahead"]

ROUTES = ("vector", "bm25", "exact")


@dataclass(frozen=True)
class SearchOptions:
    """How a hybrid search runs; None leaves the SQL default (see memdb.check_search_options).

    routes: which of vector, bm25, exact run. weights: per-route RRF weight (>= 0).
    depth: candidates per route. rrf_k: the RRF constant (60). k1, b, candidate_df_ratio: BM25.
    mmr: lambda in [0, 1] (True = 0.7) to diversify the top mmr_candidates. decay_weight,
    half_life_days, hotness_weight, importance_weight: the final multiplier (0 = off).
    system_boost: active memories of category 'system' (rules) score up to (1 + system_boost)
    times as much (SQL default 1; 0 = off), but never pass a memory that scores at least as
    high on every route and higher on one (memdb.search_hybrid): the boost settles mixed
    evidence, it does not lift weak matches.
    neighbors: a window 0..10 (True = 1; DEFAULT_OPTIONS: 1, 0 = off; SQL default off): each
    hit brings the memories that many places before and after it in its session (same subject
    and session_id, by created_at), scored neighbor_weight ** distance times the hit's score
    (neighbor_weight: DEFAULT_OPTIONS 0.4, SQL default 0.5); a memory without a session_id
    has no neighbours and is nobody's neighbour.
    prf: pseudo-relevance feedback (True = 10; off by default): the BM25 route runs the query
    expanded with prf_terms terms (default 10) of the first pass's top ``prf`` memories, the
    original terms weighted prf_weight (default 0.5) - see memdb.prf_terms.
    decompose: query decomposition (off by default): a question joining two facts is split
    into up to 3 sub-queries (memdb.retrieval.decompose.split_query); the original and the
    sub-queries
    are searched and fused by weighted RRF in one SQL call (memdb.search_fused). Query
    planning, not a SQL option: it is not part of to_json().
    speaker: speaker match (off by default): a memory written as a transcript line
    "Name: text" whose speaker the query names ("What books has Melanie read?") scores
    (1 + speaker_weight) times as much (speaker_weight in [0, 10], default 0.5; SQL option
    speaker_boost, see memdb.speaker_of).
    temporal: a weight in [0, 10] (True = 1, the cross-validated choice; DEFAULT_OPTIONS: 1,
    0 = off; SQL default off): for
    a query that asks about time ("when did ...", "how long ago", 什么时候) a memory whose
    content carries a time ("yesterday", "last week", 去年, "7 May 2023", "for 4 years")
    scores (1 + temporal) times as much, and (1 + temporal) more when the query names a time
    ("in June", "last week", 2022年, resolved against as_of or now) that the memory's event
    time falls in (its content's time resolved against its own valid_from, else its
    valid_from; stored when the memory is written: memories.event_time, names_time) - see
    memdb.temporal_boost.
    session_prior: a weight w in [0, 10] (True = 1; off by default): a memory in a session
    (same subject and non-null session_id) that holds a share of the candidates' summed fused
    score scores (1 + w * share) times as much - topic-level evidence: a turn among many
    strong turns of one conversation session beats a lone match elsewhere. Memories without a
    session_id get no prior (memdb.search_hybrid, step 3f).
    speaker_neighbors: a weight w in [0, 1] (True = 0.4, the cross-validated choice;
    DEFAULT_OPTIONS: 0.4, 0 = off; SQL default off): a hit that is a
    transcript line "Name: text" in a session also brings the nearest line of the same speaker
    before and after it in that session (within 10 memories; in a two-party conversation the
    line two turns away), scored w times the hit's score - one speaker's next line often
    continues what they said (memdb.search_speaker_neighbors).
    """

    routes: tuple[str, ...] | None = None
    weights: dict[str, float] | None = None
    depth: int | None = None
    rrf_k: float | None = None
    k1: float | None = None
    b: float | None = None
    candidate_df_ratio: float | None = None
    mmr: float | bool | None = None
    mmr_candidates: int | None = None
    decay_weight: float | None = None
    half_life_days: float | None = None
    hotness_weight: float | None = None
    importance_weight: float | None = None
    system_boost: float | None = None
    neighbors: int | bool | None = None
    neighbor_weight: float | None = None
    prf: int | bool | None = None
    prf_terms: int | None = None
    prf_weight: float | None = None
    decompose: bool | None = None
    speaker: bool | None = None
    speaker_weight: float | None = None
    temporal: float | bool | None = None
    session_prior: float | bool | None = None
    speaker_neighbors: float | bool | None = None

    @classmethod
    def of(cls, values: Mapping[str, Any] | None) -> SearchOptions:
        """Options from a mapping of field names (a JSON body, a settings file): unknown names
        and anything not a mapping are :class:`~memdb.core.errors.InvalidInput`; a list of routes
        becomes a tuple. The values are checked where every search checks them (``to_json``,
        then ``memdb.check_search_options``)."""
        if values is None:
            return cls()
        if not isinstance(values, Mapping):
            raise InvalidInput("search options must be an object of option -> value")
        unknown = sorted(str(key) for key in set(values) - _FIELDS)
        if unknown:
            raise InvalidInput(f"unknown search options {unknown}; known: {sorted(_FIELDS)}")
        routes = values.get("routes")
        if isinstance(routes, list):
            values = {**values, "routes": tuple(routes)}
        return cls(**values)

    def replace(self, **changes: Any) -> SearchOptions:
        """These options with the non-None ``changes`` laid over them; ``weights`` are merged
        route by route, so changing one route's weight keeps the others."""
        changes = {key: val for key, val in changes.items() if val is not None}
        if not changes:
            return self  # frozen: nothing to copy
        values = self._values()
        for key, val in changes.items():
            if key == "weights" and isinstance(val, dict) and isinstance(values["weights"], dict):
                val = {**values["weights"], **val}
            values[key] = val
        return SearchOptions(**values)

    def over(self, base: SearchOptions) -> SearchOptions:
        """``base`` with every option set here laid over it."""
        return base.replace(**self._values())

    def _values(self) -> dict[str, Any]:
        """The fields by name (what dataclasses.asdict gives, without its deep copy: a search
        builds options on every call; routes and weights hold plain values, copied here)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        for key in ("routes", "weights"):
            if isinstance(values[key], (dict, list)):
                values[key] = type(values[key])(values[key])
        return values

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.routes is not None:
            routes = [self.routes] if isinstance(self.routes, str) else list(self.routes)
            unknown = [r for r in routes if r not in ROUTES]
            if unknown or not routes:
                raise InvalidInput(
                    f"unknown or no routes {unknown or routes}; expected some of {ROUTES}")
            out["routes"] = sorted(set(routes), key=ROUTES.index)
        if self.weights is not None:
            if not isinstance(self.weights, dict):
                raise InvalidInput("weights must be a dict of route -> number")
            out["weights"] = {str(k): _number(w, f"weight of {k}") for k, w in self.weights.items()}
        for name in ("depth", "mmr_candidates", "prf_terms"):
            value = getattr(self, name)
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, int):
                    raise InvalidInput(f"{name} must be an integer")
                out[name] = value
        for name in ("rrf_k", "k1", "b", "candidate_df_ratio", "decay_weight", "half_life_days",
                     "hotness_weight", "importance_weight", "system_boost", "neighbor_weight",
                     "prf_weight"):
            value = getattr(self, name)
            if value is not None:
                out[name] = _number(value, name)
        if self.mmr is True:
            out["mmr_lambda"] = 0.7
        elif self.mmr is not None and self.mmr is not False:
            out["mmr_lambda"] = _number(self.mmr, "mmr lambda")
        for name, on in (("neighbors", 1), ("prf", 10)):
            value = getattr(self, name)
            if value is True:
                out[name] = on
            elif value is False:
                out[name] = 0
            elif value is not None:
                if not isinstance(value, int):
                    raise InvalidInput(f"{name} must be an integer or a boolean")
                out[name] = value
        for name in ("temporal", "session_prior"):
            value = getattr(self, name)
            if value is not None:
                out[name] = float(value) if isinstance(value, bool) else _number(value, name)
        if self.speaker_neighbors is not None:
            value = self.speaker_neighbors
            out["speaker_neighbors"] = ((0.4 if value else 0.0) if isinstance(value, bool)
                                        else _number(value, "speaker_neighbors"))
        if self.speaker is not None and not isinstance(self.speaker, bool):
            raise InvalidInput("speaker must be a boolean")
        if self.speaker_weight is not None:
            _number(self.speaker_weight, "speaker_weight")  # its range: _RANGES, below
        if self.speaker is not None:
            out["speaker_boost"] = (0.5 if self.speaker_weight is None
                                    else float(self.speaker_weight)) if self.speaker else 0.0
        if self.decompose is not None and not isinstance(self.decompose, bool):
            raise InvalidInput("decompose must be a boolean")
        checked = {**out, "speaker_weight": self.speaker_weight}
        for name, low, high in _RANGES:  # also checked in SQL (memdb.check_search_options)
            if checked.get(name) is not None and not low <= checked[name] <= high:
                raise InvalidInput(f"{name} must be between {low:g} and {high:g}, "
                                   f"got {checked[name]}")
        return out


_FIELDS = frozenset(f.name for f in fields(SearchOptions))

# The ranges of the per-query options, declared once (memdb.core.ops.search_options) and refused
# before the round trip, the same on every server; memdb.check_search_options refuses the same
# values for psql callers (tests/test_ops.py checks both ends of every range there).
_RANGES = ranged()


# No search option needs a larger magnitude (rrf_k 60, half_life_days 365...); a larger one
# is a mistake or an attack (1e308 overflows the scoring arithmetic).
MAX_OPTION = 1e6


def _number(value: Any, name: str) -> float:
    return v.number(value, name, -MAX_OPTION, MAX_OPTION)


# The options MemoryStore.search starts from (and with it recall, graph search, ask, the CLI,
# the async store, the HTTP and MCP doors and the eval's "default"), chosen on the LoCoMo
# development split (README, "Evaluation"): the vector route at half weight, a small RRF
# constant and BM25 b = 0.3 lift hybrid recall@10 from 71.6 to 77.6 there; neighbour expansion
# (window 1, weight 0.4), the temporal boost (weight 1) and the same speaker's neighbouring
# lines (weight 0.4) are the cross-validated choices of round two (README, "Retrieval quality,
# cross-validated"). neighbors=0, temporal=0 or speaker_neighbors=0 turns one off. The SQL
# functions keep the textbook defaults (weights 1, rrf_k 60, k1 1.2, b 0.75, no neighbours, no
# temporal boost, no speaker neighbours) for callers who pass no options.
DEFAULT_OPTIONS = SearchOptions(weights={"vector": 0.5, "bm25": 1.0, "exact": 1.0}, rrf_k=5,
                                k1=1.2, b=0.3, neighbors=1, neighbor_weight=0.4, temporal=1.0,
                                speaker_neighbors=0.4)


def keyword_routes_ahead(options: dict[str, Any]) -> bool:
    """Whether a search with these (JSON) options runs its keyword routes while its query is
    being embedded: when it has a keyword route (bm25 or exact) to run, unless
    ``MEMDB_OVERLAP_EMBEDDING`` is 0 (one statement after the embedding, as a search with a
    given vector runs). See docs/performance.md, "Hiding the embedder"."""
    raw = os.environ.get("MEMDB_OVERLAP_EMBEDDING", "1").strip()
    if raw not in ("0", "1"):
        raise InvalidInput(f"MEMDB_OVERLAP_EMBEDDING must be 0 or 1, got {raw!r}")
    routes = options.get("routes", ROUTES)
    return raw == "1" and ("bm25" in routes or "exact" in routes)


class SearchResults(list):
    """Ranked SearchHits. ``explain`` (when asked for) holds the SQL, parameters, options and
    timings of the one round trip that produced them."""

    explain: dict[str, Any] | None = None
