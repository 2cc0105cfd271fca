"""``MemoryStore``: the typed Python face of memdb's SQL functions.

Every method validates its input, embeds text when needed, and makes one call into SQL
(``sql/queries/store.sql`` → ``sql/functions/``); dedup, expiry, filtering, ranking and history
happen in PostgreSQL.

>>> store = MemoryStore()                      # embedded server, local embedder
>>> store.migrate()
>>> store.add("Alice prefers green tea", subject="alice", category="preferences").created
True
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from ..core import bridge, sql
from ..core import validate as v
from ..core.autoschema import owns_server
from ..core.connection import Database, set_local
from ..core.embeddings import (
    Embedder,
    cached_query_vector,
    check_vector,
    embed_checked,
    embedder_from_env,
)
from ..core.errors import (
    DatabaseError,
    EmbeddingError,
    Forbidden,
    InvalidInput,
    MemdbError,
    NotFound,
    NotMigrated,
    Rejected,
)
from ..core.filters import Filter
from ..core.llm import ChatLLM, llm_from_env
from ..core.models import AddResult, Category, HistoryEntry, Kind, Memory, SearchHit, SourceType
from ..core.ops.catalog import MAX_K  # declared once, with the operations
from ..core.replica import DEFAULT_TIMEOUT, ReadReplica, check_consistency, check_timeout
from ..core.uris import memory_id as memory_id_of
from ..retrieval.decompose import search_decomposed
from ..retrieval.recall import RecallMixin
from ..retrieval.search import (
    DEFAULT_OPTIONS,
    ROUTES,
    SearchOptions,
    SearchResults,
    keyword_routes_ahead,
)
from ..write.classify import classify
from ..write.gate import DEFAULT_POLICY, Decision, WritePolicy
from ..write.inputs import MemoryInput, as_input, keyword_index_may_overflow
from ..write.perceive import Perceived, Percepts, Transcriber, perceive
from .agent import Agent
from .agent_loop import AgentLoop
from .context import ContextBuilder
from .documents import Documents
from .files import AddedFile, add_file
from .graph import Graph
from .jobs import Jobs
from .maintenance import Maintenance
from .meta import MetaMemory
from .review import Review
from .session import Sessions
from .subjects import Subjects
from .traces import Traces

__all__ = ["MemoryStore", "MemoryInput", "EMBEDDING_ERROR_POLICIES"]

EMBEDDING_ERROR_POLICIES = ("raise", "defer")

_WRITE_ATTEMPTS = 5
_RETRY_STATES = ("40P01", "40001")  # deadlock, serialization failure
_DETAIL_KEYS = ("fused", "multiplier", "vector_rank", "vector_score", "bm25_rank", "bm25_score",
                "exact_rank", "exact_score", "mmr_score")
_DECAY_KEYS = ("decay_weight", "half_life_days", "hotness_weight", "importance_weight",
               "system_boost")


def _decay_options(decay: dict[str, float] | None) -> dict[str, float]:
    if decay is None:
        return {}
    if not isinstance(decay, dict) or set(decay) - set(_DECAY_KEYS):
        raise InvalidInput(f"decay must be a dict with keys from {_DECAY_KEYS}")
    return dict(decay)


_STORE_GATE: Any = object()  # "the store's own gate" (add/add_many's default)
_NEW_ROW = ("created", "hypothesis", "superseded")


# Fields whose change makes an update pass the write gate again.
_GATED_FIELDS = frozenset({"content", "kind", "category", "source_type", "source_id"})


def _reclassified(current: Memory, clean: dict[str, Any]) -> dict[str, Any]:
    """A classified memory (tag_version set) whose content changes is classified again, so
    its category and URI follow the new text; an explicit category (tag_version None) stays."""
    if current.tag_version is None:
        return {}
    found = classify(clean["content"], clean.get("metadata", current.metadata))
    if (found.category, found.tag_version) == (current.category, current.tag_version):
        return {}
    return {"category": found.category.value, "tag_version": found.tag_version}


def _result(row: dict[str, Any], decision: Decision | None, dry_run: bool,
            deferred: bool = False) -> AddResult:
    """An AddResult from a memdb.write_memories row and the gate's decision."""
    outcome = row["outcome"]
    reasons = () if decision is None else decision.reasons
    if row["detail"]:
        reasons = (*reasons, f"{outcome}: {row['detail']}")
    created = outcome in _NEW_ROW
    return AddResult(
        id=None if dry_run and created else row["id"], created=created, outcome=outcome,
        reasons=reasons,
        superseded_id=row["related_id"] if outcome == "superseded" else None,
        merged_into=row["related_id"] if outcome == "merged" else None,
        similarity=None if row["similarity"] is None else float(row["similarity"]),
        dry_run=dry_run, deferred=deferred and outcome in _NEW_ROW)


def _reads_on_primary(method: Any) -> Any:
    """A write whose own reads (the current version, a URI's check) run on the primary,
    whatever the store's read consistency: a replica's older version must not decide it."""
    @functools.wraps(method)
    def write(self: MemoryStore, *args: Any, **kwargs: Any) -> Any:
        with self.consistency("primary"):
            return method(self, *args, **kwargs)

    return write




