"""The search routes' cheaper paths return what the general ones do: BM25 scoped to a subject
whose query term is common tenant-wide (over 2,000 documents: the subject's rows are tested
instead of the GIN index's tenant-wide matches), and the vector route's one pass that counts
and ranks a filter's rows (exact up to exact_limit rows, HNSW beyond), Chinese and English."""

from __future__ import annotations

import json

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from memdb import MemoryInput

DIMS = 384


def _units(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, DIMS)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_bm25_scoped_to_a_subject_with_a_common_term(store, fresh_db):
    vectors = _units(2105, 1)
    items = [MemoryInput(content=f"note {i}: green tea and 绿茶 with item{i}", subject=f"s{i % 50}",
                         embedding=vectors[i]) for i in range(2100)]
    items += [MemoryInput(content=f"alice likes green tea {i} / 爱丽丝喜欢绿茶 {i}",
                          subject="alice", embedding=vectors[2100 + i]) for i in range(5)]
    store.add_many(items, batch_size=500)
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        df = conn.execute("SELECT df FROM memdb.bm25_terms WHERE term = 'tea'").fetchone()[0]
        assert df > 2000  # the subject-scan path
        for query in ("green tea", "绿茶"):
            rows = conn.execute("SELECT id, score FROM memdb.search_bm25('default', %s, 50, %s)",
                                (query, json.dumps({"subject": "alice"}))).fetchall()
            alice = {r[0] for r in conn.execute(
                "SELECT id FROM memdb.memories WHERE subject = 'alice'").fetchall()}
            assert {r[0] for r in rows} == alice
            # the same ranking as the general path (a filter memdb.matches evaluates)
            general = conn.execute(
                "SELECT id, score FROM memdb.search_bm25('default', %s, 50, %s)",
                (query, json.dumps({"subject": "alice", "status": ["active", "hypothesis"]}))
            ).fetchall()
            assert rows == general


def test_vector_route_exact_within_the_limit_and_hnsw_beyond(store, fresh_db):
    vectors = _units(60, 2)
    store.add_many([MemoryInput(content=f"memory {i} 记忆 {i}", subject="bob" if i < 30 else "eve",
                                embedding=vectors[i]) for i in range(60)])
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        register_vector(conn)
        q = vectors[7] + 0.05 * _units(1, 3)[0]
        exact = conn.execute(
            "SELECT id, distance FROM memdb.search_vector('default', %s, 5, %s)",
            (q, json.dumps({"subject": "bob"}))).fetchall()
        truth = conn.execute(
            "SELECT id, (embedding <=> %s)::float8 FROM memdb.memories WHERE subject = 'bob' "
            "ORDER BY embedding <=> %s, id LIMIT 5", (q, q)).fetchall()
        assert exact == truth
        # more rows pass the filter than exact_limit: the HNSW index, still k rows of bob's
        beyond = conn.execute(
            "SELECT id FROM memdb.search_vector('default', %s, 5, %s, NULL, 10)",
            (q, json.dumps({"subject": "bob"}))).fetchall()
        bob = {r[0] for r in conn.execute(
            "SELECT id FROM memdb.memories WHERE subject = 'bob'").fetchall()}
        assert len(beyond) == 5 and {r[0] for r in beyond} <= bob
        assert beyond[0][0] == truth[0][0]
