"""LangGraph's long-term memory store on memdb: :class:`MemdbStore` and :class:`AsyncMemdbStore`
implement ``langgraph.store.base.BaseStore`` (``pip install 'memdb[langgraph]'``).

>>> store = MemdbStore(tenant="acme")                                   # doctest: +SKIP
>>> store.put(("users", "alice"), "drink", {"text": "Alice prefers green tea"})
>>> store.search(("users",), query="what does alice drink?")[0].key
'drink'

Mapping (docs/langgraph.md): the tenant (and subject, default ``"langgraph"``, and category,
default ``"general"``) are fixed by the store's configuration, never by a namespace; a
namespace and key become the memory's URI ``mem://{subject}/{category}/ns/{labels...}/={key}``
(:mod:`memdb.integrations._langgraph_map`); the value is its ``metadata`` (key order kept); the
text of the value (the ``index`` fields, default all of it) is its ``content``. The puts of a
batch are one atomic upsert (one transaction under the store's write lock: the last writer
wins); a put of an existing key updates that memory in place (version, history row), so
``created_at`` stays and ``updated_at`` moves. ``search(query=...)`` is memdb's hybrid search
(vector + BM25 + exact, fused), or vector similarity alone with ``ranking="vector"``,
confined to the namespace prefix by a URI-prefix filter inside the SQL scan; without a query,
items come most recently updated first. Puts bypass memdb's write gate: a key-value store
keeps what it is given.

The operations are written once, in :meth:`MemdbStore._batch`; :class:`AsyncMemdbStore` runs
the same body on :class:`memdb.AsyncMemoryStore`'s async driver (:func:`memdb.core.bridge.run`).
Concurrent async calls share batches (:mod:`memdb.integrations._langgraph_batch`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from psycopg.types.json import Jsonb

from ..core import bridge, sql
from ..core import validate as v
from ..core.embeddings import Embedder, embed_checked
from ..core.errors import DimensionMismatch, InvalidInput, MemdbError, MissingDependency
from ..core.models import Category, Memory
from ..families.aio import AsyncMemoryStore
from ..families.store import MAX_K, MemoryStore
from ..write.inputs import as_input
from . import _langgraph_map as lg
from ._langgraph_batch import Batcher
from ._langgraph_embed import LangGraphEmbedder

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        validate_op_namespace,
    )
except ImportError as exc:  # pragma: no cover (the extra is installed in dev)
    raise MissingDependency("memdb.integrations.langgraph needs LangGraph: "
                            "pip install 'memdb[langgraph]'") from exc

__all__ = ["MemdbStore", "AsyncMemdbStore"]

_PAGE = 200  # rows per page when a filter must be checked beyond SQL


def _matches_condition(namespace: tuple[str, ...], cond: MatchCondition) -> bool:
    path = tuple(cond.path)
    if len(namespace) < len(path):
        return False
    pairs = (zip(namespace, path, strict=False) if cond.match_type == "prefix"
             else zip(reversed(namespace), reversed(path), strict=False))
    if cond.match_type not in ("prefix", "suffix"):
        raise InvalidInput(f"match_type must be 'prefix' or 'suffix', got {cond.match_type!r}")
    return all(p == "*" or n == p for n, p in pairs)


def _index_embedder(index: Any, embedder: Embedder | None, store: Any) -> Embedder | None:
    """The embedder of the memdb store to open: ``index["embed"]`` (LangGraph's embedding
    function, in an embedding space of its own holding ``index["dims"]`` dimensions) when
    given, else ``embedder`` (None: memdb's default)."""
    if not isinstance(index, dict) or index.get("embed") is None:
        return embedder
    if embedder is not None or store is not None:
        raise InvalidInput("index['embed'] sets the embedder of the memdb store this LangGraph "
                           "store opens: pass it without embedder= or store= (or pass a "
                           "memdb embedder= instead of index['embed'])")
    if "dims" not in index:
        raise InvalidInput("index['embed'] needs index['dims'], the width of its vectors")
    return LangGraphEmbedder(index["embed"], index["dims"])


def _own_store(kind: type, store: Any, dsn: str | None, **options: Any) -> tuple[Any, bool]:
    """(the memdb store to use, whether this LangGraph store opened it and so closes it): the
    given ``store`` (of ``kind``), else a new one without a write gate (a key-value store keeps
    what it is given)."""
    if store is None:
        return kind(dsn, gate=None, **options), True
    if not isinstance(store, kind):
        raise InvalidInput(f"store must be a memdb {kind.__name__}, got {type(store).__name__}")
    return store, False


class MemdbStore(BaseStore):
    """LangGraph's ``BaseStore`` over one memdb tenant (and subject): items are memories.

    ``dsn``, ``tenant``, ``embedder``, ``pool_size``, ``actor`` (who history records): as
    :class:`memdb.MemoryStore`'s (default the embedded server and the local embedder); or
    pass ``store``, a MemoryStore of your own (its subject, if it has one, wins).
    ``subject`` and ``category``: where the items live in memdb. ``index``: LangGraph's
    index config; its ``fields`` choose the text that is searched (default the whole value);
    memdb embeds with its own embedder, so ``embed`` and ``dims`` are refused (pass
    ``embedder=``). ``ttl``: LangGraph's TTL config (``default_ttl`` minutes,
    ``refresh_on_read``); expired items are never returned. ``ranking``: ``"hybrid"``
    (default: memdb's fused vector + BM25 + exact search, ``score`` the fused score) or
    ``"vector"`` (vector similarity alone, ``score`` the cosine similarity, as LangGraph's
    own stores rank and score).
    """

    supports_ttl = True

    def __init__(self, dsn: str | None = None, *, tenant: str = "default",
                 subject: str = "langgraph", category: str = "general",
                 embedder: Embedder | None = None, index: dict[str, Any] | None = None,
                 ttl: dict[str, Any] | None = None, store: MemoryStore | None = None,
                 pool_size: int = 4, actor: str | None = None,
                 ranking: str = "hybrid") -> None:
        subject = v.name(subject, "subject")
        embedder = _index_embedder(index, embedder, store)
        self._mem, self._owns = _own_store(MemoryStore, store, dsn, tenant=tenant,
                                           subject=subject, embedder=embedder,
                                           pool_size=pool_size, actor=actor)
        self._configure(self._mem.subject or subject, category, index, ttl, ranking)
        self._batcher = Batcher(lambda ops: asyncio.to_thread(self._batch, ops))

    def _configure(self, subject: str, category: str, index: dict[str, Any] | None,
                   ttl: dict[str, Any] | None, ranking: str) -> None:
        if ranking not in ("hybrid", "vector"):
            raise InvalidInput(f"ranking must be 'hybrid' or 'vector', got {ranking!r}")
        self.ranking = ranking
        self.subject = subject
        self.category = v.choice(category, Category, "category").value
        self._root = lg.root(self.subject, self.category)
        self.index_fields: list[str] | None = None
        if index is not None:
            if not isinstance(index, dict):
                raise InvalidInput("index must be a dict (LangGraph's IndexConfig)")
            dims = index.get("dims")
            if dims is not None and dims != self._mem.embedder.dims:
                raise DimensionMismatch(
                    f"index['dims'] is {dims!r}, but the store's embedder "
                    f"({self._mem.embedder.model}) makes {self._mem.embedder.dims}-dimensional "
                    "vectors: pass index['embed'] with it, or drop index['dims']")
            fields = index.get("fields")
            if fields is not None and (not isinstance(fields, list)
                                       or not all(isinstance(f, str) for f in fields)):
                raise InvalidInput("index['fields'] must be a list of JSON paths")
            self.index_fields = fields
        if ttl is not None:
            if not isinstance(ttl, dict):
                raise InvalidInput("ttl must be a dict (LangGraph's TTLConfig)")
            if ttl.get("default_ttl") is not None:
                self._ttl_seconds(ttl["default_ttl"])
        self.ttl_config = ttl
        embedder = self._mem.embedder
        # LangGraph's IndexConfig as memdb uses it: memdb always indexes (the whole value
        # unless ``fields`` narrow it), so this is never None; ``embed`` is the one given in
        # ``index``, else memdb's embedder as a function
        embed = embedder.embed if isinstance(embedder, LangGraphEmbedder) else (
            lambda texts: [[float(x) for x in vec]
                           for vec in embed_checked(embedder, list(texts))])
        self.index_config: dict[str, Any] = {
            "dims": embedder.dims, "fields": list(self.index_fields or ["$"]), "embed": embed}

    @property
    def tenant(self) -> str:
        return self._mem.tenant

    @property
    def memory_store(self) -> MemoryStore:
        """The memdb store underneath (history, recall, maintenance of the same rows)."""
        return self._mem

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(tenant={self.tenant!r}, subject={self.subject!r}, "
                f"category={self.category!r})")

    # -- the two entry points LangGraph calls ------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self._batch(list(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Concurrent calls share batches; each batch runs off the event loop (the synchronous
        store's driver blocks)."""
        return await self._batcher.submit(list(ops))

    def close(self) -> None:
        """Close the connection pool (only if this store opened it)."""
        if self._owns:
            self._mem.close()

    def __enter__(self) -> MemdbStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the operations, written once ----------------------------------------------------------
    def _batch(self, ops: list[Op]) -> list[Result]:
        """Reads in op order, then the puts (the last put of a key wins), as LangGraph's own
        stores do."""
        for op in ops:
            if not isinstance(op, (GetOp, PutOp, SearchOp, ListNamespacesOp)):
                raise InvalidInput(f"not a LangGraph store operation: {type(op).__name__}")
            validate_op_namespace(op)
        results: list[Result] = [None] * len(ops)
        refresh: dict[Any, float] = {}
        gets = [(i, op) for i, op in enumerate(ops) if isinstance(op, GetOp)]
        if gets:
            uris = [lg.item_uri(self._root, tuple(op.namespace), str(op.key)) for _, op in gets]
            rows = self._rows(uris)
            for (i, op), uri in zip(gets, uris, strict=True):
                row = rows.get(uri)
                if row is not None and not row["expired"]:
                    memory = Memory.from_row(row)
                    results[i] = self._item(memory)
                    self._note_read(memory, op.refresh_ttl, refresh)
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for i, op in enumerate(ops):
            if isinstance(op, SearchOp):
                results[i] = self._search(op, refresh)
            elif isinstance(op, ListNamespacesOp):
                results[i] = self._namespaces(op)
            elif isinstance(op, PutOp):
                puts[(tuple(op.namespace), str(op.key))] = op
        if refresh:
            self._refresh(refresh)
        if puts:
            self._put(list(puts.values()))
        return results

    def _item(self, memory: Memory, score: float | None = None, *,
              search: bool = False) -> Item:
        namespace, key = lg.parse_uri(self._root, memory.uri)
        value = lg.unpack(memory.metadata)
        if search:
            return SearchItem(namespace=namespace, key=key, value=value,
                              created_at=memory.created_at, updated_at=memory.updated_at,
                              score=score)
        return Item(value=value, key=key, namespace=namespace,
                    created_at=memory.created_at, updated_at=memory.updated_at)

    @staticmethod
    def _ttl_seconds(minutes: Any) -> float:
        if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) \
                or not minutes > 0 or minutes == float("inf"):
            raise InvalidInput(f"ttl must be a positive number of minutes, got {minutes!r}")
        return float(minutes) * 60.0

    def _note_read(self, memory: Memory, refresh_ttl: bool, refresh: dict[Any, float]) -> None:
        minutes = lg.ttl_of(memory.tags)
        if refresh_ttl and minutes is not None:
            refresh[memory.id] = minutes * 60.0

    def _rows(self, uris: list[str], conn: Any = None) -> dict[str, dict[str, Any]]:
        """The newest current row at each item URI (expired ones flagged), in ``conn``'s
        transaction or a new one."""
        if conn is None:
            with self._mem.core.transaction() as own:
                return self._rows(uris, own)
        rows = conn.execute(sql.query("langgraph_get"), {
            "tenant": self.tenant, "subject": self.subject, "category": self.category,
            "uris": sorted(set(uris)), "keys": sorted({lg.norm_key(u) for u in uris})
        }).fetchall()
        found: dict[str, dict[str, Any]] = {}
        for row in rows:
            found.setdefault(row["uri"], row)
        return found

    def _list(self, prefix: str, metadata: dict[str, Any] | None, limit: int,
              offset: int) -> list[Memory]:
        """Current, unexpired items under a URI prefix, most recently updated first."""
        with self._mem.core.transaction() as conn:
            rows = conn.execute(sql.query("langgraph_list"), {
                "tenant": self.tenant, "subject": self.subject, "category": self.category,
                "prefix": prefix, "metadata": None if metadata is None else Jsonb(metadata),
                "limit": limit, "offset": offset}).fetchall()
        return [Memory.from_row(r) for r in rows]

    def _filtered(self, prefix: str, op: SearchOp, want: int | None) -> list[Memory]:
        """The items under ``prefix`` passing the filter, most recently updated first: the
        first ``want`` of them, or (``None``) all, every item checked (so a comparison that
        cannot be made raises, as in InMemoryStore, whichever page is asked for)."""
        in_sql = None if want is None else lg.sql_filter(op.filter)
        matched: list[Memory] = []
        start = 0
        while want is None or len(matched) < want:
            rows = self._list(prefix, in_sql, _PAGE, start)
            matched += [m for m in rows if lg.matches(lg.unpack(m.metadata), op.filter)]
            if len(rows) < _PAGE:
                break
            start += _PAGE
        return matched

    def _search(self, op: SearchOp, refresh: dict[Any, float]) -> list[SearchItem]:
        v.offset(op.offset)
        if not isinstance(op.limit, int) or isinstance(op.limit, bool) or op.limit < 0:
            raise InvalidInput(f"limit must be a non-negative integer, got {op.limit!r}")
        lg.sql_filter(op.filter)  # a malformed filter or unknown operator is refused first
        prefix = lg.prefix_uri(self._root, tuple(op.namespace_prefix))
        want = op.offset + op.limit
        # a comparison may raise on any item: then every item under the prefix is checked
        every = self._filtered(prefix, op, None) if lg.compares(op.filter) else None
        if op.limit == 0:
            return []
        if op.query:
            chosen = self._query(op, prefix, want, every)
        elif every is not None:
            chosen = [(m, None) for m in every[op.offset:want]]
        elif op.filter:
            chosen = [(m, None) for m in self._filtered(prefix, op, want)[op.offset:want]]
        else:  # one page at the offset
            chosen = [(m, None) for m in self._list(prefix, None, op.limit, op.offset)]
        for memory, _score in chosen:
            self._note_read(memory, op.refresh_ttl, refresh)
        return [self._item(m, s, search=True) for m, s in chosen]

    def _query(self, op: SearchOp, prefix: str, want: int,
               every: list[Memory] | None) -> list[tuple[Memory, float | None]]:
        """The ranked page of a search with a query: memdb's hybrid search, or with
        ``ranking="vector"`` the vector route alone scored by cosine similarity."""
        flt: dict[str, Any] = {"subject": self.subject, "category": self.category,
                               "uri_prefix": prefix}
        in_sql = lg.sql_filter(op.filter)
        if in_sql and every is None:
            flt["metadata"] = in_sql
        k = min(MAX_K, want * 4 + 10 if op.filter else want)
        if self.ranking == "vector":
            scored = self._vector_hits(op.query, prefix, flt.get("metadata"), k)
        else:
            scored = [(h.memory, h.score) for h in self._mem.search(op.query, k=k, filter=flt)]
        keep = None if every is None else {m.id for m in every}
        found = [(m, s) for m, s in scored
                 if (keep is None and lg.matches(lg.unpack(m.metadata), op.filter))
                 or (keep is not None and m.id in keep)]
        return found[op.offset:want]

    def _vector_hits(self, query: str, prefix: str, metadata: dict[str, Any] | None,
                     k: int) -> list[tuple[Memory, float]]:
        """The ``k`` items under ``prefix`` most similar to ``query``, each scored by its best
        per-field vector (or its memory's vector without any), as LangGraph's stores score."""
        vector = embed_checked(self._mem.embedder, [query], query=True)[0]
        space_id = self._mem.space_id()
        with self._mem.core.transaction() as conn:
            rows = conn.execute(sql.query("langgraph_vector_search"), {
                "tenant": self.tenant, "subject": self.subject, "category": self.category,
                "prefix": prefix, "metadata": None if metadata is None else Jsonb(metadata),
                "query": vector, "space_id": space_id, "limit": k}).fetchall()
        return [(Memory.from_row(r), float(r["score"])) for r in rows]

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        v.offset(op.offset)
        if not isinstance(op.limit, int) or isinstance(op.limit, bool) or op.limit < 0:
            raise InvalidInput(f"limit must be a non-negative integer, got {op.limit!r}")
        if op.max_depth is not None and (not isinstance(op.max_depth, int)
                                         or op.max_depth < 1):
            raise InvalidInput(f"max_depth must be a positive integer, got {op.max_depth!r}")
        with self._mem.core.transaction() as conn:
            rows = conn.execute(sql.query("langgraph_namespaces"), {
                "tenant": self.tenant, "subject": self.subject, "category": self.category,
                "root": self._root}).fetchall()
        spaces = [lg.namespace_of(self._root, r["prefix"]) for r in rows]
        conditions = op.match_conditions or ()
        spaces = [ns for ns in spaces if all(_matches_condition(ns, c) for c in conditions)]
        if op.max_depth is not None:
            spaces = [ns[:op.max_depth] for ns in spaces]
        return sorted(set(spaces))[op.offset:op.offset + op.limit]

    def _refresh(self, refresh: dict[Any, float]) -> None:
        with self._mem.core.transaction() as conn:
            self._mem.core.begin(conn, "langgraph: TTL refreshed on read")
            conn.execute(sql.query("langgraph_refresh_ttl"), {
                "tenant": self.tenant, "ids": list(refresh), "secs": list(refresh.values())})

    def _put(self, ops: list[PutOp]) -> None:
        """The puts of one batch (one per key) as one atomic upsert: every value is checked
        and its text embedded first; then, in one transaction under the store's write lock
        (``langgraph_lock``), the items are read again and deleted, updated in place or
        inserted, so concurrent puts of a key queue and the last one wins."""
        plans: list[tuple[PutOp, str, dict[str, Any] | None, str]] = []
        per_field: dict[str, list[tuple[str, int, str]]] = {}  # uri -> its field texts
        for op in ops:
            uri = lg.item_uri(self._root, tuple(op.namespace), str(op.key))
            if op.value is None:
                plans.append((op, uri, None, ""))
                continue
            if not isinstance(op.value, dict):
                raise InvalidInput(f"a value must be a dict, got {type(op.value).__name__}")
            if op.ttl is not None:
                self._ttl_seconds(op.ttl)
            value = v.metadata(dict(op.value), "value")
            fields: list[str] | None | bool = (False if op.index is False else
                                               op.index if isinstance(op.index, list)
                                               else self.index_fields)
            content = lg.content_for(value, tuple(op.namespace), str(op.key), fields)
            plans.append((op, uri, lg.pack(value), content))
            if lg.per_field(fields):
                per_field[uri] = lg.field_texts(value, fields)  # type: ignore[arg-type]
        uris = [uri for _, uri, _, _ in plans]
        # embed what the items' current text does not already have (read again under the lock)
        seen = self._rows(uris)
        texts = sorted({c for _, uri, packed, c in plans if packed is not None
                        and (seen.get(uri) is None or seen[uri]["content"] != c)})
        vectors = self._vectors(texts)
        field_vectors = self._field_vectors(per_field)
        space_id = self._mem.space_id()  # cached; asked before the transaction holds a connection
        with self._mem.core.transaction() as conn:
            conn.execute(sql.query("langgraph_lock"), {
                "tenant": self.tenant, "subject": self.subject, "category": self.category})
            rows = self._rows(uris, conn)
            new: list[tuple[dict[str, Any], Any]] = []
            stored: dict[str, Any] = {}  # uri -> the id of the memory now holding the item
            for op, uri, packed, content in plans:
                row = rows.get(uri)
                if row is not None and (packed is None or row["expired"]):
                    self._mem.core.begin(conn, "langgraph: delete")
                    conn.execute(sql.query("delete_memory"),
                                 {"tenant": self.tenant, "id": row["id"]})
                    row = None
                if packed is None:
                    continue
                tags = [lg.TAG] + ([lg.ttl_tag(op.ttl)] if op.ttl is not None else [])
                if row is None:
                    new.append(({"content": content, "subject": self.subject,
                                 "category": self.category, "uri": uri, "metadata": packed,
                                 "norm_key": lg.norm_key(uri), "tags": tags,
                                 "ttl": None if op.ttl is None else self._ttl_seconds(op.ttl),
                                 "source_type": "tool_observation"}, content))
                    continue
                changes: dict[str, Any] = {"metadata": packed, "tags": v.tags(tags)}
                if op.ttl is None:
                    changes["expires_at"] = None
                else:
                    changes["ttl_seconds"] = self._ttl_seconds(op.ttl)
                vector = None
                if content != row["content"]:
                    changes["content"] = content
                    vector = vectors[content] if content in vectors else \
                        self._vectors([content])[content]
                self._mem.core.begin(conn, "langgraph: put")
                conn.execute(sql.query("update_memory"), {
                    "tenant": self.tenant, "id": row["id"], "changes": Jsonb(changes),
                    "embedding": vector, "space_id": None if vector is None else space_id})
                stored[uri] = row["id"]
            if new:
                stored.update(self._insert(conn, new, vectors, space_id))
            self._write_field_vectors(conn, stored, per_field, field_vectors, space_id)

    def _vectors(self, texts: list[str]) -> dict[str, Any]:
        """The embeddings of these contents (None each when the embedder failed and the store
        defers embedding, see MemoryStore.reembed)."""
        if not texts:
            return {}
        self._mem.core.check_keyword_index([(t, None) for t in texts])
        computed = self._mem.core.embed_to_store(texts)
        return dict(zip(texts, [None] * len(texts) if computed is None else list(computed),
                        strict=True))

    def _field_vectors(self, per_field: dict[str, list[tuple[str, int, str]]]
                       ) -> dict[str, Any] | None:
        """The embeddings of every field text of these puts, in one call (None when the
        embedder failed and the store defers embedding: those items keep only the memory's
        vector until they are put again)."""
        texts = sorted({text for found in per_field.values() for _, _, text in found})
        if not texts:
            return {}
        computed = self._mem.core.embed_to_store(texts)
        return None if computed is None else dict(zip(texts, list(computed), strict=True))

    def _write_field_vectors(self, conn: Any, stored: dict[str, Any],
                             per_field: dict[str, list[tuple[str, int, str]]],
                             vectors: dict[str, Any] | None, space_id: int) -> None:
        """Replace the per-field vectors of the items just put (none for an item indexed as a
        whole: its memory's vector serves)."""
        if not stored:
            return
        conn.execute(sql.query("langgraph_vectors_clear"),
                     {"tenant": self.tenant, "ids": list(stored.values())})
        rows = [(stored[uri], path, n, vectors[text]) for uri, found in per_field.items()
                if uri in stored and vectors is not None for path, n, text in found]
        if rows:
            ids, paths, ordinals, embeddings = (list(c) for c in zip(*rows, strict=True))
            conn.execute(sql.query("langgraph_vectors_insert"), {
                "tenant": self.tenant, "subject": self.subject, "ids": ids, "paths": paths,
                "ordinals": ordinals, "embeddings": embeddings, "space_id": space_id})

    def _insert(self, conn: Any, new: list[tuple[dict[str, Any], str]],
                vectors: dict[str, Any], space_id: int) -> dict[str, Any]:
        """Insert the new items; {uri: the id of its memory}."""
        missing = [c for _, c in new if c not in vectors]
        if missing:
            vectors = {**vectors, **self._vectors(sorted(set(missing)))}
        payload = [{"subject": self.subject, **as_input(item).to_item(), "tenant": self.tenant}
                   for item, _ in new]
        embeddings = [vectors[c] for _, c in new]
        self._mem.core.begin(conn, "langgraph: put")
        results = conn.execute(sql.query("write_memories"), {
            "items": Jsonb(payload), "embeddings": embeddings,
            "space_id": space_id if any(e is not None for e in embeddings) else None,
            "options": Jsonb({})}).fetchall()
        for (item, _), result in zip(new, results, strict=True):
            if result["outcome"] not in ("created", "superseded"):
                raise MemdbError(f"put of {item['uri']} was not stored "
                                 f"({result['outcome']}: {result['detail'] or ''})")
        return {item["uri"]: result["id"] for (item, _), result in zip(new, results, strict=True)}