class _Core:
    """The store's :class:`~memdb.core.family.StoreCore`: what the families, recall, ingestion and
    the context builder use of it (``store.core``)."""

    __slots__ = ("_store",)

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    @property
    def tenant(self) -> str:
        return self._store.tenant

    @property
    def subject(self) -> str | None:
        return self._store.subject

    @property
    def actor(self) -> str | None:
        return self._store.actor

    @property
    def db(self) -> Database:
        return self._store.db

    @property
    def embedder(self) -> Embedder:
        return self._store.embedder

    @property
    def llm(self) -> ChatLLM | None:
        return self._store.llm

    def space_id(self) -> int:
        return self._store.space_id()

    def transaction(self, *, pipelined: bool = False) -> Any:
        """A transaction on the primary confined by row-level security to the store's tenant
        (and subject); with a read replica, later read_your_writes reads wait for its commit.
        ``pipelined``: one round trip, cursors read after the block (Database.transaction)."""
        store = self._store
        transaction = store.db.transaction(tenant=store.tenant, subject=store.subject,
                                           pipelined=pipelined)
        return transaction if store.replica is None else store.replica.writing(transaction)

    def read(self, *, pipelined: bool = False, snapshot: bool = False) -> Any:
        """A read-only transaction confined like :meth:`transaction`: on the read replica
        when there is one (per the consistency in force), else on the primary.
        ``snapshot``: REPEATABLE READ (Database.transaction)."""
        store = self._store
        if store.replica is None:
            return store.db.transaction(tenant=store.tenant, subject=store.subject,
                                        pipelined=pipelined, snapshot=snapshot)
        return store.replica.read(store.tenant, store.subject, pipelined=pipelined,
                                  snapshot=snapshot)

    def begin(self, conn: Any, reason: str | None) -> None:
        set_local(conn, "set_context",
                  {"actor": self._store.actor or "", "reason": v.reason(reason) or ""})

    def check_keyword_index(self, texts: list[tuple[str, str | None]]) -> None:
        """InvalidInput, before the gate and embedding, for a (content, search_context) whose
        keyword index would pass PostgreSQL's 1 MB tsvector limit; only texts big enough to
        come near it are asked about (``memdb.keyword_index_fits``)."""
        big = [(n, c, s) for n, (c, s) in enumerate(texts) if keyword_index_may_overflow(c, s)]
        if not big:
            return
        with self.transaction() as conn:
            for n, content, context in big:
                if not conn.execute(sql.query("keyword_index_fits"), {
                        "content": content, "search_context": context}).fetchone()["fits"]:
                    which = f"item {n + 1}: " if len(texts) > 1 else ""
                    raise InvalidInput(
                        f"{which}content and search_context make a keyword index over "
                        "PostgreSQL's 1 MB tsvector limit (too many distinct words or CJK "
                        "bigrams); shorten them or split the memory")

    def embed_to_store(self, texts: list[str]) -> np.ndarray | None:
        """Vectors for texts to store, or None when the provider failed and the policy is
        ``defer`` (the rows are then stored without embeddings, queued for reembed())."""
        try:
            return embed_checked(self._store.embedder, texts)
        except EmbeddingError:
            if self._store.on_embedding_error == "defer":
                return None
            raise


