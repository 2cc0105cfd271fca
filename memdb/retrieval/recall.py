"""Planned retrieval on :class:`~memdb.MemoryStore`: ``recall`` (plan → search in the plan's
categories → status → trace). A mixin of the store's core verbs, so the store's own module
stays small; reading the traces is ``store.traces`` (:mod:`memdb.families.traces`), the
classification
backfill ``store.maintenance.reclassify``.

``store.recall(query, k)`` asks the planner where to look (:mod:`memdb.retrieval.planner`), embeds
the
query and the plan's texts in one batch, and makes one round trip to ``memdb.search_planned``
(each typed query inside its categories, weighted RRF, hotness except on ``system``, the
all-categories fallback when a route finds nothing or fails). By default the result is
anchored: it holds exactly the memories the flat search returns at k, in the plan's order
(``anchor=False`` lets a scoped route pull in memories flat ranked lower). The results carry
a status:

* ``ok``: the plan ran as planned and found memories;
* ``no_relevant_memory``: every route ran without error (the fallback across all categories
  included) and nothing matched;
* ``degraded``: something did not go as planned (``reasons``: ``fallback``, ``route_error:qN``,
  ``planner_timeout``, ``planner_invalid``, ``planner_error``, ``search_timeout``,
  ``search_error``), whether or not memories were found, so an agent can say "I could not
  look properly" rather than "you never told me".

A trace row is written in the same transaction (``trace=False`` or ``store.trace_recall =
False`` turns it off) with the redacted query (:mod:`memdb.core.redact`).
"""

from __future__ import annotations

import enum
import time
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from ..core import sql
from ..core import validate as v
from ..core.embeddings import check_vector, embed_checked
from ..core.errors import DatabaseError, DatabaseUnavailable, InvalidInput
from ..core.filters import Filter
from ..core.models import Memory, SearchHit
from ..core.ops.catalog import MAX_K
from ..core.redact import redact_record
from .decompose import Decomposition, search_decomposed
from .planner import Planner, QueryPlan
from .search import DEFAULT_OPTIONS, SearchOptions, SearchResults

__all__ = ["RecallMixin", "RecallResults", "RecallStatus", "RECALL_OPTIONS", "DEFAULT_BACKSTOP",
           "WITH_GENERAL", "ANCHOR"]

# what a trace row keeps as it is (names of the scope, row ids): everything else is redacted
_TRACE_IDS = frozenset({"tenant", "subject", "result_subjects", "chosen_ids", "id"})
# recall starts from the tuned search options. Hotness (never applied to 'system') is an
# option, off by default: at weight 0.3 it changed nothing measurable once anchored (MRR +0.1
# on the labeled set and LoCoMo; unanchored it had cost MRR, 72.7 -> 70.9 on the labeled set);
# pass hotness=0.3.
RECALL_OPTIONS = DEFAULT_OPTIONS
# How the scoped routes meet the flat search (measured in benchmarks/eval_intent.py and
# eval_locomo_planned.py, k = 5, against flat hybrid in the same run; figures in the README):
# ANCHOR: the result holds exactly the memories the flat (all-categories) search returns at k,
#   and the plan orders them. Unanchored, a scoped route could pull a memory of its categories
#   past the flat top k: on the labeled set (memories in clean categories) that gained recall@5,
#   on LoCoMo's chat turns (a planned category holds the evidence 35-72 % of the time) it
#   traded about as many questions won as lost at rank 5 (8/9), so recall@5 fell below flat by
#   a question or two. Anchored, recall@k equals flat's by construction and the plan's
#   knowledge shows as ordering (MRR: labeled +6.6, LoCoMo +2.5). recall(anchor=False)
#   restores the pull.
# DEFAULT_BACKSTOP: weight of the all-categories route beside the typed ones (at most 1 each);
#   0 = only as the fallback (and as the anchor).
# WITH_GENERAL: whether scoped queries also search 'general' (the memories no rule placed).
#   Off: with it, a scoped route covers most chat turns under a second, filler-stripped query
#   text and reshuffled LoCoMo's order (MRR below flat); without it, MRR rose on both sets.
ANCHOR = True
DEFAULT_BACKSTOP = 3.0
WITH_GENERAL = False


