"""The entity graph: entities, their mentions in memories and the relations between them, in
PostgreSQL (``memdb.entities``, ``memdb.entity_mentions``, ``memdb.entity_relations``;
revision 0009) - the part of an agent memory people reach for Neo4j for, done with tables and a
recursive CTE.

* **Write**: :meth:`Graph.link` extracts entities and relations from memories (the
  configured LLM with a strict JSON prompt, validated; on any failure, or with no LLM, the
  documented heuristic of :mod:`memdb.families._graph_extract` for Chinese and English) and writes
  them
  with ``memdb.link_memories`` (entities deduplicated per subject by normalized name and type,
  relations with the memory as evidence and a validity interval), then ``memdb.match_mentions``
  links each memory to the known entities it names. Re-linking a memory replaces its graph.
* **Read**: :meth:`Graph.search` adds the graph route to hybrid search: the entities
  named in the question are the seeds of a walk of up to ``hops`` relations
  (``memdb.search_graph``), the memories mentioning what it reaches are ranked, and that list is
  fused with ``memdb.search_hybrid``'s by weighted RRF (``memdb.search_hybrid_graph``). Off by
  default: :meth:`~memdb.MemoryStore.search` never runs it. :meth:`Graph.neighbors` shows
  an entity's neighbourhood (``memdb graph neighbors ENTITY``).

All three tables carry tenant and subject under row-level security, so subject isolation
applies and ``store.subjects.forget`` erases them; deleting a memory deletes
its mentions and the relations it evidenced.

>>> store.add("张三和李四是同事。", subject="u1")                    # doctest: +SKIP
>>> store.graph.link()                                             # doctest: +SKIP
>>> store.graph.search("谁和李四一起工作？", subject="u1")[0].details["graph_entities"]  # +SKIP
['李四', '张三']
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from ..core import sql
from ..core import validate as v
from ..core.embeddings import check_vector, embed_checked
from ..core.errors import InvalidInput, NotFound
from ..core.family import Family
from ..core.filters import Filter
from ..core.llm import ChatLLM, LLMError
from ..core.models import Memory, SearchHit
from ..retrieval.search import DEFAULT_OPTIONS, ROUTES, SearchOptions, SearchResults
from ._graph_extract import (
    GRAPH_SCHEMA,
    Extraction,
    build_graph_prompt,
    check_extraction,
    heuristic_graph,
    parse_graph_reply,
)

__all__ = ["Graph", "LinkResult", "GraphView", "Relation", "GRAPH_ROUTES", "MAX_HOPS"]

GRAPH_ROUTES = (*ROUTES, "graph")
MAX_HOPS = 4
_FROM_ENV: Any = object()  # llm=... default: the store's LLM (MEMDB_LLM_*), else the heuristic
_GRAPH_DETAIL_KEYS = ("hybrid_rank", "hybrid_score", "graph_rank", "graph_score", "graph_hops",
                      "graph_entities", "vector_rank", "vector_score", "bm25_rank", "bm25_score",
                      "exact_rank", "exact_score")


@dataclass(frozen=True)
class LinkResult:
    """What :meth:`Graph.link` did: how many memories were ``linked`` (and
    ``skipped``: missing, superseded or expired), how many extractions took each ``path``
    ("llm", "heuristic"), why the LLM was not used where it was not (``fallbacks``: reason ->
    count), the graph written: ``mentions`` (memory-entity links, name matches included)
    and ``relations``, and the model's entities, aliases and relations the checks
    ``refused`` (memory_id, item, reason: names the memory does not hold; the first 1,000)."""

    linked: int = 0
    skipped: int = 0
    paths: dict[str, int] = field(default_factory=dict)
    fallbacks: dict[str, int] = field(default_factory=dict)
    mentions: int = 0
    relations: int = 0
    ms: float = 0.0
    refused: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"linked": self.linked, "skipped": self.skipped, "paths": dict(self.paths),
                "fallbacks": dict(self.fallbacks), "mentions": self.mentions,
                "relations": self.relations, "ms": self.ms,
                "refused": [dict(r) for r in self.refused]}


@dataclass(frozen=True)
class Relation:
    """One edge of a neighbourhood: ``source -[type]-> target``, reached at ``depth`` hops
    (1: it touches the entity asked about), evidenced by memory ``memory_id``."""

    depth: int
    source: str
    source_type: str
    type: str
    target: str
    target_type: str
    strength: float
    memory_id: UUID
    valid_from: datetime
    valid_to: datetime | None

    def to_dict(self) -> dict[str, Any]:
        return {"depth": self.depth, "from": self.source, "from_type": self.source_type,
                "type": self.type, "to": self.target, "to_type": self.target_type,
                "strength": round(self.strength, 3), "memory_id": str(self.memory_id),
                "valid_from": self.valid_from.isoformat(),
                "valid_to": None if self.valid_to is None else self.valid_to.isoformat()}


@dataclass(frozen=True)
class GraphView:
    """An entity's neighbourhood: the matching ``entities`` (one per subject and type:
    id, subject, name, type, aliases, mentions) and the ``relations`` within ``hops``."""

    name: str
    hops: int
    entities: tuple[dict[str, Any], ...]
    relations: tuple[Relation, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"entity": self.name, "hops": self.hops,
                "entities": [dict(e) for e in self.entities],
                "relations": [r.to_dict() for r in self.relations]}


def extract_graph(text: str, llm: ChatLLM | None, timeout: float | None) -> Extraction:
    """The entities and relations of one memory: by ``llm`` when given (path ``graph``:
    schema-constrained JSON, validated by :func:`memdb.families._graph_extract.parse_graph_reply`,
    then only names the memory holds, :func:`~memdb.families._graph_extract.check_extraction`, the
    rest listed in ``refused``), else - or when the model fails, times out, loops, answers
    with anything but the JSON asked for or names nothing the memory holds - by the
    heuristic, with the reason in ``error``."""
    if llm is None:
        out = heuristic_graph(text)
        out.error = "no LLM configured"
        return out
    refused = []
    try:
        parsed = parse_graph_reply(llm.complete(build_graph_prompt(text), path="graph",
                                                schema=GRAPH_SCHEMA, timeout=timeout))
    except LLMError as exc:
        reason = f"llm {exc.kind}"
    else:
        checked = check_extraction(parsed, text)
        refused = checked.refused
        if parsed.error is not None:
            reason = parsed.error
        elif parsed.entities and not checked.entities:
            reason = "no entity of the reply is named in the memory"
        else:
            return checked
    out = heuristic_graph(text)
    out.error, out.refused = reason, refused
    return out


class Graph(Family):
    """``store.graph``: the entity graph (see the module docstring)."""

    def link(self, memory_ids: Iterable[UUID | str] | None = None, *,
             subject: str | None = None, llm: ChatLLM | None = _FROM_ENV,
             timeout: float | None = None, batch_size: int = 200,
             limit: int = 100_000) -> LinkResult:
        """Extract entities and relations from memories and link them into the graph.

        ``memory_ids``: the memories to (re-)link, in this order (default: every current
        memory of the store's subject, or of ``subject``, oldest first, at most ``limit``). ``llm``:
        default the store's (``$MEMDB_LLM_*``); None forces the heuristic. ``timeout``: the
        most one extraction waits for the model (default ``$MEMDB_LLM_TIMEOUT_GRAPH``, else
        ``$MEMDB_REMEMBER_TIMEOUT``, else 30 s).
        Extraction runs outside any transaction; the writes of a batch run in one.

        >>> store.graph.link([r.id for r in store.add_many(["张三和李四是同事。"])])  # +SKIP
        LinkResult(linked=1, skipped=0, paths={'heuristic': 1}, ...)
        """
        started = time.perf_counter()
        v.positive_int(batch_size, "batch_size", 10_000)
        v.positive_int(limit, "limit", 10**7)
        ids = None if memory_ids is None else [v.uuid(i) for i in memory_ids]
        if ids is not None and not ids:
            return LinkResult()
        who = v.optional_name(subject, "subject") or self._store.subject
        chat = self._store.llm if llm is _FROM_ENV else llm
        if chat is not None and not isinstance(chat, ChatLLM):
            raise InvalidInput("llm must be a ChatLLM or None")
        wait = _timeout(timeout)
        with self._core.transaction() as conn:
            rows = conn.execute(sql.query("graph_memories_to_link"), {
                "tenant": self._store.tenant, "ids": ids, "subject": who,
                "limit": limit}).fetchall()
        if ids is not None:  # in the order given
            order = {mid: n for n, mid in reversed(list(enumerate(ids)))}
            rows.sort(key=lambda r: order[r["id"]])
        found = {r["id"] for r in rows}
        skipped = 0 if ids is None else len({i for i in ids if i not in found})
        paths: dict[str, int] = {}
        fallbacks: dict[str, int] = {}
        linked = relations = mentions = 0
        refused: list[dict[str, str]] = []
        for start in range(0, len(rows), batch_size):
            batch = rows[start:start + batch_size]
            items = []
            for row in batch:
                ext = extract_graph(row["content"], chat, wait)
                paths[ext.path] = paths.get(ext.path, 0) + 1
                if ext.error is not None and chat is not None:
                    fallbacks[ext.error] = fallbacks.get(ext.error, 0) + 1
                refused += [{"memory_id": str(row["id"]), **r.to_dict()}
                            for r in ext.refused][:max(0, 1000 - len(refused))]
                items.append(ext.to_item(str(row["id"])))
            with self._core.transaction() as conn:
                out = conn.execute(sql.query("graph_link_memories"), {
                    "tenant": self._store.tenant, "items": Jsonb(items)}).fetchall()
                done = [r["memory_id"] for r in out if r["linked"]]
                conn.execute(sql.query("graph_match_mentions"),
                             {"tenant": self._store.tenant, "ids": done}).fetchone()
                mentions += int(conn.execute(sql.query("graph_mention_count"),
                                             {"ids": done}).fetchone()["n"])
            linked += len(done)
            skipped += len(out) - len(done)
            relations += sum(int(r["relations"]) for r in out)
        return LinkResult(linked, skipped, paths, fallbacks, mentions, relations,
                          round((time.perf_counter() - started) * 1000, 1), refused)

    def search(self, query: str, k: int = 10,
               filter: Filter | dict[str, Any] | None = None, *, hops: int = 2,
               entities: Sequence[str] | None = None,
               routes: Sequence[str] | None = None,
               weights: dict[str, float] | None = None,
               options: SearchOptions | None = None, rrf_k: float | None = None,
               depth: int | None = None, embedding: Any = None, explain: bool = False,
               **conditions: Any) -> SearchResults:
        """Hybrid search with the graph route, in one SQL call (``memdb.search_hybrid_graph``).

        ``routes``: some of vector, bm25, exact, graph (default all four; without "graph" it
        is the plain hybrid search's ranking, without the others it is the graph route alone,
        ``memdb.search_graph``). ``weights``: per-route weights; "graph" and "hybrid" weigh
        the two lists in the outer RRF (default 1 each), the others go to the inner hybrid
        search as in :meth:`~memdb.MemoryStore.search` (whose defaults apply). ``hops``:
        relations walked from the question's entities (0..4). ``entities``: names to start
        from besides those the question names. ``rrf_k``/``depth``: the outer fusion's
        constant (60) and candidates per list. Every hit's ``details`` has both lists' ranks
        and scores, the graph hops and the entities that connected it.
        """
        if not isinstance(query, str):
            raise InvalidInput("query must be a string")
        v.positive_int(k, "k", 1000)
        if isinstance(hops, bool) or not isinstance(hops, int) or not 0 <= hops <= MAX_HOPS:
            raise InvalidInput(f"hops must be an integer from 0 to {MAX_HOPS}")
        names = _names(entities)
        chosen = list(GRAPH_ROUTES if routes is None else
                      ([routes] if isinstance(routes, str) else routes))
        unknown = [r for r in chosen if r not in GRAPH_ROUTES]
        if unknown or not chosen:
            raise InvalidInput(f"unknown or no routes {unknown or chosen}; "
                               f"expected some of {GRAPH_ROUTES}")
        weights = dict(weights or {})
        graph_opts: dict[str, Any] = {"hops": hops}
        for key, name in (("graph", "weight"), ("hybrid", "hybrid_weight")):
            if key in weights:
                graph_opts[name] = _weight(weights.pop(key), key)
        if rrf_k is not None:
            graph_opts["rrf_k"] = _weight(rrf_k, "rrf_k")
            if graph_opts["rrf_k"] == 0:
                raise InvalidInput("rrf_k must be > 0")
        if depth is not None:
            graph_opts["depth"] = v.positive_int(depth, "depth", 1000)
        if names:
            graph_opts["entities"] = names
        inner = [r for r in chosen if r != "graph"]
        flt = Filter.of(filter, **conditions).to_json()
        if not query.strip() and not names:
            return SearchResults()
        v.optional_text(query, "query")
        started = time.perf_counter()
        if not inner:  # the graph route alone
            params: dict[str, Any] = {"tenant": self._store.tenant, "query": query, "k": k,
                                      "entities": names, "hops": hops, "filter": Jsonb(flt)}
            name = "graph_route"
            embed_s = 0.0
        else:
            opts = (options.over(DEFAULT_OPTIONS) if options else DEFAULT_OPTIONS).replace(
                routes=tuple(inner), weights=weights or None)
            if "graph" not in chosen:
                graph_opts["weight"] = 0.0
            vector = None
            if "vector" in inner:
                vector = (check_vector(embedding, self._store.embedder.dims)
                          if embedding is not None else
                          embed_checked(self._store.embedder, [query], query=True)[0])
            embed_s = time.perf_counter() - started
            params = {"tenant": self._store.tenant, "query": query, "embedding": vector, "k": k,
                      "filter": Jsonb(flt), "options": Jsonb(opts.to_json()),
                      "graph": Jsonb(graph_opts)}
            name = "graph_search"
        db_start = time.perf_counter()
        with self._core.read() as conn:
            rows = conn.execute(sql.query(name), params).fetchall()
        results = SearchResults(
            SearchHit(memory=Memory.from_row(r), score=float(r["score"]), rank=int(r["rank"]),
                      details={key: r.get(key) for key in _GRAPH_DETAIL_KEYS})
            for r in rows)
        if explain:
            shown = {key: (val.obj if isinstance(val, Jsonb) else val)
                     for key, val in params.items()}
            if shown.get("embedding") is not None:
                shown["embedding"] = f"<vector {len(shown['embedding'])}>"
            results.explain = {"sql": sql.query(name), "params": shown,
                               "embed_ms": round(embed_s * 1000, 3),
                               "db_ms": round((time.perf_counter() - db_start) * 1000, 3),
                               "graph_hits": sum(1 for r in rows if r["graph_rank"] is not None)}
        return results

    def neighbors(self, entity: str, *, hops: int = 1, limit: int = 100) -> GraphView:
        """The neighbourhood of the entity named ``entity`` (by normalized name or alias):
        the matching entities and every currently valid relation within ``hops`` (1..4) of
        it, nearest and strongest first. :class:`~memdb.core.errors.NotFound` when no entity has
        that name."""
        name = v.content(entity, "entity").strip()
        if len(name) > 200:
            raise InvalidInput("entity names have at most 200 characters")
        if isinstance(hops, bool) or not isinstance(hops, int) or not 1 <= hops <= MAX_HOPS:
            raise InvalidInput(f"hops must be an integer from 1 to {MAX_HOPS}")
        v.positive_int(limit, "limit", 10_000)
        params = {"tenant": self._store.tenant, "entity": name, "hops": hops, "limit": limit}
        with self._core.read() as conn:
            ents = conn.execute(sql.query("graph_entity"), params).fetchall()
            rels = conn.execute(sql.query("graph_neighbors"), params).fetchall() if ents else []
        if not ents:
            raise NotFound(f"no entity named {name!r}")
        return GraphView(
            name, hops,
            tuple({"id": e["id"], "subject": e["subject"], "name": e["name"], "type": e["type"],
                   "aliases": list(e["aliases"]), "mentions": int(e["mentions"])} for e in ents),
            tuple(Relation(r["depth"], r["from_name"], r["from_type"], r["relation"],
                           r["to_name"], r["to_type"], float(r["strength"]), r["memory_id"],
                           r["valid_from"], r["valid_to"]) for r in rels))




def _names(entities: Sequence[str] | None) -> list[str]:
    if entities is None:
        return []
    if isinstance(entities, str) or not all(isinstance(e, str) for e in entities):
        raise InvalidInput("entities must be a list of names")
    if len(entities) > 100 or any(len(e) > 200 for e in entities):
        raise InvalidInput("at most 100 entity names of at most 200 characters")
    return [e for e in entities if e.strip()]


def _weight(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value \
            or value < 0 or value == float("inf"):
        raise InvalidInput(f"{name} must be a finite number >= 0")
    return float(value)


def _timeout(value: float | None) -> float | None:
    """``timeout``, else ``$MEMDB_REMEMBER_TIMEOUT`` if set, else None: the LLM's limit of
    the graph path (``$MEMDB_LLM_TIMEOUT_GRAPH``, default 30 s)."""
    if value is None:
        raw = os.environ.get("MEMDB_REMEMBER_TIMEOUT")
        if not raw:
            return None
        try:
            value = float(raw)
        except ValueError:
            raise InvalidInput(f"MEMDB_REMEMBER_TIMEOUT must be a number, got {raw!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise InvalidInput("timeout must be a positive number of seconds")
    return float(value)
