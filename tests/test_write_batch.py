"""memdb.write_memories writes a call's new rows in one INSERT (memdb.insert_pending): the
outcomes, the BM25 statistics and the history must be exactly what row-by-row writing gave -
duplicates inside the call, a slot version or a correction of a row made earlier in the call,
a near duplicate of one, Chinese and English."""

from __future__ import annotations

import json

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

DIMS = 384


def _unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture
def conn(store, fresh_db):
    store.space_id()  # registers the store's embedding space
    with psycopg.connect(fresh_db, autocommit=True) as c:
        register_vector(c)
        yield c


def _write(conn, items, vectors, options=None):
    space = conn.execute("SELECT id FROM memdb.embedding_spaces ORDER BY id LIMIT 1").fetchone()[0]
    return conn.execute(
        "SELECT ord, id, outcome, related_id FROM memdb.write_memories(%s, %s, %s, %s)",
        (json.dumps(items), vectors, space, json.dumps(options or {}))).fetchall()


def _statistics_match(conn) -> None:
    stats = conn.execute("SELECT doc_count, total_len FROM memdb.bm25_stats "
                         "WHERE tenant = 'default'").fetchone()
    recount = conn.execute("SELECT count(*), coalesce(sum(doc_len), 0) FROM memdb.memories "
                           "WHERE tenant = 'default' AND valid_to IS NULL").fetchone()
    assert tuple(stats) == tuple(recount)
    wrong = conn.execute("""
        SELECT count(*) FROM (
            SELECT u.lexeme AS term, count(*) AS df
            FROM memdb.memories m, unnest(m.tsv) u
            WHERE m.tenant = 'default' AND m.valid_to IS NULL GROUP BY 1) r
        FULL JOIN (SELECT term, df FROM memdb.bm25_terms WHERE tenant = 'default' AND df <> 0) t
          USING (term)
        WHERE r.df IS DISTINCT FROM t.df""").fetchone()[0]
    assert wrong == 0


def test_one_call_with_repeats_slots_and_near_duplicates(conn):
    a, b = _unit(1), _unit(2)
    near_a = a + 0.01 * _unit(3)
    near_a /= np.linalg.norm(near_a)
    items = [
        {"content": "Alice drinks green tea every morning", "subject": "alice"},  # 1 created
        {"content": "爱丽丝每天早上喝绿茶", "subject": "alice"},  # 2 created
        {"content": "Alice drinks green tea every morning", "subject": "alice"},  # 3 dup of 1
        {"content": "Alice lives in Berlin", "subject": "alice", "norm_key": "city"},  # 4 created
        {"content": "Alice lives in Paris", "subject": "alice", "norm_key": "city"},  # 5 replaces 4
        {"content": "alice drinks green tea every morning!", "subject": "alice"},  # 6 merged into 1
        {"content": "爱丽丝每天早上喝绿茶", "subject": "bob"},  # 7 other subject
        {"content": "鲍勃住在上海", "subject": "bob", "category": "entities"},  # 8 created
    ]
    vectors = [a, b, a, _unit(4), _unit(5), near_a, b, _unit(6)]
    out = _write(conn, items, vectors, {"near_dup_threshold": 0.95})
    assert [r[0] for r in out] == list(range(1, 9))
    outcome = {r[0]: r[2] for r in out}
    assert outcome == {1: "created", 2: "created", 3: "duplicate", 4: "created",
                       5: "superseded", 6: "merged", 7: "created", 8: "created"}
    ids = {r[0]: r[1] for r in out}
    assert ids[3] == ids[1] and ids[6] == ids[1]
    assert out[4][3] == ids[4]  # the slot version names the row it superseded
    assert out[5][3] == ids[1]  # the merge names its target
    current = conn.execute(
        "SELECT count(*) FROM memdb.memories WHERE valid_to IS NULL").fetchone()[0]
    assert current == 5  # six rows made, one of them superseded
    assert conn.execute("SELECT superseded_by FROM memdb.memories WHERE id = %s",
                        (ids[4],)).fetchone()[0] == ids[5]
    # every row made has its insert in the history, once; the supersession and the merge too
    ops = conn.execute("SELECT op, count(*) FROM memdb.memory_history GROUP BY op").fetchall()
    assert dict(ops) == {"insert": 6, "supersede": 1, "update": 1}
    _statistics_match(conn)


def test_a_second_call_sees_the_first_and_statistics_stay_exact(conn):
    items = [{"content": f"note {i} about project 项目{i % 7} and tea", "subject": f"u{i % 3}"}
             for i in range(40)]
    first = _write(conn, items, [_unit(100 + i) for i in range(40)])
    assert {r[2] for r in first} == {"created"}
    again = _write(conn, items[:10] + [{"content": "a new one", "subject": "u0"}],
                   [_unit(100 + i) for i in range(10)] + [_unit(999)])
    assert [r[2] for r in again] == ["duplicate"] * 10 + ["created"]
    assert [r[1] for r in again[:10]] == [r[1] for r in first[:10]]
    assert conn.execute("SELECT sum(access_count) FROM memdb.memories").fetchone()[0] == 10
    _statistics_match(conn)
    conn.execute("DELETE FROM memdb.memories WHERE subject = 'u1'")
    _statistics_match(conn)


def test_the_write_path_keeps_generic_plans_and_its_outcomes(conn):
    """On plain PostgreSQL memdb.write_memories runs with plan_cache_mode force_generic_plan
    (set by the migration): its near-duplicate look-up was planned anew on every add when
    custom plans looked cheaper. The outcomes must not depend on the plans: in one session, past
    the calls plpgsql plans as custom ones, a near duplicate (English, then Chinese) still merges,
    into a stored row and into a row of the same call, and a new text is still created."""
    config = conn.execute("SELECT proconfig FROM pg_proc WHERE proname = 'write_memories' "
                          "AND pronamespace = 'memdb'::regnamespace").fetchone()[0]
    assert "plan_cache_mode=force_generic_plan" in (config or [])
    options = {"near_dup_threshold": 0.95}
    for n in range(8):
        base = _unit(100 + n)
        near = base + 0.01 * _unit(200 + n)
        near /= np.linalg.norm(near)
        text = (f"Bob keeps {n} bonsai trees on the balcony" if n % 2
                else f"鲍勃在阳台上养了{n}棵盆景")
        first = _write(conn, [{"content": text, "subject": "bob", "category": "general"}],
                       [base], options)
        assert [r[2] for r in first] == ["created"], n
        again = _write(conn, [{"content": text.upper() + "!", "subject": "bob",
                               "category": "general"},
                              {"content": f"new {n}: {text} in pots", "subject": "bob",
                               "category": "general"},
                              {"content": f"NEW {n}: {text} in pots.", "subject": "bob",
                               "category": "general"}],
                       [near, _unit(300 + n), _unit(300 + n)], options)
        assert [r[2] for r in again] == ["merged", "created", "merged"], n
        assert again[0][3] == first[0][1] and again[2][3] == again[1][1], n
    _statistics_match(conn)