class RecallStatus(enum.StrEnum):
    """What a recall can tell an agent about its own result."""

    OK = "ok"
    NO_RELEVANT_MEMORY = "no_relevant_memory"
    DEGRADED = "degraded"


class RecallResults(SearchResults):
    """Ranked SearchHits of a planned recall, with ``status``, ``reasons``, the ``plan``,
    whether the all-categories ``fallback`` ran, the ``trace_id``, ``timings`` (ms) and, with
    option ``decompose``, the ``decomposition`` searched."""

    status: RecallStatus = RecallStatus.NO_RELEVANT_MEMORY
    reasons: tuple[str, ...] = ()
    plan: QueryPlan | None = None
    fallback: bool = False
    trace_id: UUID | None = None
    timings: dict[str, float] | None = None
    notes: dict[str, Any] | None = None
    decomposition: Decomposition | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status.value, "reasons": list(self.reasons),
                "fallback": self.fallback,
                "trace_id": None if self.trace_id is None else str(self.trace_id),
                "plan": None if self.plan is None else self.plan.to_json(),
                "decomposition": None if self.decomposition is None
                else self.decomposition.to_json(),
                "timings": self.timings, "notes": self.notes,
                "hits": [h.to_dict() for h in self]}


def _status(found: bool, reasons: list[str]) -> RecallStatus:
    hard = [r for r in reasons if r != "fallback"]
    if not found:
        return RecallStatus.DEGRADED if hard else RecallStatus.NO_RELEVANT_MEMORY
    return RecallStatus.DEGRADED if reasons else RecallStatus.OK


