"""The lifecycle SQL functions (sql/functions/2xx), called directly from SQL: TTL purge,
the forgetting strategies (each dry run returns exactly the ids the real run deletes), system
memories never forgotten, hypothesis confidence decay, run_maintenance (counts, dry run,
idempotency, no overlap), consolidation, review approve/reject — as the admin and as the
application role under row-level security. Fixed data, no embedder.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

import psycopg
import pytest
from psycopg.rows import dict_row, tuple_row
from psycopg.types.json import Jsonb


def add(raw, items: list[dict]) -> list:
    """memdb.add_memories → ids in input order."""
    rows = raw.execute("SELECT ord, id FROM memdb.add_memories(%s) ORDER BY ord",
                       (Jsonb(items),)).fetchall()
    return [r[1] for r in rows]


def one(raw, query: str, params: tuple = ()):
    return raw.execute(query, params).fetchone()[0]


def ids_of(raw, query: str, params: tuple = ()) -> list:
    return [r[0] for r in raw.execute(query, params).fetchall()]


def age(raw, ids, days: float, column: str = "created_at") -> None:
    """Move rows back in time (as the admin; the write trigger leaves these columns alone)."""
    assert column in ("created_at", "updated_at")
    raw.execute(f"UPDATE memdb.memories SET {column} = now() - %s * interval '1 day' "
                "WHERE id = ANY(%s)", (days, list(ids)))


def existing(raw, ids) -> set:
    return set(ids_of(raw, "SELECT id FROM memdb.memories WHERE id = ANY(%s)", (list(ids),)))


@contextmanager
def as_app(dsn: str, tenant: str):
    """A transaction as the application role with memdb.tenant set (what the DAL does)."""
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT set_config('role', 'memdb_app', true), "
                     "set_config('memdb.tenant', %s, true)", (tenant,))
        yield conn


# -- TTL -----------------------------------------------------------------------------------------
def test_purge_expired_batch_dry_run_limit_and_history(raw):
    live = add(raw, [{"content": "still valid", "ttl_seconds": 3600}])
    dead = add(raw, [{"content": f"expired note {i}", "expires_at": f"2020-01-0{i + 1}T00:00:00Z"}
                     for i in range(5)])
    planned = ids_of(raw, "SELECT memdb.purge_expired_batch('default', 3, true)")
    assert planned == dead[:3]  # oldest expiry first, bounded
    assert existing(raw, dead) == set(dead)  # dry run changed nothing
    done = ids_of(raw, "SELECT memdb.purge_expired_batch('default', 3)")
    assert sorted(done) == sorted(planned)
    assert sorted(ids_of(raw, "SELECT memdb.purge_expired_batch(NULL, 10)")) == sorted(dead[3:])
    assert existing(raw, live + dead) == set(live)
    reasons = ids_of(raw, "SELECT DISTINCT reason FROM memdb.memory_history WHERE op = 'delete'")
    assert reasons == ["expired"]


def test_expired_rows_are_never_returned(raw):
    add(raw, [{"content": "过期的提醒 expired reminder", "expires_at": "2020-01-01T00:00:00Z"}])
    assert one(raw, "SELECT count(*) FROM memdb.list_memories('default', '{}')") == 0
    assert one(raw, "SELECT count(*) FROM memdb.search_bm25('default', '过期的提醒')") == 0


# -- forgetting strategies -------------------------------------------------------------------------
def test_forget_by_importance_dry_run_equals_real_run_and_spares_system(raw):
    ids = add(raw, [
        {"content": "trivial small talk", "importance": 0.05},
        {"content": "闲聊：今天天气不错", "importance": 0.02},
        {"content": "user likes jazz", "importance": 0.6},
        {"content": "system prompt fragment", "importance": 0.01, "category": "system"},
        {"content": "another tenant's trivia", "importance": 0.01, "tenant": "other"},
    ])
    dry = ids_of(raw, "SELECT memdb.forget_by_importance('default', 0.1, 1000, true)")
    assert dry == [ids[1], ids[0]]  # least important first
    assert existing(raw, ids) == set(ids)
    real = ids_of(raw, "SELECT memdb.forget_by_importance('default', 0.1)")
    assert sorted(real) == sorted(dry)
    assert existing(raw, ids) == {ids[2], ids[3], ids[4]}  # system and other tenant untouched
    reason = raw.execute("SELECT reason FROM memdb.memory_history WHERE memory_id = %s AND op = "
                         "'delete'", (ids[0],)).fetchone()[0]
    assert reason == "forget: importance below 0.1"
    assert ids_of(raw, "SELECT memdb.forget_by_importance('default', 0.1)") == []  # idempotent


def test_forget_by_age_keeps_used_and_recent_memories(raw):
    ids = add(raw, [{"content": c} for c in (
        "old and never used", "旧的而且从未使用过", "old but used", "old but restated",
        "recent note", "old system rule")])
    raw.execute("UPDATE memdb.memories SET category = 'system' WHERE id = %s", (ids[5],))
    age(raw, ids[:4] + ids[5:], 400)
    raw.execute("SELECT memdb.mark_used('default', %s)", ([ids[2]],))
    add(raw, [{"content": "old but restated"}])  # a re-statement is a use too
    dry = ids_of(raw, "SELECT memdb.forget_by_age('default', 180, 0, 1000, true)")
    assert sorted(dry) == sorted(ids[:2])
    real = ids_of(raw, "SELECT memdb.forget_by_age('default', 180, 0)")
    assert sorted(real) == sorted(dry)
    assert existing(raw, ids) == set(ids[2:])
    # with a higher allowance, old memories used once but not within the window go too
    raw.execute("UPDATE memdb.memory_usage SET last_used_at = now() - interval '300 days'")
    raw.execute("UPDATE memdb.memories SET last_accessed_at = now() - interval '300 days'")
    assert sorted(ids_of(raw, "SELECT memdb.forget_by_age('default', 180, 1, 1000, true)")) == \
        sorted(ids[2:4])


def test_forget_by_capacity_keeps_top_priority_per_session(raw):
    s1 = add(raw, [{"content": f"s1 working note {i}", "kind": "working", "scope": "session",
                    "session_id": "s1", "importance": imp}
                   for i, imp in enumerate((0.9, 0.2, 0.5, 0.8, 0.3))])
    s2 = add(raw, [{"content": f"s2 工作记忆 {i}", "kind": "working", "scope": "session",
                    "session_id": "s2", "importance": 0.1} for i in range(2)])
    sysmem = add(raw, [{"content": "s1 system note", "kind": "working", "scope": "session",
                        "session_id": "s1", "importance": 0.0, "category": "system"}])
    # an old important note decays below a fresh mid one: 0.9 * 0.5^(14/7) = 0.225 < 0.3
    age(raw, [s1[0]], 14)
    dry = ids_of(raw, "SELECT memdb.forget_by_capacity('default', 2, 7, 1000, true)")
    assert dry == [s1[1], s1[0], s1[4]]  # lowest priority first: 0.2, 0.225, 0.3
    real = ids_of(raw, "SELECT memdb.forget_by_capacity('default', 2, 7)")
    assert sorted(real) == sorted(dry)
    assert existing(raw, s1 + s2 + sysmem) == {s1[2], s1[3], *s2, *sysmem}
    assert ids_of(raw, "SELECT memdb.forget_by_capacity('default', 2, 7)") == []


def test_batch_limit_bounds_each_call(raw):
    add(raw, [{"content": f"noise {i}", "importance": 0.01} for i in range(25)])
    assert len(ids_of(raw, "SELECT memdb.forget_by_importance('default', 0.1, 10)")) == 10
    assert len(ids_of(raw, "SELECT memdb.forget_by_importance('default', 0.1, 10)")) == 10
    assert len(ids_of(raw, "SELECT memdb.forget_by_importance('default', 0.1, 10)")) == 5


def test_system_memories_are_never_forgotten_by_any_step(raw):
    ids = add(raw, [{"content": f"系统规则 system rule {i}", "category": "system",
                     "importance": 0.0,
                     "kind": "working", "scope": "session", "session_id": "s"} for i in range(5)])
    raw.execute("UPDATE memdb.memories SET status = 'hypothesis', confidence = 0.3")
    age(raw, ids, 1000)
    age(raw, ids, 1000, "updated_at")
    out = one(raw, "SELECT memdb.run_maintenance(NULL, '{\"capacity_per_session\": 0}')")
    assert out["steps"]["forget_importance"] == 0 and out["steps"]["forget_age"] == 0
    assert out["steps"]["forget_capacity"] == 0
    assert out["steps"]["hypotheses"] == {"decayed": 5, "forgotten": 0}
    assert existing(raw, ids) == set(ids)


# -- hypotheses ------------------------------------------------------------------------------------
def test_hypothesis_confidence_decays_exponentially_and_falls_below_floor(raw):
    ids = add(raw, [{"content": "user might be vegetarian", "confidence": 0.8},
                    {"content": "用户可能住在上海", "confidence": 0.8},
                    {"content": "a fresh guess", "confidence": 0.8},
                    {"content": "confirmed fact", "confidence": 0.8}])
    raw.execute("UPDATE memdb.memories SET status = 'hypothesis' WHERE id = ANY(%s)", (ids[:3],))
    age(raw, [ids[0], ids[3]], 7, "updated_at")  # one half-life
    age(raw, [ids[1]], 21, "updated_at")  # three: 0.8 / 8 = 0.1 < floor 0.2
    dry = raw.execute("SELECT id, old_confidence, new_confidence, action "
                      "FROM memdb.decay_hypotheses('default', 7, 0.2, 0.01, 1000, true)").fetchall()
    assert [r[0] for r in dry] == [ids[1], ids[0]]
    assert dry[0][3] == "forget" and dry[0][2] == pytest.approx(0.1, abs=1e-3)
    assert dry[1][3] == "decay" and dry[1][2] == pytest.approx(0.4, abs=1e-3)
    real = raw.execute("SELECT id, action "
                       "FROM memdb.decay_hypotheses('default', 7, 0.2)").fetchall()
    assert sorted(real) == sorted((r[0], r[3]) for r in dry)
    conf = dict(raw.execute("SELECT id, confidence FROM memdb.memories").fetchall())
    assert ids[1] not in conf
    assert conf[ids[0]] == pytest.approx(0.4, abs=1e-3)
    assert conf[ids[2]] == pytest.approx(0.8) and conf[ids[3]] == pytest.approx(0.8)
    # the decay moved updated_at: running again right away changes nothing (no double decay)
    assert one(raw, "SELECT count(*) FROM memdb.decay_hypotheses('default', 7, 0.2)") == 0
    # a further half-life later the decay continues from 0.4, not from the original 0.8
    # (floor 0.1 here: 0.2 is the floor of above, and the milliseconds past the half-life
    # put the decayed 0.2 just under it on a loaded machine, which forgets the memory)
    age(raw, [ids[0]], 7, "updated_at")
    raw.execute("SELECT * FROM memdb.decay_hypotheses('default', 7, 0.1)")
    assert raw.execute("SELECT confidence FROM memdb.memories WHERE id = %s",
                       (ids[0],)).fetchone()[0] == pytest.approx(0.2, abs=1e-3)
    reasons = ids_of(raw, "SELECT reason FROM memdb.memory_history WHERE memory_id = %s "
                          "AND op = 'update' ORDER BY id", (ids[0],))
    assert reasons == ["decay: unconfirmed hypothesis (half-life 7 days)"] * 2


# -- run_maintenance -------------------------------------------------------------------------------
def _messy(raw, tenant: str = "default") -> dict:
    ids = {
        "expired": add(raw, [{"content": f"{tenant} expired", "tenant": tenant,
                              "expires_at": "2020-01-01T00:00:00Z"}]),
        "trivial": add(raw, [{"content": f"{tenant} trivial {i}", "tenant": tenant,
                              "importance": 0.05} for i in range(3)]),
        "old": add(raw, [{"content": f"{tenant} 很久以前的事 {i}", "tenant": tenant}
                         for i in range(2)]),
        "working": add(raw, [{"content": f"{tenant} working {i}", "tenant": tenant,
                              "kind": "working", "scope": "session", "session_id": "s",
                              "importance": 0.3 + i / 100} for i in range(5)]),
        "guess": add(raw, [{"content": f"{tenant} guess", "tenant": tenant, "confidence": 0.5}]),
        "keep": add(raw, [{"content": f"{tenant} keep", "tenant": tenant}]),
    }
    age(raw, ids["old"], 365)
    raw.execute("UPDATE memdb.memories SET status = 'hypothesis' WHERE id = ANY(%s)",
                (ids["guess"],))
    age(raw, ids["guess"], 14, "updated_at")  # 0.5 -> 0.125, below the floor
    return ids


OPTS = '{"capacity_per_session": 3}'


def test_run_maintenance_counts_dry_run_and_idempotency(raw):
    ids = _messy(raw)
    before = raw.execute("SELECT count(*), (SELECT count(*) FROM memdb.memory_history) "
                         "FROM memdb.memories").fetchone()
    dry = one(raw, "SELECT memdb.run_maintenance('default', %s, true)", (OPTS,))
    assert raw.execute("SELECT count(*), (SELECT count(*) FROM memdb.memory_history) "
                       "FROM memdb.memories").fetchone() == before
    expected = {"purge_expired": 1, "forget_importance": 3, "forget_age": 2,
                "forget_capacity": 2, "hypotheses": {"decayed": 0, "forgotten": 1}}
    assert dry["steps"] == expected and dry["dry_run"] is True and dry["more"] is False
    real = one(raw, "SELECT memdb.run_maintenance('default', %s)", (OPTS,))
    assert real["steps"] == expected and real["skipped"] is False
    left = existing(raw, [i for group in ids.values() for i in group])
    assert left == {*ids["working"][2:], *ids["keep"]}
    again = one(raw, "SELECT memdb.run_maintenance('default', %s)", (OPTS,))
    assert again["steps"] == {"purge_expired": 0, "forget_importance": 0, "forget_age": 0,
                              "forget_capacity": 0, "hypotheses": {"decayed": 0, "forgotten": 0}}


def test_run_maintenance_all_tenants_as_admin_one_tenant_as_app(raw, fresh_db):
    _messy(raw, "acme")
    _messy(raw, "globex")
    with as_app(fresh_db, "acme") as conn:
        # every tenant (NULL) is the admin's: the application role is refused
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT memdb.run_maintenance(NULL, %s)", (OPTS,))
    with as_app(fresh_db, "acme") as conn:  # its own tenant: row-level security confines it
        out = conn.execute("SELECT memdb.run_maintenance('acme', %s)", (OPTS,)).fetchone()[0]
    assert out["steps"]["forget_importance"] == 3
    left = dict(raw.execute("SELECT tenant, count(*) FROM memdb.memories GROUP BY 1").fetchall())
    assert left == {"acme": 4, "globex": 13}
    out = one(raw, "SELECT memdb.run_maintenance(NULL, %s)", (OPTS,))
    assert out["steps"]["forget_importance"] == 3 and out["tenant"] is None
    left = dict(raw.execute("SELECT tenant, count(*) FROM memdb.memories GROUP BY 1").fetchall())
    assert left == {"acme": 4, "globex": 4}


def test_run_maintenance_batches_and_reports_more(raw):
    add(raw, [{"content": f"noise {i}", "importance": 0.01} for i in range(7)])
    out = one(raw, "SELECT memdb.run_maintenance(NULL, '{\"batch_limit\": 5}')")
    assert out["steps"]["forget_importance"] == 5 and out["more"] is True
    out = one(raw, "SELECT memdb.run_maintenance(NULL, '{\"batch_limit\": 5}')")
    assert out["steps"]["forget_importance"] == 2 and out["more"] is False


def test_run_maintenance_steps_option_and_bad_options(raw):
    out = one(raw, "SELECT memdb.run_maintenance(NULL, '{\"steps\": [\"purge_expired\"]}')")
    assert out["steps"] == {"purge_expired": 0}
    for bad in ('{"nope": 1}', '{"steps": ["vacuum"]}', '{"batch_limit": 0}'):
        with pytest.raises(psycopg.Error) as info:
            raw.execute("SELECT memdb.run_maintenance(NULL, %s)", (bad,))
        assert info.value.sqlstate == "22023"


def test_two_runs_never_overlap(raw, fresh_db):
    add(raw, [{"content": "noise", "importance": 0.01}])
    with psycopg.connect(fresh_db) as first:
        held = first.execute("SELECT memdb.run_maintenance()").fetchone()[0]
        assert held["skipped"] is False  # the lock is held until `first` commits
        second = one(raw, "SELECT memdb.run_maintenance()")
        assert second["skipped"] is True and second["steps"] == {}
        # another tenant's run has its own lock
        assert one(raw, "SELECT memdb.run_maintenance('acme')")["skipped"] is False
    assert one(raw, "SELECT memdb.run_maintenance()")["skipped"] is False


def test_run_maintenance_skips_locked_rows_instead_of_waiting(raw, fresh_db):
    ids = add(raw, [{"content": f"noise {i}", "importance": 0.01} for i in range(3)])
    with psycopg.connect(fresh_db) as writer:
        writer.execute("SELECT 1 FROM memdb.memories WHERE id = %s FOR UPDATE", (ids[0],))
        done = threading.Event()
        result = {}

        def run():
            with psycopg.connect(fresh_db, autocommit=True) as conn:
                result["out"] = conn.execute("SELECT memdb.run_maintenance()").fetchone()[0]
            done.set()

        thread = threading.Thread(target=run)
        thread.start()
        assert done.wait(20), "run_maintenance waited on a locked row"
        thread.join()
    assert result["out"]["steps"]["forget_importance"] == 2
    assert existing(raw, ids) == {ids[0]}


# -- consolidation ---------------------------------------------------------------------------------
def test_consolidate_session_moves_important_working_memories(raw):
    ids = add(raw, [
        {"content": "decided to use PostgreSQL", "kind": "working", "scope": "session",
         "session_id": "s1", "importance": 0.7, "ttl_seconds": 3600},
        {"content": "决定下周发布", "kind": "working", "scope": "session", "session_id": "s1",
         "importance": 0.95},
        {"content": "said hello", "kind": "working", "scope": "session", "session_id": "s1",
         "importance": 0.2},
        {"content": "other session", "kind": "working", "scope": "session", "session_id": "s2",
         "importance": 0.9},
    ])
    dry = raw.execute("SELECT id "
                      "FROM memdb.consolidate_session('default', 's1', 0.6, NULL, true)").fetchall()
    real = raw.execute("SELECT id, old_importance, new_importance "
                       "FROM memdb.consolidate_session('default', 's1', 0.6)").fetchall()
    assert [r[0] for r in dry] == [r[0] for r in real]
    assert sorted(r[0] for r in real) == sorted(ids[:2])
    new = {r[0]: r[2] for r in real}
    assert new[ids[0]] == pytest.approx(0.77) and new[ids[1]] == pytest.approx(1.0)
    rows = {r[0]: r[1:] for r in raw.execute(
        "SELECT id, kind, importance, expires_at FROM memdb.memories").fetchall()}
    assert rows[ids[0]][0] == "episodic" and rows[ids[0]][2] is None  # TTL cleared
    assert rows[ids[1]][:2] == ("episodic", pytest.approx(1.0))
    assert rows[ids[2]][0] == "working" and rows[ids[3]][0] == "working"
    assert ids_of(raw, "SELECT reason FROM memdb.memory_history WHERE memory_id = %s AND "
                       "op = 'update'", (ids[0],)) == ["consolidate: session s1"]
    assert one(raw, "SELECT count(*) FROM memdb.consolidate_session('default', 's1')") == 0


# -- review queue ----------------------------------------------------------------------------------
def _propose(raw, content: str, subject: str = "alice", reason: str = "rule"):
    return raw.cursor(row_factory=tuple_row).execute(
        "INSERT INTO memdb.review_queue (tenant, subject, content, content_hash, reason) "
        "VALUES ('default', %s, %s, memdb.content_hash(%s), %s) RETURNING id",
        (subject, content, content, reason)).fetchone()[0]


def test_review_approve_and_reject(raw):
    raw.row_factory = dict_row
    a = _propose(raw, "部署前必须先跑测试")
    b = _propose(raw, "Never deploy on Fridays")
    mid = raw.execute("SELECT memdb.review_approve('default', %s, 'ops-lead') AS m",
                      (a,)).fetchone()["m"]
    m = raw.execute("SELECT * FROM memdb.memories WHERE id = %s", (mid,)).fetchone()
    assert (m["content"], m["category"], m["kind"], m["subject"]) == \
        ("部署前必须先跑测试", "system", "procedural", "alice")
    assert m["source_type"] == "system" and m["source_id"] == f"review:{a}"
    assert m["tags"] == ["rule"]
    q = raw.execute("SELECT * FROM memdb.review_queue WHERE id = %s", (a,)).fetchone()
    assert (q["status"], q["decided_by"], q["memory_id"]) == ("approved", "ops-lead", mid)
    assert q["decided_at"] is not None
    h = raw.execute("SELECT reason FROM memdb.memory_history WHERE memory_id = %s",
                    (mid,)).fetchone()
    assert h["reason"] == "review: approved by ops-lead"
    assert raw.execute("SELECT memdb.review_reject('default', %s, 'ops-lead') AS r",
                       (b,)).fetchone()["r"]
    q = raw.execute("SELECT * FROM memdb.review_queue WHERE id = %s", (b,)).fetchone()
    assert q["status"] == "rejected" and q["memory_id"] is None and q["decided_by"] == "ops-lead"
    assert raw.execute("SELECT count(*) AS n FROM memdb.memories").fetchone()["n"] == 1
    for fn, rid, state in (("review_approve", b, "22023"), ("review_reject", a, "22023"),
                           ("review_approve", "00000000-0000-0000-0000-000000000000", "P0002")):
        with pytest.raises(psycopg.Error) as info:
            raw.execute(f"SELECT memdb.{fn}('default', %s)", (rid,))
        assert info.value.sqlstate == state