class AsyncMemdbStore(MemdbStore):
    """:class:`MemdbStore` on asyncio: the same operations on :class:`memdb.AsyncMemoryStore`
    (psycopg's async pool, the async OpenAI client). Use the ``a``-methods (``await
    store.aput(...)``); the synchronous ones work only from other threads while the store's
    event loop runs (LangGraph's sync nodes in an async graph), as AsyncPostgresStore's do.
    ``async with AsyncMemdbStore(...) as store`` closes the pool at the end."""

    def __init__(self, dsn: str | None = None, *, tenant: str = "default",
                 subject: str = "langgraph", category: str = "general",
                 embedder: Embedder | None = None, index: dict[str, Any] | None = None,
                 ttl: dict[str, Any] | None = None, store: Any = None,
                 pool_size: int = 4, actor: str | None = None,
                 ranking: str = "hybrid") -> None:
        subject = v.name(subject, "subject")
        embedder = _index_embedder(index, embedder, store)
        self._amem, self._owns = _own_store(AsyncMemoryStore, store, dsn, tenant=tenant,
                                            subject=subject, embedder=embedder,
                                            pool_size=pool_size, actor=actor)
        self._mem = self._amem._sync
        self._loop: asyncio.AbstractEventLoop | None = None
        self._configure(self._mem.subject or subject, category, index, ttl, ranking)
        self._batcher = Batcher(self._abatch_now)

    @property
    def memory_store(self) -> Any:
        """The :class:`memdb.AsyncMemoryStore` underneath."""
        return self._amem

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Concurrent calls share batches (one ``_batch`` at a time per event loop, each on
        one pooled connection at a time), as LangGraph's AsyncBatchedBaseStore does."""
        return await self._batcher.submit(list(ops))

    async def _abatch_now(self, ops: list[Op]) -> list[Result]:
        await self._amem._ready()
        self._loop = asyncio.get_running_loop()
        return await bridge.run(self._batch, ops)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        loop = self._loop
        if running is not None or loop is None or not loop.is_running():
            raise asyncio.InvalidStateError(
                "AsyncMemdbStore's synchronous methods work only from another thread while "
                "its event loop runs; use await store.aget/aput/asearch..., or MemdbStore")
        return asyncio.run_coroutine_threadsafe(self.abatch(ops), loop).result()

    def close(self) -> None:
        raise asyncio.InvalidStateError("use await store.aclose() (or async with)")

    async def aclose(self) -> None:
        if self._owns:
            await self._amem.close()

    async def __aenter__(self) -> AsyncMemdbStore:
        await self._amem._ready()
        self._loop = asyncio.get_running_loop()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