class RecallMixin:
    """Planned retrieval and traces for MemoryStore (see the module docstring)."""

    trace_recall: bool = True
    recall_timeout_ms: int | None = 5000
    _planner: Planner | None = None

    # provided by MemoryStore
    tenant: str
    subject: str | None

    @property
    def planner(self) -> Planner:
        """The query planner (default: :meth:`Planner.from_env`); assignable."""
        if self._planner is None:
            self._planner = Planner.from_env()
        return self._planner

    @planner.setter
    def planner(self, value: Planner) -> None:
        self._planner = value

    def plan(self, query: str) -> QueryPlan:
        """The plan ``recall`` would run for ``query`` (nothing is searched)."""
        return self.planner.plan(query)

    def decompose(self, query: str) -> Decomposition:
        """The sub-queries option ``decompose`` would search for ``query`` (nothing is
        searched): the LLM's when one is configured, else (or on any LLM failure, then with
        ``fallback`` and ``reason``) the heuristic split; see :meth:`Planner.decompose`."""
        return self.planner.decompose(query)

    # -- recall ----------------------------------------------------------------------------
    def recall(self, query: str, k: int = 10, filter: Filter | dict[str, Any] | None = None, *,
               plan: QueryPlan | dict[str, Any] | str | None = None,
               options: SearchOptions | None = None, hotness: float | None = None,
               backstop: float | None = None, with_general: bool | None = None,
               anchor: bool | None = None, embedding: Any = None, trace: bool | None = None,
               timeout_ms: int | None = None, **conditions: Any) -> RecallResults:
        """Planned, directory-scoped search; see the module docstring.

        plan: a QueryPlan (or its JSON) to run instead of planning; options: over
        :data:`RECALL_OPTIONS`; hotness: its weight (0 = off); backstop: weight of the
        all-categories route (default :data:`DEFAULT_BACKSTOP`); with_general: scoped queries
        also search 'general', the unclassified memories (default :data:`WITH_GENERAL`);
        anchor: keep exactly the flat search's top k memories and let the plan order them
        (default :data:`ANCHOR`; False lets a scoped route pull in memories flat ranked lower);
        embedding: the query's
        precomputed vector; timeout_ms: statement timeout of the planned search (then a flat
        search is run instead and the status is degraded). ``options.decompose``: the
        all-categories route (the anchor) is the decomposed search, the query and its
        sub-queries fused (:meth:`decompose`; the plan JSON's ``subqueries``), so recall@k
        equals a decomposed ``search``'s; an LLM decomposition that fell back adds its reason
        (decompose_timeout, decompose_invalid, decompose_error) to ``reasons``.
        """
        started = time.perf_counter()
        if not isinstance(query, str):
            raise InvalidInput("query must be a string")
        v.positive_int(k, "k", MAX_K)
        flt = Filter.of(filter, **conditions).to_json()
        opts = (options.over(RECALL_OPTIONS) if options else RECALL_OPTIONS).replace(
            hotness_weight=hotness)
        options_json = opts.to_json()
        options_json.pop("mmr_lambda", None)
        options_json.pop("mmr_candidates", None)
        if anchor is not None and not isinstance(anchor, bool):
            raise InvalidInput("anchor must be True, False or None")
        backstop = DEFAULT_BACKSTOP if backstop is None else backstop
        if isinstance(backstop, bool) or not isinstance(backstop, (int, float)) \
                or not 0 <= backstop <= 10:
            raise InvalidInput("backstop must be a number in [0, 10]")
        if not query.strip():
            out = RecallResults()
            out.timings = {"total_ms": 0.0}
            return out
        v.optional_text(query, "query")
        t0 = time.perf_counter()
        if plan is None:
            the_plan = self.planner.plan(query)
        elif isinstance(plan, QueryPlan):
            the_plan = plan
        else:
            the_plan = QueryPlan.from_json(plan)
        reasons: list[str] = []
        if the_plan.fallback:
            reasons.append(the_plan.reason or "planner_error")
        split = self.planner.decompose(query) if opts.decompose else None
        if split is not None and split.fallback:
            reasons.append(split.reason or "decompose_error")
        subqueries = list(split.subqueries) if split is not None else []
        plan_ms = (time.perf_counter() - t0) * 1000

        t0 = time.perf_counter()
        texts = [query] + [q.text for q in the_plan.queries] + subqueries
        vectors: dict[str, Any] = {}
        use_vector = "vector" in options_json.get("routes", ["vector"])
        if use_vector:
            dims = self.embedder.dims  # type: ignore[attr-defined]
            if embedding is not None:
                vectors[query] = check_vector(embedding, dims)
            missing = [t for t in dict.fromkeys(texts) if t not in vectors]
            if missing:
                for t, vec in zip(missing, embed_checked(self.embedder, missing, query=True),  # type: ignore[attr-defined]
                                  strict=True):
                    vectors[t] = vec
        embeddings = [vectors[t] for t in texts] if use_vector else None
        embed_ms = (time.perf_counter() - t0) * 1000

        want_trace = self.trace_recall if trace is None else trace
        fetch = min(MAX_K, k + 10) if want_trace else k
        params = {"tenant": self.tenant,
                  "plan": Jsonb({"query": query,
                                 "queries": [q.to_json() for q in the_plan.queries],
                                 **({"subqueries": subqueries} if subqueries else {})}),
                  "embeddings": embeddings, "k": fetch, "filter": Jsonb(flt),
                  "options": Jsonb({**options_json, "backstop_weight": float(backstop),
                                    "with_general": WITH_GENERAL if with_general is None
                                    else bool(with_general),
                                    "anchor_k": k if (ANCHOR if anchor is None else anchor)
                                    else 0})}
        timeout = self.recall_timeout_ms if timeout_ms is None else timeout_ms
        t0 = time.perf_counter()
        out = RecallResults()
        try:
            with self.core.read() as conn:
                if timeout:
                    conn.execute(sql.query("statement_timeout"), {"ms": str(int(timeout))})
                rows = conn.execute(sql.query("search_planned"), params).fetchall()
                db_ms = (time.perf_counter() - t0) * 1000
                notes = rows[0]["notes"] if rows and rows[0]["rank"] == 0 else {}
                hits = [r for r in rows if r["rank"] != 0]
                for note in notes.get("routes", []):
                    if note.get("error"):
                        reasons.append(f"route_error:{note['route']}")
                fallback = bool(notes.get("fallback"))
                if fallback:
                    reasons.append("fallback")
                out.extend(SearchHit(memory=Memory.from_row(r), score=float(r["score"]),
                                     rank=int(r["rank"]),
                                     details={"fused": r["fused"], "multiplier": r["multiplier"],
                                              "routes": r["routes"]})
                           for r in hits[:k])
                self._finish(out, the_plan, reasons, fallback, notes,
                             {"plan_ms": plan_ms, "embed_ms": embed_ms, "db_ms": db_ms}, started,
                             split)
                if want_trace and self.replica is None:  # type: ignore[attr-defined]
                    out.trace_id = self._write_trace(conn, query, k, flt, out, hits)
            if want_trace and out.trace_id is None:  # the read ran on a standby
                with self.db.transaction(tenant=self.tenant,  # type: ignore[attr-defined]
                                         subject=self.subject) as conn:
                    out.trace_id = self._write_trace(conn, query, k, flt, out, hits)
            return out
        except DatabaseError as exc:
            state = getattr(exc.__cause__, "sqlstate", None)
            if state != "57014" and isinstance(exc, DatabaseUnavailable):
                raise
            reasons.append("search_timeout" if state == "57014" else "search_error")
        # the planned search failed as a whole: a flat search across all categories instead
        flat_options = {key: val for key, val in options_json.items()}
        t0 = time.perf_counter()
        vector = embeddings[0] if embeddings else None
        if subqueries:  # the decomposed flat search
            flat = search_decomposed(self, query, vector, subqueries, k, flt, flat_options,
                                     False, 0.0, split)
        else:
            flat = self._search(query, vector, k, flt,  # type: ignore[attr-defined]
                                flat_options, False, 0.0)
        db_ms = (time.perf_counter() - t0) * 1000
        out = RecallResults(flat)
        reasons.append("fallback")
        self._finish(out, the_plan, reasons, True, {"routes": [], "fallback": True},
                     {"plan_ms": plan_ms, "embed_ms": embed_ms, "db_ms": db_ms}, started, split)
        if want_trace:
            with self.core.transaction() as conn:
                out.trace_id = self._write_trace(conn, query, k, flt, out, None)
        return out

    @staticmethod
    def _finish(out: RecallResults, plan: QueryPlan, reasons: list[str], fallback: bool,
                notes: dict[str, Any], timings: dict[str, float], started: float,
                split: Decomposition | None = None) -> None:
        out.plan, out.fallback, out.notes, out.decomposition = plan, fallback, notes, split
        out.reasons = tuple(dict.fromkeys(reasons))
        out.status = _status(bool(out), list(out.reasons))
        out.timings = {key: round(val, 3) for key, val in timings.items()}
        out.timings["total_ms"] = round((time.perf_counter() - started) * 1000, 3)

    def _trace_subject(self, flt: dict[str, Any]) -> str:
        if self.subject:
            return self.subject
        s = flt.get("subject")
        if isinstance(s, str):
            return s
        if isinstance(s, list) and len(s) == 1:
            return str(s[0])
        return "*"

    def _write_trace(self, conn: Any, query: str, k: int, flt: dict[str, Any],
                     out: RecallResults, rows: list[dict[str, Any]] | None) -> UUID:
        plan = out.plan
        assert plan is not None
        if rows is None:
            candidates = [{"id": str(h.memory.id), "score": h.score,
                           "category": h.memory.category.value,
                           "routes": {"flat": {key: h.details.get(key) for key in
                                               ("vector_rank", "bm25_rank", "exact_rank")}}}
                          for h in out]
        else:
            candidates = [{"id": str(r["id"]), "score": r["score"], "category": r["category"],
                           "routes": r["routes"]} for r in rows]
        plan_json = plan.to_json()
        if out.decomposition is not None:
            plan_json["decomposition"] = {**out.decomposition.to_json(), "query": None}
        # one redaction over every text the row keeps (query, plan, sub-queries, nested JSON),
        # each cleared of the secrets found in any of them; identifiers are kept as they are
        row = redact_record({
            "tenant": self.tenant, "subject": self._trace_subject(flt), "query": query,
            "intent": plan.intent, "plan_source": plan.source, "fallback": out.fallback,
            "status": out.status.value, "reasons": list(out.reasons),
            "categories": list(plan.categories), "plan": plan_json,
            "candidates": candidates, "chosen_ids": [h.memory.id for h in out],
            "result_subjects": sorted({h.memory.subject for h in out}), "k": k,
            "latency_ms": (out.timings or {}).get("total_ms", 0.0),
            "timings": out.timings or {},
        }, keep=_TRACE_IDS)
        for key in ("plan", "candidates", "timings"):
            row[key] = Jsonb(row[key])
        return conn.execute(sql.query("insert_trace"), row).fetchone()["id"]
