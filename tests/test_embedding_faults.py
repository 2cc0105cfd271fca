"""Embedding provider failures: a write either fails cleanly with nothing stored, or (with
``on_embedding_error="defer"``) is stored without a vector and queued for ``reembed()``;
nothing is ever half-written.

Failures come from a stub embedder that raises or returns bad vectors, and from the real
``openai`` client (inside ``OpenAIEmbedder``) talking to a local HTTP server with canned
responses (tests/canned_openai.py): the embedding endpoint is faked, the database never is.
"""

from __future__ import annotations

import json

import numpy as np
import psycopg
import pytest
from click.testing import CliRunner

from memdb import EmbeddingError, InvalidInput, MemoryStore, OpenAIEmbedder
from memdb.cli import cli
from tests.canned_openai import CannedOpenAI, canned_vector

DIMS = 16
ITEMS = [
    {"content": "李四是前端工程师，擅长React和Vue.js开发", "subject": "lisi"},
    {"content": "Alice prefers green tea in the morning", "subject": "alice",
     "search_context": "2024-05-01, breakfast chat"},
    {"content": "王芳下周三去上海出差", "subject": "wangfang", "tags": ["travel"]},
    {"content": "The deploy key rotates every 90 days", "subject": "ops"},
]


class StubEmbedder:
    """Deterministic vectors (canned_vector of the text), or a chosen failure.

    mode: ok | raise | nan | short (wrong dims) | fewer (one vector too few) | zeros.
    ``fail_after`` calls succeed before the mode applies; ``on_call`` runs before each call.
    """

    model = f"stub-{DIMS}"
    dims = DIMS

    def __init__(self, mode: str = "ok", fail_after: int = 0) -> None:
        self.mode, self.fail_after, self.calls = mode, fail_after, 0
        self.on_call = None

    def _embed(self, texts):
        self.calls += 1
        if self.on_call is not None:
            self.on_call(texts)
        matrix = np.asarray([canned_vector(t, DIMS) for t in texts], dtype=np.float32)
        mode = "ok" if self.calls <= self.fail_after else self.mode
        if mode == "raise":
            raise RuntimeError("provider down")
        if mode == "nan":
            matrix[0, 0] = np.nan
        if mode == "short":
            matrix = matrix[:, :-1]
        if mode == "fewer":
            matrix = matrix[:-1]
        if mode == "zeros":
            matrix[:] = 0
        return matrix

    embed_passages = _embed
    embed_queries = _embed


def text_of(item: dict) -> str:
    ctx = item.get("search_context")
    return f"{ctx}\n{item['content']}" if ctx else item["content"]


def snapshot(raw: psycopg.Connection) -> tuple:
    """Everything a write touches: memories, history, BM25 statistics."""
    return tuple(raw.execute(q).fetchone()[0] for q in (
        "SELECT count(*) FROM memdb.memories",
        "SELECT count(*) FROM memdb.memory_history",
        "SELECT coalesce(sum(doc_count), 0) FROM memdb.bm25_stats",
        "SELECT count(*) FROM memdb.bm25_terms WHERE df > 0",
    ))


def embeddings(raw: psycopg.Connection) -> dict[str, object]:
    """content -> stored vector (a numpy array) or None."""
    return {r[0]: None if r[1] is None else r[1].to_numpy()
            for r in raw.execute("SELECT content, embedding FROM memdb.memories")}


@pytest.mark.parametrize("mode", ["raise", "nan", "short", "fewer", "zeros"])
def test_failing_embedder_stores_nothing(fresh_db, raw, mode):
    with MemoryStore(fresh_db, gate=None, embedder=StubEmbedder(mode)) as store:
        before = snapshot(raw)
        with pytest.raises(EmbeddingError) as caught:
            store.add_many(ITEMS)
        with pytest.raises(EmbeddingError):
            store.add("李四喜欢喝绿茶", subject="lisi")
        assert snapshot(raw) == before == (0, 0, 0, 0)
        assert "李四" not in str(caught.value) and "Alice" not in str(caught.value)