class MemoryStore(ContextBuilder, Agent, AgentLoop, RecallMixin):
    """Long-term memory for one tenant in PostgreSQL.

    ``dsn``: a PostgreSQL URL; default ``$MEMDB_DSN``, else the embedded server.
    ``tenant``: the isolation boundary every call is confined to.
    ``embedder``: default from the environment (the bundled local model).
    ``actor``: who is recorded in history for this store's changes (default: the DB user).
    ``subject``: subject isolation: the store only sees and may only write this subject's
    memories (writing another subject raises :class:`~memdb.core.errors.Forbidden`).
    ``gate``: the write gate every add goes through (:class:`~memdb.write.gate.WritePolicy`;
    ``None``: no gate, no TTL defaults, no near-duplicate merging).

    ``on_embedding_error``: what a write does when the embedding provider fails (an error,
    a timeout, NaN or wrongly sized vectors): ``"raise"`` (default; ``$MEMDB_ON_EMBEDDING_ERROR``)
    raises :class:`~memdb.core.errors.EmbeddingError` and stores nothing; ``"defer"`` stores the
    rows without an embedding (BM25 and exact match find them meanwhile) and
    ``store.maintenance.reembed()`` embeds them later.

    ``read_dsn``: a hot standby of the primary for reads and searches (default
    ``$MEMDB_READ_DSN``; ``""``: none). ``consistency`` (``$MEMDB_READ_CONSISTENCY``):
    ``"read_your_writes"`` (default: the standby once it has replayed this store's last write,
    waiting at most ``read_timeout`` seconds), ``"replica"`` (the standby as it is) or
    ``"primary"``; :meth:`consistency` changes it for a block. A standby that lags past the
    timeout or is down: the read runs on the primary with a warning, or with
    ``read_fallback=False`` raises :class:`~memdb.core.errors.ReplicaLagging` /
    :class:`~memdb.core.errors.ReplicaUnavailable` (:mod:`memdb.core.replica`).

    Every transaction runs as the application role ``memdb_app`` with the tenant (and
    subject) set LOCAL, so PostgreSQL's row-level security enforces the isolation; the SQL
    functions' tenant parameters are a second line of defence. :meth:`migrate` runs as the
    admin login; all-tenant maintenance is :class:`memdb.MemoryAdmin`'s.

    The core verbs (add, search, recall, get, list, update, delete, history, remember,
    context, ...) are the store's own; each family of the rest is a small object reached from
    it: :attr:`sessions`, :attr:`documents`, :attr:`graph`, :attr:`review`, :attr:`traces`,
    :attr:`maintenance`, :attr:`subjects`.
    """

    _driver = "sync"  # the async driver's core is a subclass with "async" (memdb.families.aio)

    def __init__(self, dsn: str | None = None, *, tenant: str = "default",
                 embedder: Embedder | None = None, actor: str | None = None,
                 subject: str | None = None, pool_size: int = 4,
                 gate: WritePolicy | None = DEFAULT_POLICY,
                 on_embedding_error: str | None = None, read_dsn: str | None = None,
                 consistency: str | None = None, read_timeout: float = DEFAULT_TIMEOUT,
                 read_fallback: bool = True) -> None:
        self.tenant = v.name(tenant, "tenant")
        self.subject = v.optional_name(subject, "subject")
        self.actor = v.optional_name(actor, "actor")
        policy = on_embedding_error or os.environ.get("MEMDB_ON_EMBEDDING_ERROR") or "raise"
        if policy not in EMBEDDING_ERROR_POLICIES:
            raise InvalidInput(f"on_embedding_error must be one of {EMBEDDING_ERROR_POLICIES}, "
                               f"got {policy!r}")
        self.on_embedding_error = policy
        v.positive_int(pool_size, "pool_size", 1000)  # before connecting: the pool's own check
        replica = os.environ.get("MEMDB_READ_DSN", "") if read_dsn is None else read_dsn
        level = check_consistency(
            consistency or os.environ.get("MEMDB_READ_CONSISTENCY") or "read_your_writes")
        check_timeout(read_timeout)
        self.db = Database(dsn, max_size=pool_size, driver=self._driver)
        # the standby's pool opens on the first read: one that is down never stops writes
        self.replica: ReadReplica | None = ReadReplica(
            self.db, replica, driver=self._driver, pool_size=pool_size, consistency=level,
            timeout=read_timeout, fallback=read_fallback) if replica else None
        self._embedder = embedder
        self._space_id: int | None = None
        if gate is not None and not isinstance(gate, WritePolicy):
            raise InvalidInput(f"gate must be a WritePolicy or None, got {type(gate).__name__}")
        self.gate = gate
        self.core = _Core(self)

    def __repr__(self) -> str:  # the DSN without its password; never an API key
        return (f"MemoryStore(tenant={self.tenant!r}, subject={self.subject!r}, db={self.db!r}, "
                f"embedder={self._embedder!r}, on_embedding_error={self.on_embedding_error!r})")

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        """Open the connection pool now (it otherwise opens on first use); idempotent."""
        self.db.pool  # noqa: B018 (the property opens it)

    def close(self) -> None:
        if self.replica is not None:
            self.replica.close()
        self.db.close()

    def migrate(self) -> str:
        """Bring the schema to the newest revision (``alembic upgrade head``) as the admin
        login (``Database.admin_dsn``); returns it."""
        from ..core.migrations import upgrade

        revision = bridge.blocking(upgrade, self.db.admin_dsn)
        bridge.blocking(self.db.ensure_app_login)
        self.db.reset()
        if self.replica is not None:
            self.replica.reset()
        self._space_id = None
        bridge.blocking(self._register_space, self.db.admin_dsn)
        return revision

    def _register_space(self, admin_dsn: str) -> None:
        """Register this store's embedder's space as the admin (only the admin may: each space
        builds an index on the shared memories table). An embedder the environment cannot
        configure is reported when it is first used, not by ``migrate``."""
        try:
            params = {"model": self.embedder.model, "dims": self.embedder.dims}
        except MemdbError:
            return
        admin = Database(admin_dsn, max_size=1)
        try:
            with admin.transaction() as conn:
                conn.execute(sql.query("ensure_space"), params)
        finally:
            admin.close()

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = embedder_from_env()
        return self._embedder

    @functools.cached_property
    def meta(self) -> MetaMemory:
        """What an agent knows about itself: persona, abilities, limits, lessons, under the
        subject ``agent:<name>`` (:mod:`memdb.families.meta`)."""
        return MetaMemory(self)

    _llm: ChatLLM | None = None

    @property
    def llm(self) -> ChatLLM | None:
        """The LLM for summaries, extraction and answers: set it, or it comes from
        MEMDB_LLM_* (None: offline)."""
        if self._llm is None:
            self._llm = llm_from_env()
        return self._llm

    @llm.setter
    def llm(self, value: ChatLLM | None) -> None:
        self._llm = value

    # -- the families (composed; each holds this store) -----------------------------------
    @functools.cached_property
    def sessions(self) -> Sessions:
        """Conversation buffers, working state, session summaries
        (:mod:`memdb.families.session`)."""
        return Sessions(self)

    @functools.cached_property
    def documents(self) -> Documents:
        """Ingested documents, their search and answers from them (:mod:`memdb.documents`)."""
        return Documents(self)

    @functools.cached_property
    def graph(self) -> Graph:
        """The entity graph: link, neighbors, graph search (:mod:`memdb.families.graph`)."""
        return Graph(self)

    @functools.cached_property
    def review(self) -> Review:
        """The review queue of proposed rules (:mod:`memdb.families.review`)."""
        return Review(self)

    @functools.cached_property
    def traces(self) -> Traces:
        """Recall traces, their statistics, retention and erasure (:mod:`memdb.families.traces`)."""
        return Traces(self)

    @functools.cached_property
    def maintenance(self) -> Maintenance:
        """Expiry, forgetting, decay, re-embedding, sedimentation
        (:mod:`memdb.families.maintenance`)."""
        return Maintenance(self)

    @functools.cached_property
    def jobs(self) -> Jobs:
        """The tenant's durable job queue: enqueue, get, list, wait, cancel, retry
        (:mod:`memdb.jobs`)."""
        return Jobs(self)

    @functools.cached_property
    def percepts(self) -> Percepts:
        """What perceptual memories were made from: description, thumbnail, bytes
        (:mod:`memdb.write.perceive`)."""
        return Percepts(self)

    @functools.cached_property
    def subjects(self) -> Subjects:
        """One subject's summary, export and erasure (:mod:`memdb.families.subjects`)."""
        return Subjects(self)

    def space_id(self) -> int:
        """The id of this store's embedding space. Only the admin registers a new one
        (:meth:`migrate` registers this store's embedder's): when the store's own login is the
        admin it does so here, on first use, as does the embedded server's superuser (memdb's
        own server); an application login elsewhere gets :class:`Forbidden` naming the model."""
        if self._space_id is None:
            params = {"model": self.embedder.model, "dims": self.embedder.dims}
            try:
                with self.core.transaction() as conn:
                    if not conn.execute(sql.query("schema_ready")).fetchone()["ready"]:
                        raise NotMigrated("the memdb schema is missing: run `memdb migrate`")
                    row = conn.execute(sql.query("ensure_space"), params).fetchone()
            except Forbidden:  # not registered yet: the login registers it if it is the admin
                if owns_server(self.db):  # memdb's own server: its superuser registers it
                    bridge.blocking(self._register_space, self.db.admin_dsn)
                    with self.core.transaction() as conn:
                        row = conn.execute(sql.query("ensure_space"), params).fetchone()
                else:
                    with self.db.transaction() as conn:
                        row = conn.execute(sql.query("ensure_space"), params).fetchone()
            self._space_id = int(row["id"])
        return self._space_id

    @bridge.no_io
    def consistency(self, consistency: str, *, timeout: float | None = None) -> Any:
        """A context manager: reads inside the block use ``consistency``
        (``"read_your_writes"``, ``"replica"`` or ``"primary"``; ``timeout``: seconds to wait
        for the standby). Without a read replica every read is on the primary anyway.

        >>> with store.consistency("primary"):              # doctest: +SKIP
        ...     store.search("what does alice drink?")
        """
        if self.replica is None:
            check_consistency(consistency)
            if timeout is not None:
                check_timeout(timeout)
            return contextlib.nullcontext()
        return self.replica.scope(consistency, timeout)

    # -- writes ----------------------------------------------------------------------------
    def add(self, content: str, *, reason: str | None = None,
            gate: WritePolicy | None | object = _STORE_GATE, bypass_gate: bool = False,
            dry_run: bool = False, **fields: Any) -> AddResult:
        """Add one memory through the write gate; :class:`~memdb.core.errors.Rejected` (with the
        gate's reasons) if the gate refuses it. Identical content in the same scope is bumped,
        not copied; see :meth:`add_many` for near duplicates, supersession and the options.

        Fields: subject, kind, category, scope, agent, project_id, session_id, importance,
        confidence, source_type, source_id, created_by, metadata, tags, ttl (seconds or
        timedelta) or expires_at, created_at, norm_key, search_context, uri, embedding, rule
        (an explicit rule flag for the gate), status.
        """
        v.reason(reason)
        result = self.add_many([as_input({"content": content, **fields})], reason=reason,
                               gate=gate, bypass_gate=bypass_gate, dry_run=dry_run)[0]
        if result.rejected:
            raise Rejected("the write gate refused the memory: " + "; ".join(result.reasons),
                           result.reasons)
        return result

    def decide(self, items: Iterable[MemoryInput | dict[str, Any] | str], *,
               gate: WritePolicy | None | object = _STORE_GATE) -> list[Decision]:
        """The gate's decisions for these items, without embedding or writing anything."""
        policy = self._policy(gate) or DEFAULT_POLICY
        return policy.decide_many([as_input(i) for i in items])

    def _policy(self, gate: WritePolicy | None | object) -> WritePolicy | None:
        policy = self.gate if gate is _STORE_GATE else gate
        if policy is not None and not isinstance(policy, WritePolicy):
            raise InvalidInput(f"gate must be a WritePolicy or None, got {type(policy).__name__}")
        return policy  # type: ignore[return-value]

    def add_many(self, items: Iterable[MemoryInput | dict[str, Any] | str], *,
                 batch_size: int = 500, reason: str | None = None,
                 gate: WritePolicy | None | object = _STORE_GATE, bypass_gate: bool = False,
                 dry_run: bool = False) -> list[AddResult]:
        """Add memories in one transaction, embedding in batches; one :class:`AddResult` per
        item, in input order. Never raises for a rejection: a refused item has outcome
        'rejected', id None and the gate's reasons.

        ``gate``: the :class:`~memdb.write.gate.WritePolicy` (default: the store's, itself
        :data:`~memdb.write.gate.DEFAULT_POLICY` unless the store was made with another); ``None``
        writes with no policy at all: no gate, no TTL defaults, no near-duplicate merging or
        correction detection (exact dedup and ``norm_key`` supersession still apply).
        ``bypass_gate``: skip the gate's acceptance checks but keep the policy's TTL defaults,
        correction detection and near-duplicate merging. ``dry_run``: do everything in a
        transaction that is rolled back: the outcomes are real, nothing is written (new rows'
        ids are None).

        Outcomes (see :class:`~memdb.core.models.AddResult`, and ``memdb.write_memories`` for the
        rules): created, hypothesis, superseded (same subject, category and norm_key, or a
        correction), duplicate, merged (cosine >= the policy's ``near_dup_threshold`` in the
        same scope and category, with the same words), rejected. Malformed input
        (InvalidInput) still fails the whole call before anything is written.
        """
        v.reason(reason)
        if items is None or isinstance(items, (str, bytes, dict, MemoryInput)) \
                or not isinstance(items, Iterable):
            raise InvalidInput("items must be a list of memories (MemoryInput, dict or str), "
                               f"got {type(items).__name__}")
        inputs = [as_input(i) for i in items]
        if not inputs:
            return []
        v.positive_int(batch_size, "batch_size", 100_000)
        policy = self._policy(gate)
        for i in inputs:
            i.to_item()  # malformed input fails the call, gate or not
        self.core.check_keyword_index([(i.content, i.search_context) for i in inputs])
        decisions = [None if policy is None else policy.decide(i, enforce=not bypass_gate)
                     for i in inputs]
        results: list[AddResult | None] = [None] * len(inputs)
        todo: list[tuple[int, MemoryInput, Decision | None]] = []
        for n, (item, decision) in enumerate(zip(inputs, decisions, strict=True)):
            if decision is not None and decision.item is None:
                results[n] = AddResult(id=None, created=False, outcome="rejected",
                                       reasons=decision.reasons, dry_run=dry_run)
            else:
                todo.append((n, item if decision is None else decision.item, decision))
        if todo:
            for n, result in zip([t[0] for t in todo],
                                 self._write([(t[1], t[2]) for t in todo], policy, batch_size,
                                             reason, dry_run), strict=True):
                results[n] = result
        return [r for r in results if r is not None]

    def _write(self, todo: list[tuple[MemoryInput, Decision | None]],
               policy: WritePolicy | None, batch_size: int, reason: str | None,
               dry_run: bool) -> list[AddResult]:
        subject = self.subject or "default"
        payload = []
        for item, decision in todo:
            entry = {"subject": subject, **item.to_item(), "tenant": self.tenant}
            if decision is not None and decision.correction is not None:
                entry["correction_of"] = decision.correction.old
            payload.append(entry)
        inputs = [t[0] for t in todo]
        dims = self.embedder.dims
        vectors: list[np.ndarray | None] = [
            None if i.embedding is None else check_vector(i.embedding, dims) for i in inputs
        ]
        missing = [n for n, vec in enumerate(vectors) if vec is None]
        deferred: set[int] = set()
        if missing:
            computed = self.core.embed_to_store([inputs[n].embedding_text() for n in missing])
            if computed is None:
                deferred = set(missing)
            else:
                for n, vec in zip(missing, computed, strict=True):
                    vectors[n] = vec
        space_id = self.space_id()
        options = Jsonb(policy.sql_options() if policy is not None else {})
        # A transaction of several statements can deadlock with a concurrent writer of the
        # same contents (each statement locks its keys, then the tenant's BM25 statistics
        # row); PostgreSQL aborts one of them, which is retried as a whole. The settings and
        # every batch go to the server in one round trip (pipelined); rows are read after.
        for attempt in range(_WRITE_ATTEMPTS):
            try:
                with self.core.transaction(pipelined=True) as conn:
                    self.core.begin(conn, reason)
                    batches = [conn.execute(sql.query("write_memories"), {
                        "items": Jsonb(payload[start:start + batch_size]),
                        "embeddings": vectors[start:start + batch_size],
                        "space_id": space_id, "options": options,
                    }) for start in range(0, len(payload), batch_size)]
                    if dry_run:
                        raise psycopg.Rollback()
                rows = [row for batch in batches for row in batch.fetchall()]
                break
            except DatabaseError as exc:
                state = getattr(exc.__cause__, "sqlstate", None)
                if state not in _RETRY_STATES or attempt + 1 == _WRITE_ATTEMPTS:
                    raise
                bridge.sleep(random.uniform(0.005, 0.05) * (attempt + 1))
        return [_result(row, decision, dry_run, deferred=n in deferred)
                for n, (row, (_item, decision)) in enumerate(zip(rows, todo, strict=True))]

    def perceive(self, source: str | os.PathLike[str] | bytes, *, subject: str | None = None,
                 name: str | None = None, ref: str | None = None, ocr: str | None = None,
                 caption: bool | ChatLLM = True, keep_bytes: int | None = None,
                 max_bytes: int | None = None, tags: Sequence[str] | None = None,
                 metadata: dict[str, Any] | None = None, importance: float | None = None,
                 reason: str | None = None, transcribe: bool | Transcriber = True,
                 max_seconds: float | None = None) -> Perceived:
        """Remember an image (a path, or its bytes) as a perceptual memory: its content is
        the text OCR finds in it (Chinese and English) and a caption from the vision model
        ``MEMDB_VISION_MODEL`` configures, if any; its time is the EXIF time taken; the file
        is described in ``memdb.percepts`` (sha256, MIME type from the content, size,
        dimensions, reference, bytes up to ``keep_bytes``, thumbnail, EXIF place). Hostile or
        unreadable files are refused (UnsupportedFormat, MalformedFile, TooLarge) before
        anything is written. A recording (WAV, MP3, Ogg, M4A) becomes a memory of modality
        ``audio``: its transcript with segment times from the endpoint
        ``MEMDB_TRANSCRIBE_MODEL`` configures, else kept ``not_transcribed`` for
        ``store.percepts.transcribe_pending()``; longer than ``max_seconds``: TooLarge. See
        :func:`memdb.write.perceive.perceive` for the options.

        >>> store.perceive("receipt.jpg", subject="alice").text       # doctest: +SKIP
        '发票总额为四千二百八十元'
        """
        v.reason(reason)
        return perceive(self.core, source, subject=subject, name=name, ref=ref, ocr=ocr,
                        caption=caption, keep_bytes=keep_bytes, max_bytes=max_bytes,
                        tags=tags, metadata=metadata, importance=importance, reason=reason,
                        transcribe=transcribe, max_seconds=max_seconds)

    def add_file(self, source: str | os.PathLike[str] | bytes, *, subject: str | None = None,
                 name: str | None = None, tags: Sequence[str] | None = None,
                 reason: str | None = None, max_bytes: int | None = None,
                 **perceive_options: Any) -> AddedFile:
        """Remember any file memdb reads, by its content: an image or a recording becomes a
        perceptual memory (:meth:`perceive`, which ``perceive_options`` go to), a document
        (PDF, Word, PowerPoint, Excel, EPUB, CSV, JSON, XML, Markdown, HTML, text) is ingested
        (:meth:`memdb.families.documents.Documents.ingest`); anything else is refused with
        UnsupportedFormat, nothing written. See :mod:`memdb.families.files`.

        >>> store.add_file("report.docx", subject="alice").to_dict()["files"][0]["chunks"]
        ...                                                           # doctest: +SKIP
        3
        """
        v.reason(reason)
        return add_file(self, source, subject=subject, name=name, tags=tags, reason=reason,
                        max_bytes=max_bytes, **perceive_options)

    @_reads_on_primary
    def update(self, memory_id: UUID | str, *, reason: str | None = None,
               embedding: Any = None, gate: WritePolicy | None | object = _STORE_GATE,
               bypass_gate: bool = False, **changes: Any) -> Memory:
        """Change fields of a current memory (content re-embeds; version +1; history row).

        Fields: content, search_context, kind, category, agent, norm_key, importance,
        confidence, source_type, source_id, metadata, tags, expires_at (None clears it), ttl.
        A change of content, kind, category, source_type or source_id passes the write gate as
        the updated memory would (raises :class:`~memdb.core.errors.Rejected` if refused, changing
        nothing), unless ``bypass_gate`` or ``gate=None``.
        """
        mid = memory_id_of(self, memory_id)
        v.reason(reason)
        if not changes and embedding is None:
            raise InvalidInput("nothing to update")
        clean: dict[str, Any] = {}
        validators = {
            "content": v.content,
            "search_context": lambda x, f: v.optional_text(x, f),
            "agent": v.optional_name,
            "norm_key": lambda x, f: v.optional_text(x, f, 1024),
            "source_id": lambda x, f: v.optional_text(x, f, 1024),
            "importance": v.unit,
            "confidence": v.unit,
        }
        for key, value in changes.items():
            if key in validators:
                clean[key] = validators[key](value, key)
            elif key in ("kind", "category", "source_type"):
                enum_type = {"kind": Kind, "category": Category, "source_type": SourceType}[key]
                clean[key] = v.choice(value, enum_type, key).value
            elif key == "metadata":
                clean[key] = v.metadata(value)
            elif key == "tags":
                clean[key] = v.tags(value)
            elif key == "expires_at":
                stamp = v.timestamp(value, key)
                clean[key] = stamp.isoformat() if stamp else None
            elif key == "ttl":
                if "expires_at" in changes:
                    raise InvalidInput("give ttl or expires_at, not both")
                ttl = v.ttl(value)
                if ttl is None:
                    clean["expires_at"] = None
                else:  # the server's clock sets the expiry, as on add
                    clean["ttl_seconds"] = ttl.total_seconds()
            else:
                raise InvalidInput(f"memory field {key!r} cannot be updated")
        current: Memory | None = None
        if "content" in clean and "category" not in clean:
            current = self.get(mid)
            clean.update(_reclassified(current, clean))
        if "content" in clean or "search_context" in clean:
            current = current or self.get(mid)
            self.core.check_keyword_index([(clean.get("content", current.content),
                                        clean.get("search_context", current.search_context))])
        policy = self._policy(gate)
        if policy is not None and not bypass_gate and _GATED_FIELDS.intersection(clean):
            current = current or self.get(mid)
            self._check_update(policy, current, clean)
        vector = None
        if embedding is not None:
            vector = check_vector(embedding, self.embedder.dims)
        elif "content" in clean or "search_context" in clean:
            current = current or self.get(mid)
            text = clean.get("content", current.content)
            context = clean.get("search_context", current.search_context)
            computed = self.core.embed_to_store([f"{context}\n{text}" if context else text])
            vector = None if computed is None else computed[0]  # None: deferred, see reembed()
        space_id = self.space_id() if vector is not None else None
        with self.core.transaction() as conn:
            self.core.begin(conn, reason)
            row = conn.execute(sql.query("update_memory"), {
                "tenant": self.tenant, "id": mid, "changes": Jsonb(clean),
                "embedding": vector, "space_id": space_id,
            }).fetchone()
        if row["id"] is None:
            raise NotFound(f"no current memory {mid}")
        return self.get(mid)

    @staticmethod
    def _check_update(policy: WritePolicy, current: Memory, clean: dict[str, Any]) -> None:
        """Raise Rejected if the memory as updated would not pass the gate as a new write."""
        candidate = MemoryInput(
            content=clean.get("content", current.content), subject=current.subject,
            kind=clean.get("kind", current.kind), category=clean.get("category", current.category),
            scope=current.scope, project_id=current.project_id, session_id=current.session_id,
            source_type=clean.get("source_type", current.source_type),
            source_id=clean.get("source_id", current.source_id),
            tags=list(current.tags), status=current.status)
        decision = policy.decide(candidate)
        if decision.item is None:
            raise Rejected("the write gate refused the update: " + "; ".join(decision.reasons),
                           decision.reasons)

    @_reads_on_primary
    def delete(self, memory_id: UUID | str, *, reason: str | None = None) -> None:
        """Delete a memory (history keeps a 'delete' row); NotFound if there is none."""
        mid = memory_id_of(self, memory_id)
        with self.core.transaction() as conn:
            self.core.begin(conn, reason)
            deleted = conn.execute(sql.query("delete_memory"),
                                   {"tenant": self.tenant, "id": mid}).fetchone()["deleted"]
        if not deleted:
            raise NotFound(f"no memory {mid}")

    # -- reads -----------------------------------------------------------------------------
    def get(self, memory_id: UUID | str) -> Memory:
        """One memory by id or URI (current or superseded, not expired); NotFound otherwise.
        A URI (``mem://alice/preferences/<id>``, see :mod:`memdb.core.uris`) must name the
        memory's subject and category too, as must one given to update, delete and history."""
        mid = memory_id_of(self, memory_id)
        with self.core.read(pipelined=True) as conn:  # one round trip: settings, query, COMMIT
            cur = conn.execute(sql.query("get_memory"), {"tenant": self.tenant, "id": mid})
        row = cur.fetchone()
        if row is None:
            raise NotFound(f"no memory {mid}")
        return Memory.from_row(row)

    def list(self, filter: Filter | dict[str, Any] | None = None, *, limit: int = 100,
             offset: int = 0, **conditions: Any) -> list[Memory]:
        """Current, unexpired memories passing the filter (a Filter, a dict, or keyword
        conditions such as subject=, kind=, category=, tags=, metadata=), newest first."""
        flt = Filter.of(filter, **conditions).to_json()
        v.positive_int(limit, "limit", 100_000)
        v.offset(offset)
        with self.core.read(pipelined=True) as conn:
            cur = conn.execute(sql.query("list_memories"), {
                "tenant": self.tenant, "filter": Jsonb(flt), "limit": limit, "offset": offset,
            })
        return [Memory.from_row(r) for r in cur.fetchall()]

    def search(self, query: str, k: int = 10, filter: Filter | dict[str, Any] | None = None, *,
               options: SearchOptions | None = None, routes: Sequence[str] | None = None,
               weights: dict[str, float] | None = None, mmr: float | bool | None = None,
               decay: dict[str, float] | None = None, as_of: datetime | str | None = None,
               embedding: Any = None, explain: bool = False, **conditions: Any) -> SearchResults:
        """Hybrid search: vector, BM25 and exact-match routes fused by weighted RRF in one SQL
        call (``memdb.search_hybrid``), with the same filters as :meth:`list`.

        routes/weights/mmr (lambda, or True for 0.7) override ``options``; decay takes
        decay_weight, half_life_days, hotness_weight, importance_weight; as_of searches the
        memories valid at that time; embedding replaces embedding the query. Every hit's
        ``details`` has each route's rank and raw score; ``explain=True`` also puts the SQL,
        its parameters and timings in ``results.explain``. A blank query finds nothing; one
        with no keyword terms (only stop words, punctuation or emoji such as 🍵) still runs
        its vector and exact routes.
        """
        if not isinstance(query, str):
            raise InvalidInput("query must be a string")
        v.positive_int(k, "k", MAX_K)
        if as_of is not None:
            conditions["as_of"] = as_of
        flt = Filter.of(filter, **conditions).to_json()
        opts = (options.over(DEFAULT_OPTIONS) if options else DEFAULT_OPTIONS).replace(
            routes=tuple(routes) if routes is not None else None, weights=weights, mmr=mmr,
            **_decay_options(decay))
        options_json = opts.to_json()
        if not query.strip():
            return SearchResults()
        v.optional_text(query, "query")
        started = time.perf_counter()
        if embedding is not None:
            vector = check_vector(embedding, self.embedder.dims)
        elif "routes" in options_json and "vector" not in options_json["routes"]:
            vector = None
        else:
            vector = cached_query_vector(self.embedder, query)
            if vector is None and not opts.decompose and keyword_routes_ahead(options_json):
                # the keyword routes run while the model embeds the query (docs/performance.md,
                # "Hiding the embedder"): one search, the same results
                return self._search(query, None, k, flt, options_json, explain, 0.0,
                                    ahead=bridge.ahead(embed_checked, self.embedder, [query],
                                                       query=True))
            if vector is None:
                vector = embed_checked(self.embedder, [query], query=True)[0]
        embedded = time.perf_counter()
        split = self.planner.decompose(query) if opts.decompose else None
        if split is not None and split.subqueries:  # the variants fused in one SQL call
            return search_decomposed(self, query, vector, list(split.subqueries), k, flt,
                                     options_json, explain, embedded - started, split)
        results = self._search(query, vector, k, flt, options_json, explain,
                               embedded - started)
        if split is not None and results.explain is not None:
            results.explain["decomposition"] = split.to_json()
        return results

    def search_by_vector(self, vector: Any, k: int = 10,
                         filter: Filter | dict[str, Any] | None = None, *,
                         explain: bool = False, **conditions: Any) -> SearchResults:
        """Vector-route search with a precomputed query vector (no text, no BM25)."""
        v.positive_int(k, "k", MAX_K)
        flt = Filter.of(filter, **conditions).to_json()
        query = check_vector(vector, self.embedder.dims)
        return self._search(None, query, k, flt, {"routes": ["vector"]}, explain, 0.0)

    def _search(self, query: str | None, vector: np.ndarray | None, k: int,
                flt: dict[str, Any], options: dict[str, Any], explain: bool,
                embed_seconds: float, *,
                ahead: Callable[[], np.ndarray] | None = None) -> SearchResults:
        """One search; with ``ahead`` (the query's embedding, being computed), its keyword
        routes run first, in the same snapshot, and their rows go to the fusion statement."""
        params = {"tenant": self.tenant, "query": query, "embedding": vector, "k": k,
                  "filter": Jsonb(flt), "options": Jsonb(options), "keyword_routes": None}
        started = time.perf_counter()
        overlap: dict[str, float] | None = None
        with self.core.read(pipelined=True, snapshot=ahead is not None) as conn:
            if ahead is not None:  # round trip 1 (BEGIN, settings, keyword routes) beside the model
                cur = conn.execute(sql.query("search_keyword_routes"), params)
                params["keyword_routes"] = cur.fetchone()["keyword_routes"]
                routes_done = time.perf_counter()
                vector = params["embedding"] = ahead()[0]
                embed_seconds = time.perf_counter() - started
                overlap = {"keyword_routes_ms": round((routes_done - started) * 1000, 3),
                           "waited_for_embedding_ms": round(
                               max(0.0, embed_seconds - (routes_done - started)) * 1000, 3)}
            # one round trip: (settings,) the query, COMMIT
            found = conn.execute(sql.query("search_hybrid"), params)
            expanded = (conn.execute(sql.query("prf_terms"), params)
                        if explain and options.get("prf") else None)
        rows = found.fetchall()
        prf = expanded.fetchall() if expanded is not None else None
        results = SearchResults(
            SearchHit(memory=Memory.from_row(r), score=float(r["score"]), rank=int(r["rank"]),
                      details={key: r[key] for key in _DETAIL_KEYS})
            for r in rows
        )
        if explain:
            results.explain = {
                "sql": sql.query("search_hybrid"),
                "params": {**params, "filter": flt, "options": options,
                           "embedding": None if vector is None else f"<vector {len(vector)}>",
                           "keyword_routes": None if overlap is None else "<run ahead>"},
                "embed_ms": round(embed_seconds * 1000, 3),
                "db_ms": round((time.perf_counter() - started) * 1000, 3),
                "overlap": overlap,
                "routes": {route: sum(1 for r in rows if r[f"{route}_rank"] is not None)
                           for route in ROUTES},
            }
            if options.get("neighbors") or options.get("speaker_neighbors"):
                # the hits only neighbour expansion (by session or by speaker) brought
                results.explain["neighbors"] = [
                    r["id"] for r in rows if all(r[f"{route}_rank"] is None for route in ROUTES)]
            if prf is not None:  # the BM25 route's expanded query (memdb.prf_terms)
                results.explain["prf_terms"] = [dict(r) for r in prf]
        return results

    def mark_used(self, memory_ids: Iterable[UUID | str], *, subject: str | None = None) -> int:
        """Record that these memories were used (e.g. cited): grows their use count for
        ``subject`` (default: each memory's own), which hotness reads. Returns how many."""
        ids = [v.uuid(i) for i in memory_ids]
        if not ids:
            return 0
        with self.core.transaction() as conn:
            return int(conn.execute(sql.query("mark_used"), {
                "tenant": self.tenant, "ids": ids,
                "subject": v.optional_name(subject, "subject")}).fetchone()["marked"])

    def history(self, memory_id: UUID | str) -> list[HistoryEntry]:
        """Every recorded change of a memory, oldest first (also after it was deleted)."""
        mid = memory_id_of(self, memory_id, history=True)
        with self.core.read(pipelined=True) as conn:
            cur = conn.execute(sql.query("history"), {"tenant": self.tenant, "id": mid})
        rows = cur.fetchall()
        if not rows:
            raise NotFound(f"no history for memory {mid}")
        return [HistoryEntry(**r) for r in rows]

    def count(self) -> int:
        """How many rows this tenant (or, with subject isolation, this subject) has: all
        versions, expired included."""
        with self.core.read(pipelined=True) as conn:
            cur = conn.execute(sql.query("count_memories"), {"tenant": self.tenant})
        return int(cur.fetchone()["n"])

