"""A search's keyword routes run while its query is being embedded (memdb.search_keyword_routes,
then memdb.search_hybrid with their rows, in one REPEATABLE READ transaction): the same
results as one statement after the embedding, Chinese and English, with every option that
changes the keyword routes; the routes really run during the embedding; a write committed
meanwhile is seen by neither statement; a cached query, a vector-only search and
MEMDB_OVERLAP_EMBEDDING=0 keep the one statement; errors leave no transaction open; and the
SQL functions from psql. Real embedded PostgreSQL and the real bundled model."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable

import psycopg
import pytest
from pgvector.psycopg import register_vector

import memdb
from memdb import EmbeddingError, InvalidInput, MemoryInput, MemoryStore
from memdb.core.errors import Forbidden
from memdb.retrieval.search import SearchOptions

CORPUS = [
    ("alice", "s1", "Alice: I started learning the cello last spring"),
    ("alice", "s1", "Bob: that sounds fun, do you practice every day?"),
    ("alice", "s1", "Alice: every morning before work, about 30 minutes"),
    ("alice", "s2", "Alice: we moved to Lyon in June 2023 for my new job"),
    ("alice", "s2", "Bob: how do you like the food in Lyon?"),
    ("alice", None, "Alice prefers green tea over coffee"),
    ("alice", None, "system rule: always answer in the user's language"),
    ("wang", "s3", "王五: 我上周开始学习钢琴，每天练习一个小时"),
    ("wang", "s3", "李四: 你为什么想学钢琴？"),
    ("wang", "s3", "王五: 因为我女儿也在学，我们可以一起弹"),
    ("wang", None, "王五喜欢喝绿茶，不喜欢咖啡"),
    ("wang", None, "王五在北京做 React 开发，2022年加入了这家公司"),
    ("wang", None, "Wang Wu visited Shanghai last week for a conference"),
]
QUERIES = ["cello practice", "绿茶", "When did Alice move to Lyon?", "王五什么时候学钢琴",
           "React 开发", "green tea coffee", "the", "Shanghai conference 上海"]
OPTION_SETS = [
    {},
    {"prf": True},
    {"mmr": True},
    {"routes": ["vector", "bm25"]},
    {"routes": ["vector", "exact"], "k1": 1.5},
    {"depth": 7, "rrf_k": 20},
]


class Model:
    """The real model behind an embedder without a query cache (every search embeds), with a
    hook and a delay inside the embedding."""

    def __init__(self, inner: memdb.LocalEmbedder, *, delay: float = 0.0,
                 during: Callable[[], None] | None = None, fail: bool = False) -> None:
        self.inner, self.delay, self.during, self.fail = inner, delay, during, fail
        self.model, self.dims = inner.model, inner.dims

    def embed_passages(self, texts):
        return self.inner.embed_passages(texts)

    def embed_queries(self, texts):
        if self.during is not None:
            self.during()
        time.sleep(self.delay)
        if self.fail:
            raise RuntimeError("the model crashed")
        return self.inner.embed_queries(texts)


def _fill(store) -> None:
    store.add_many([MemoryInput(content=text, subject=subject, session_id=session,
                                category="system" if text.startswith("system") else None)
                    for subject, session, text in CORPUS])


def _hits(results) -> list[tuple]:
    return [(h.memory.id, h.rank, h.score, tuple(sorted(h.details.items()))) for h in results]


def _open_transactions(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND state LIKE 'idle in transaction%' AND pid <> pg_backend_pid()").fetchone()[0]


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: json.dumps(o) if o else "default")
def test_overlapped_search_returns_what_one_statement_does(fresh_db, embedder, options,
                                                           monkeypatch):
    opts = SearchOptions.of(options)
    with MemoryStore(fresh_db, embedder=Model(embedder), gate=None) as store:
        _fill(store)
        for query in QUERIES:
            for scope in ({}, {"subject": "wang"}):
                monkeypatch.setenv("MEMDB_OVERLAP_EMBEDDING", "1")
                ahead = store.search(query, k=5, explain=True, options=opts, **scope)
                monkeypatch.setenv("MEMDB_OVERLAP_EMBEDDING", "0")
                one = store.search(query, k=5, explain=True, options=opts, **scope)
                assert ahead.explain["overlap"] is not None
                assert one.explain["overlap"] is None
                assert _hits(ahead) == _hits(one), (query, scope)
        assert _hits(store.search("绿茶", k=5))  # the comparison is not of empty lists


def test_the_keyword_routes_run_while_the_query_is_embedded(fresh_db, embedder):
    with MemoryStore(fresh_db, embedder=Model(embedder, delay=1.0), gate=None) as store:
        _fill(store)
        started = time.perf_counter()
        results = store.search("cello practice", k=5, explain=True)
        wall = time.perf_counter() - started
    overlap = results.explain["overlap"]
    # one after the other, the keyword routes would start after the 1 s embedding
    assert overlap["keyword_routes_ms"] < 900
    assert overlap["waited_for_embedding_ms"] > 100
    assert wall < 1.0 + 0.9
    assert "cello" in results[0].memory.content


def test_a_write_committed_during_the_embedding_is_seen_by_neither_statement(fresh_db, embedder):
    """The keyword routes and the fusion see one snapshot: a memory written after the first
    statement is in no route (the vector route would find it in a later snapshot)."""
    word = "zebracorn"

    def write_after_the_snapshot() -> None:
        deadline = time.monotonic() + 30
        # the search's transaction holds its snapshot once its keyword routes have run
        while _snapshots_held(fresh_db) == 0:
            assert time.monotonic() < deadline, "the search never held a snapshot"
            time.sleep(0.01)
        with memdb.MemoryStore(fresh_db, embedder=embedder, gate=None) as writer:
            writer.add(f"Alice's cat is called {word}", subject="alice")

    with MemoryStore(fresh_db, embedder=Model(embedder, during=write_after_the_snapshot),
                     gate=None) as store:
        _fill(store)
        first = store.search(f"{word} cat", k=20)
        assert all(word not in h.memory.content for h in first)
        assert store.count() == len(CORPUS) + 1
        again = store.search(f"{word} cat", k=20)  # (the hook waits for a snapshot again)
    assert word in again[0].memory.content


def _snapshots_held(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND backend_type = 'client backend' AND backend_xmin IS NOT NULL"
            " AND pid <> pg_backend_pid()").fetchone()[0]


def test_one_statement_for_a_cached_query_a_vector_search_and_when_turned_off(
        store, monkeypatch):
    _fill(store)
    query = f"green tea {uuid.uuid4().hex[:8]}"  # never asked before: not in the query cache
    first = store.search(query, k=5, explain=True)
    cached = store.search(query, k=5, explain=True)
    assert first.explain["overlap"] is not None
    assert cached.explain["overlap"] is None  # the vector came from the cache: nothing to hide
    assert _hits(first) == _hits(cached)
    assert store.search(f"cello {uuid.uuid4().hex[:8]}", k=5, routes=["vector"],
                        explain=True).explain["overlap"] is None
    monkeypatch.setenv("MEMDB_OVERLAP_EMBEDDING", "0")
    assert store.search(f"cello {uuid.uuid4().hex[:8]}", k=5,
                        explain=True).explain["overlap"] is None
    monkeypatch.setenv("MEMDB_OVERLAP_EMBEDDING", "yes")
    with pytest.raises(InvalidInput, match="MEMDB_OVERLAP_EMBEDDING"):
        store.search(f"cello {uuid.uuid4().hex[:8]}", k=5)


def test_errors_on_either_side_leave_no_transaction_open(fresh_db, embedder):
    with MemoryStore(fresh_db, embedder=Model(embedder, fail=True), gate=None) as store:
        _fill(store)
        with pytest.raises(EmbeddingError):
            store.search("cello practice", k=5)
        assert _open_transactions(fresh_db) == 0
        store.embedder.fail = False
        with psycopg.connect(fresh_db, autocommit=True) as conn:  # the first statement fails
            conn.execute("REVOKE EXECUTE ON FUNCTION memdb.search_keyword_routes(text, text,"
                         " integer, jsonb, jsonb) FROM PUBLIC, memdb_app")
        with pytest.raises(Forbidden):
            store.search("cello practice", k=5)
        assert _open_transactions(fresh_db) == 0
        with psycopg.connect(fresh_db, autocommit=True) as conn:
            conn.execute("GRANT EXECUTE ON FUNCTION memdb.search_keyword_routes(text, text,"
                         " integer, jsonb, jsonb) TO memdb_app")
        assert store.search("cello practice", k=5)[0].memory.content.endswith("spring")


def test_from_psql_keyword_routes_then_fusion_in_one_snapshot(store, fresh_db, embedder,
                                                               backend):
    _fill(store)
    vector = embedder.embed_queries(["王五学钢琴"])[0]
    args = ("default", "王五学钢琴", 5, json.dumps({"subject": "wang"}), json.dumps({"prf": 10}))
    with psycopg.connect(fresh_db) as conn:
        register_vector(conn)
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        routes = conn.execute("SELECT memdb.search_keyword_routes(%s, %s, %s, %s, %s)",
                              args).fetchone()[0]
        assert routes["rows"] and {r["route"] for r in routes["rows"]} <= {"bm25", "exact"}
        given = conn.execute(
            "SELECT * FROM memdb.search_hybrid(%s, %s, %s, %s, %s, %s, %s)",
            (*args[:2], vector, *args[2:], json.dumps(routes))).fetchall()
        alone = conn.execute("SELECT * FROM memdb.search_hybrid(%s, %s, %s, %s, %s, %s)",
                             (*args[:2], vector, *args[2:])).fetchall()
        assert given == alone and given
        conn.rollback()
        for wrong in ({**routes, "for": "x"}, {"for": routes["for"], "rows": 5}, {}):
            with pytest.raises(psycopg.errors.InvalidParameterValue, match="p_keyword_routes"):
                conn.execute("SELECT * FROM memdb.search_hybrid(%s, %s, %s, %s, %s, %s, %s)",
                             (*args[:2], vector, *args[2:], json.dumps(wrong)))
            conn.rollback()
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="p_keyword_routes"):
            conn.execute("SELECT * FROM memdb.search_hybrid(%s, %s, %s, 6, %s, %s, %s)",
                         (*args[:2], vector, *args[3:], json.dumps(routes)))  # another k
        conn.rollback()
        if backend == "citus":  # every tenant function's guard there (docs/sql.md)
            with pytest.raises(psycopg.errors.NullValueNotAllowed):
                conn.execute("SELECT memdb.search_keyword_routes(NULL, 'x')")
            conn.rollback()
        else:  # one server: a NULL tenant finds nothing
            nobody = conn.execute("SELECT memdb.search_keyword_routes(NULL, 'x')").fetchone()[0]
            assert nobody["rows"] == []
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            conn.execute("SELECT memdb.search_keyword_routes('default', 'x', 5, '{}',"
                         " '{\"depth\": \"1; DROP TABLE memdb.memories\"}')")
        conn.rollback()
        blank = conn.execute("SELECT memdb.search_keyword_routes('default', '   ')").fetchone()[0]
        assert blank["rows"] == []
    assert store.count() == len(CORPUS)


@pytest.mark.local_only("session-level set_config() does not reach Citus workers")
def test_the_application_role_sees_only_its_tenant_and_subject(store, fresh_db, embedder):
    """As memdb_app: another tenant's keyword routes find nothing; with memdb.subject set, only
    that subject's memories; and rows forged to name another subject's memories do not bring
    them into search_hybrid's results (each candidate's row is read under row-level security)."""
    _fill(store)
    vector = embedder.embed_queries(["绿茶 green tea"])[0]
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        register_vector(conn)
        ids = dict(conn.execute("SELECT id, subject FROM memdb.memories").fetchall())
        conn.execute("SET ROLE memdb_app")

        def routes(tenant: str, subject: str, query: str = "绿茶 green tea") -> dict:
            conn.execute("SELECT set_config('memdb.tenant', %s, false),"
                         " set_config('memdb.subject', %s, false)", (tenant, subject))
            return conn.execute("SELECT memdb.search_keyword_routes('default', %s, 5)",
                                (query,)).fetchone()[0]

        assert routes("globex", "")["rows"] == []
        both = {r["id"] for r in routes("default", "")["rows"]}
        assert {ids[uuid.UUID(i)] for i in both} == {"alice", "wang"}
        alice = routes("default", "alice")
        assert alice["rows"] and {ids[uuid.UUID(r["id"])] for r in alice["rows"]} == {"alice"}
        wang = [i for i, s in ids.items() if s == "wang"]
        forged = {**alice, "rows": [{"route": "exact", "id": str(i), "raw": 1.0, "rnk": n + 1}
                                    for n, i in enumerate(wang)]}
        found = conn.execute(
            "SELECT id FROM memdb.search_hybrid('default', '绿茶 green tea', %s, 5, '{}', '{}',"
            " %s)",
            (vector, json.dumps(forged))).fetchall()
        assert found and all(ids[r[0]] == "alice" for r in found)