def test_precomputed_vectors_need_no_embedder(fresh_db, raw):
    """Items that bring their own vector never call the (failing) embedder."""
    embedder = StubEmbedder("raise")
    with MemoryStore(fresh_db, gate=None, embedder=embedder) as store:
        items = [{**i, "embedding": canned_vector(text_of(i), DIMS)} for i in ITEMS]
        assert all(r.created and not r.deferred for r in store.add_many(items))
    assert embedder.calls == 0 and snapshot(raw)[0] == len(ITEMS)


@pytest.mark.parametrize("mode", ["error", "slow", "nan", "short"])
def test_openai_endpoint_failure_stores_nothing(fresh_db, raw, mode):
    with CannedOpenAI(dims=DIMS, mode=mode, delay=2.0) as api:
        embedder = OpenAIEmbedder("canned-16", DIMS, base_url=api.base_url, api_key="sk-x-123456",
                                  timeout=0.5, max_retries=1)
        with MemoryStore(fresh_db, gate=None, embedder=embedder) as store:
            with pytest.raises(EmbeddingError):
                store.add_many(ITEMS)
        assert len(api.requests) == (2 if mode in ("error", "slow") else 1)  # retried, then gave up
        assert api.auth == "Bearer sk-x-123456"  # the real client spoke to the canned server
    assert snapshot(raw) == (0, 0, 0, 0)


def test_openai_endpoint_success(fresh_db, raw):
    """The canned server's happy path, so the failure tests above test failures only."""
    with CannedOpenAI(dims=DIMS) as api:
        embedder = OpenAIEmbedder("canned-16", DIMS, base_url=api.base_url, api_key="k")
        with MemoryStore(fresh_db, gate=None, embedder=embedder) as store:
            store.add_many(ITEMS)
            assert store.maintenance.pending_embeddings() == 0
    stored = embeddings(raw)
    for item in ITEMS:
        assert np.allclose(stored[item["content"]], canned_vector(text_of(item), DIMS), atol=1e-6)


def test_policy_from_argument_and_environment(fresh_db, monkeypatch):
    with pytest.raises(InvalidInput):
        MemoryStore(fresh_db, gate=None, embedder=StubEmbedder(), on_embedding_error="ignore")
    monkeypatch.setenv("MEMDB_ON_EMBEDDING_ERROR", "defer")
    with MemoryStore(fresh_db, gate=None, embedder=StubEmbedder("raise")) as store:
        assert store.on_embedding_error == "defer"
        assert store.add("环境变量决定策略", subject="env").deferred
    with MemoryStore(fresh_db, gate=None, embedder=StubEmbedder("raise"),
                     on_embedding_error="raise") as store:
        with pytest.raises(EmbeddingError):
            store.add("the argument beats the environment")
    monkeypatch.setenv("MEMDB_ON_EMBEDDING_ERROR", "later")
    with pytest.raises(InvalidInput):
        MemoryStore(fresh_db, gate=None, embedder=StubEmbedder())


def test_defer_stores_without_vectors_then_reembed(fresh_db, raw):
    embedder = StubEmbedder("raise")
    with MemoryStore(fresh_db, gate=None, embedder=embedder, on_embedding_error="defer") as store:
        results = store.add_many(ITEMS)
        assert [r.created for r in results] == [True] * len(ITEMS)
        assert [r.deferred for r in results] == [True] * len(ITEMS)
        assert store.maintenance.pending_embeddings() == len(ITEMS)
        assert all(v is None for v in embeddings(raw).values())
        assert raw.execute("SELECT count(*) FROM memdb.memories WHERE space_id IS NOT NULL"
                           ).fetchone()[0] == 0
        # keyword routes find them meanwhile; the vector route needs the provider
        hits = store.search("前端工程师", routes=["bm25", "exact"], subject="lisi")
        assert [h.memory.content for h in hits] == [ITEMS[0]["content"]]
        assert store.search("green tea", routes=["bm25"])[0].memory.subject == "alice"
        with pytest.raises(EmbeddingError):
            store.search("green tea")
        history_rows = raw.execute("SELECT count(*) FROM memdb.memory_history").fetchone()[0]

        embedder.mode = "ok"
        assert store.maintenance.reembed() == len(ITEMS)
        assert store.maintenance.pending_embeddings() == 0
        assert store.maintenance.reembed() == 0
        stored = embeddings(raw)
        for item in ITEMS:  # the vector of content and search context, as on a direct write
            assert np.allclose(stored[item["content"]], canned_vector(text_of(item), DIMS),
                               atol=1e-6)
        hit = store.search_by_vector(canned_vector(text_of(ITEMS[2]), DIMS), k=1)[0]
        assert hit.memory.content == ITEMS[2]["content"]
        # writing a vector is not a change of the memory: no history row, no new version
        assert raw.execute("SELECT count(*) FROM memdb.memory_history").fetchone()[0] == \
            history_rows
        assert {m.version for m in store.list()} == {1}


def test_defer_then_duplicate_write_with_a_working_provider_fills_the_vector(fresh_db, raw):
    embedder = StubEmbedder("raise")
    with MemoryStore(fresh_db, gate=None, embedder=embedder, on_embedding_error="defer") as store:
        first = store.add("张三住在北京", subject="zhangsan")
        embedder.mode = "ok"
        second = store.add("张三住在北京", subject="zhangsan")
        assert (first.id, first.deferred, second.created, second.deferred) == \
            (second.id, True, False, False)
        assert store.maintenance.pending_embeddings() == 0
    assert embeddings(raw)["张三住在北京"] is not None


def test_update_follows_the_policy(fresh_db, raw):
    embedder = StubEmbedder()
    with MemoryStore(fresh_db, gate=None, embedder=embedder) as store:
        mid = store.add("Bob drinks coffee", subject="bob").id
        before = store.get(mid)
        embedder.mode = "raise"
        with pytest.raises(EmbeddingError):
            store.update(mid, content="Bob drinks 乌龙茶 now")
        after = store.get(mid)
        assert (after.content, after.version) == (before.content, before.version)
        assert embeddings(raw)["Bob drinks coffee"] is not None
        store.update(mid, importance=0.9)  # no new text: the provider is not needed

    with MemoryStore(fresh_db, gate=None, embedder=embedder, on_embedding_error="defer") as store:
        changed = store.update(mid, content="Bob drinks 乌龙茶 now")
        assert changed.content == "Bob drinks 乌龙茶 now" and changed.version == 3
        assert embeddings(raw)["Bob drinks 乌龙茶 now"] is None  # never the old text's vector
        assert store.maintenance.pending_embeddings() == 1
        embedder.mode = "ok"
        assert store.maintenance.reembed() == 1
        embedder.mode = "raise"
        store.update(mid, search_context="said on 2024-06-01")  # the embedded text changes too
        assert embeddings(raw)["Bob drinks 乌龙茶 now"] is None
        embedder.mode = "ok"
        assert store.maintenance.reembed() == 1
        assert np.allclose(embeddings(raw)["Bob drinks 乌龙茶 now"],
                           canned_vector("said on 2024-06-01\nBob drinks 乌龙茶 now", DIMS),
                           atol=1e-6)


def test_reembed_batches_limit_and_progress(fresh_db):
    embedder = StubEmbedder("raise")
    with MemoryStore(fresh_db, gate=None, embedder=embedder, on_embedding_error="defer") as store:
        store.add_many([f"第{i}条记忆 memory number {i}" for i in range(7)])
        embedder.mode, embedder.calls = "ok", 0
        seen: list[tuple[int, int]] = []
        assert store.maintenance.reembed(
            batch_size=2, limit=5, progress=lambda done, total: seen.append((done, total))) == 5
        assert embedder.calls == 3 and seen == [(2, 5), (4, 5), (5, 5)]
        assert store.maintenance.pending_embeddings() == 2
        assert store.maintenance.reembed(batch_size=100) == 2
        with pytest.raises(InvalidInput):
            store.maintenance.reembed(batch_size=0)


def test_reembed_failure_keeps_finished_batches(fresh_db):
    embedder = StubEmbedder("raise")
    with MemoryStore(fresh_db, gate=None, embedder=embedder, on_embedding_error="defer") as store:
        store.add_many([f"memory {i} 记忆" for i in range(6)])
        embedder.mode, embedder.calls, embedder.fail_after = "raise", 0, 1
        with pytest.raises(EmbeddingError, match="after 2 memories"):
            store.maintenance.reembed(batch_size=2)
        assert store.maintenance.pending_embeddings() == 4


def test_reembed_never_stores_a_stale_vector(fresh_db, raw):
    """A row whose text changes while its batch is being embedded keeps no vector of the old
    text; it stays queued and gets the new text's vector on the next run."""
    embedder = StubEmbedder("raise")
    with MemoryStore(fresh_db, gate=None, embedder=embedder, on_embedding_error="defer") as store:
        ids = [r.id for r in store.add_many(ITEMS)]
        embedder.mode = "ok"

        def change_meanwhile(texts):
            embedder.on_call = None
            raw.execute("UPDATE memdb.memories SET content = '李四现在是后端工程师' WHERE id = %s",
                        (ids[0],))

        embedder.on_call = change_meanwhile
        assert store.maintenance.reembed() == len(ITEMS) - 1
        assert embeddings(raw)["李四现在是后端工程师"] is None
        assert store.maintenance.pending_embeddings() == 1
        assert store.maintenance.reembed() == 1
        assert np.allclose(embeddings(raw)["李四现在是后端工程师"],
                           canned_vector("李四现在是后端工程师", DIMS), atol=1e-6)


def test_reembed_stays_in_its_tenant_and_subject(fresh_db, raw):
    embedder = StubEmbedder("raise")
    with MemoryStore(fresh_db, gate=None, embedder=embedder, on_embedding_error="defer") as a, \
            MemoryStore(fresh_db, gate=None, tenant="other", embedder=embedder,
                        on_embedding_error="defer") as b, \
            MemoryStore(fresh_db, gate=None, subject="lisi", embedder=embedder,
                        on_embedding_error="defer") as lisi:
        a.add_many(ITEMS)
        b.add_many(ITEMS)
        embedder.mode = "ok"
        assert (lisi.maintenance.pending_embeddings(), a.maintenance.pending_embeddings()) == (1, 4)
        assert lisi.maintenance.reembed() == 1
        assert (a.maintenance.pending_embeddings(), b.maintenance.pending_embeddings()) == (3, 4)
        assert a.maintenance.reembed() == 3 and b.maintenance.pending_embeddings() == 4


def test_cli_reembed(fresh_db, monkeypatch, tmp_path):
    monkeypatch.setenv("MEMDB_HOME", str(tmp_path / "home"))
    with CannedOpenAI(dims=DIMS, mode="error") as api:
        for key, value in {"MEMDB_EMBEDDER": "openai", "MEMDB_EMBED_MODEL": "canned-16",
                           "MEMDB_EMBED_DIMS": str(DIMS), "MEMDB_EMBED_BASE_URL": api.base_url,
                           "MEMDB_EMBED_API_KEY": "sk-cli-abcdef",
                           "MEMDB_EMBED_MAX_RETRIES": "0"}.items():
            monkeypatch.setenv(key, value)
        runner = CliRunner()

        def run(*args: str):
            return runner.invoke(cli, ["--dsn", fresh_db, *args], catch_exceptions=False)

        failed = run("add", "--no-gate", "no provider, no memory")
        assert failed.exit_code == 1 and failed.stderr.startswith("error: ")
        assert "EmbeddingError" not in failed.stderr and "embedding request" in failed.stderr
        monkeypatch.setenv("MEMDB_ON_EMBEDDING_ERROR", "defer")
        for text in ("用户喜欢深色模式", "The user prefers dark mode", "每周一开周会"):
            assert run("add", "--no-gate", text, "--json").exit_code == 0
        assert json.loads(run("maintenance", "pending", "--json").stdout) == {"pending": 3}
        still_down = run("maintenance", "reembed", "--json")
        assert still_down.exit_code == 1 and still_down.stderr.startswith("error: re-embedding")

        api.mode = "ok"
        result = run("maintenance", "reembed", "--batch-size", "1", "--json")
        assert result.exit_code == 0, result.output
        out = json.loads(result.stdout)
        assert (out["reembedded"], out["pending"]) == (3, 0)
        assert result.stderr.splitlines() == [f"re-embedded {i}/3" for i in (1, 2, 3)]
        assert run("maintenance", "pending").stdout.strip() == "0"
        text = run("maintenance", "reembed")
        assert text.exit_code == 0 and "re-embedded 0 memories" in text.stdout
        assert "0 still pending" in text.stdout
        assert run("maintenance", "reembed", "--help").exit_code == 0
