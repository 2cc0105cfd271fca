"""Who may maintain whom (issue 14, item 1): a tenant- or subject-scoped store never acts
outside its scope; maintenance over every tenant is memdb.MemoryAdmin / `memdb admin maintain`,
on a login that must really be an admin; memdb.run_maintenance(NULL) refuses a confined role.
Data is written as the admin through memdb.add_memories (no embedder needed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.types.json import Jsonb

from memdb import Forbidden, MemoryAdmin, MemoryStore
from tests.cli_helpers import ok_json, run

LOW = 0.05  # importance of the noise every tenant has; forgotten at threshold 0.06


@pytest.fixture(autouse=True)
def _no_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user data folder and no DSN from the environment."""
    monkeypatch.setenv("MEMDB_HOME", str(tmp_path / "memdb-home"))
    for var in ("MEMDB_DSN", "MEMDB_ADMIN_DSN"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def tenants(raw) -> dict[str, str]:
    """One low-importance memory in tenant victim and one in tenant attacker (subject m)."""
    ids = {}
    for tenant, subject in (("victim", "alice"), ("attacker", "mallory")):
        [(ids[tenant],)] = raw.execute(
            "SELECT id FROM memdb.add_memories(%s)",
            (Jsonb([{"tenant": tenant, "subject": subject, "importance": LOW,
                     "content": f"{tenant} 的一条笔记: a note of {tenant}"}]),)).fetchall()
    return ids


def counts(raw) -> dict[str, int]:
    return dict(raw.execute("SELECT tenant, count(*) FROM memdb.memories GROUP BY 1").fetchall())


@pytest.fixture
def app_dsn(raw, fresh_db) -> Iterator[str]:
    """A login of its own, granted memdb_app, not the owner: how applications connect."""
    name = f"memdb_test_admin_app_{raw.info.backend_pid}"
    raw.execute(f"CREATE ROLE {name} LOGIN")
    raw.execute(f"GRANT memdb_app TO {name}")
    try:
        yield make_conninfo(**{**conninfo_to_dict(fresh_db), "user": name})
    finally:
        raw.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                    (name,))
        raw.execute(f"DROP ROLE {name}")


# -- the store never leaves its tenant -------------------------------------------------------
@pytest.mark.parametrize("dry_run", [False, True])
def test_store_maintain_all_tenants_is_forbidden(fresh_db, raw, tenants, dry_run):
    """The issue's repro: a tenant- and subject-scoped store asks for every tenant."""
    with MemoryStore(fresh_db, tenant="x", subject="m") as store:
        with pytest.raises(Forbidden, match="MemoryAdmin"):
            store.maintenance.run(all_tenants=True, importance_threshold=0.06, dry_run=dry_run)
    assert counts(raw) == {"victim": 1, "attacker": 1}


def test_store_maintain_stays_in_its_tenant_and_subject(fresh_db, raw, tenants):
    raw.execute("SELECT memdb.add_memories(%s)", (Jsonb([{
        "tenant": "attacker", "subject": "bob", "importance": LOW, "content": "bob's note"}]),))
    with MemoryStore(fresh_db, tenant="attacker", subject="mallory") as store:
        out = store.maintenance.run(importance_threshold=0.06)
    assert out["tenant"] == "attacker" and out["steps"]["forget_importance"] == 1
    assert counts(raw) == {"victim": 1, "attacker": 1}  # bob's note is left too
    assert raw.execute("SELECT subject FROM memdb.memories WHERE tenant = 'attacker'"
                       ).fetchone()[0] == "bob"


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]])
def test_cli_maintain_all_tenants_is_refused(fresh_db, raw, tenants, dry_run):
    result = run(fresh_db, "--tenant", "attacker", "--as-subject", "mallory", "maintenance", "run",
                 "--all-tenants", "--set", "importance_threshold=0.06", *dry_run)
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error: --all-tenants is refused")
    assert "memdb admin maintain" in result.stderr
    assert counts(raw) == {"victim": 1, "attacker": 1}


@pytest.mark.parametrize("scope", [["--as-subject", "mallory"], ["--tenant", "attacker"]])
def test_cli_admin_refuses_a_scope(fresh_db, raw, tenants, scope):
    result = run(fresh_db, *scope, "admin", "maintain", "--set", "importance_threshold=0.06")
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error: ") and scope[0] in result.stderr
    assert counts(raw) == {"victim": 1, "attacker": 1}


# -- the admin entry point -------------------------------------------------------------------
def test_memory_admin_maintains_every_tenant_or_one(fresh_db, raw, tenants):
    raw.execute("SELECT memdb.add_memories(%s)", (Jsonb([{
        "tenant": "third", "subject": "s", "importance": LOW, "content": "第三个租户"}]),))
    with MemoryAdmin(fresh_db, actor="janitor") as admin:
        assert admin.login == conninfo_to_dict(fresh_db).get("user", admin.login)
        dry = admin.maintain(dry_run=True, importance_threshold=0.06)
        assert dry["tenant"] is None and dry["steps"]["forget_importance"] == 3
        assert counts(raw) == {"victim": 1, "attacker": 1, "third": 1}
        one = admin.maintain(tenant="third", importance_threshold=0.06,
                             steps=["forget_importance"])
        assert one["steps"] == {"forget_importance": 1}
        assert counts(raw) == {"victim": 1, "attacker": 1}
        every = admin.maintain(importance_threshold=0.06)
        assert every["steps"]["forget_importance"] == 2
    assert counts(raw) == {}
    actors = {r[0] for r in raw.execute(
        "SELECT DISTINCT actor FROM memdb.memory_history WHERE op = 'delete'").fetchall()}
    assert actors == {"janitor"}


def test_cli_admin_maintain(fresh_db, raw, tenants):
    dry = ok_json(fresh_db, "admin", "maintain", "--dry-run", "--set",
                  "importance_threshold=0.06", "--step", "forget_importance")
    assert dry["steps"] == {"forget_importance": 2} and dry["dry_run"] is True
    assert counts(raw) == {"victim": 1, "attacker": 1}
    one = ok_json(fresh_db, "admin", "maintain", "--tenant", "victim", "--set",
                  "importance_threshold=0.06")
    assert one["tenant"] == "victim" and counts(raw) == {"attacker": 1}
    text = run(fresh_db, "admin", "maintain", "--set", "importance_threshold=0.06",
               "--until-done")
    assert text.exit_code == 0, text.output
    assert "forget_importance  1" in text.stdout and text.stdout.rstrip().endswith("done")
    assert counts(raw) == {}


def test_memory_admin_refuses_an_app_login(app_dsn, fresh_db, raw, tenants, monkeypatch):
    with pytest.raises(Forbidden, match="not an admin"):
        MemoryAdmin(app_dsn)
    result = run(app_dsn, "admin", "maintain", "--set", "importance_threshold=0.06")
    assert result.exit_code == 1 and result.stderr.startswith("error: login "), result.output
    # $MEMDB_ADMIN_DSN comes before $MEMDB_DSN
    monkeypatch.setenv("MEMDB_DSN", fresh_db)
    monkeypatch.setenv("MEMDB_ADMIN_DSN", app_dsn)
    with pytest.raises(Forbidden):
        MemoryAdmin()
    monkeypatch.delenv("MEMDB_ADMIN_DSN")
    with MemoryAdmin() as admin:  # $MEMDB_DSN: the superuser of the test server
        assert admin.maintain(dry_run=True, importance_threshold=0.06)["steps"][
            "forget_importance"] == 2
    assert counts(raw) == {"victim": 1, "attacker": 1}


# -- the SQL function --------------------------------------------------------------------------
def test_run_maintenance_every_tenant_refuses_a_confined_role(app_dsn, fresh_db, raw, tenants):
    """As memdb_app (SET ROLE) and as an application login (RESET ROLE: the login itself),
    p_tenant NULL raises 42501 and changes nothing; the own tenant still works."""
    for dsn, set_role in ((fresh_db, True), (app_dsn, False)):
        with psycopg.connect(dsn) as conn:
            if set_role:
                conn.execute("SET ROLE memdb_app")
            conn.execute("SELECT set_config('memdb.tenant', 'attacker', false)")
            for dry_run in (True, False):
                with pytest.raises(psycopg.errors.InsufficientPrivilege, match="admin"):
                    conn.execute("SELECT memdb.run_maintenance(NULL, %s, %s)",
                                 (Jsonb({"importance_threshold": 0.06}), dry_run))
                conn.rollback()
                if set_role:
                    conn.execute("SET ROLE memdb_app")
                conn.execute("SELECT set_config('memdb.tenant', 'attacker', false)")
        assert counts(raw) == {"victim": 1, "attacker": 1}
    with psycopg.connect(app_dsn) as conn:
        conn.execute("SELECT set_config('memdb.tenant', 'attacker', false)")
        out = conn.execute("SELECT memdb.run_maintenance('attacker', %s)",
                           (Jsonb({"importance_threshold": 0.06}),)).fetchone()[0]
        assert out["steps"]["forget_importance"] == 1
        # naming another tenant reaches nothing: row-level security
        out = conn.execute("SELECT memdb.run_maintenance('victim', %s)",
                           (Jsonb({"importance_threshold": 0.06}),)).fetchone()[0]
        assert out["steps"]["forget_importance"] == 0
    assert counts(raw) == {"victim": 1}


def _stale_keyword_index(raw, tenant: str, content: str) -> str:
    """A memory whose tsv is what an older analyzer stored (set with triggers off)."""
    (mid,) = raw.execute("SELECT id FROM memdb.add_memories(%s)", (Jsonb([{
        "tenant": tenant, "subject": "s", "content": content}]),)).fetchone()
    raw.execute("SET session_replication_role = replica")
    raw.execute("UPDATE memdb.memories SET tsv = to_tsvector('simple', 'stale') WHERE id = %s",
                (mid,))
    raw.execute("SET session_replication_role = origin")
    return mid


def test_admin_retokenize_api_and_cli(fresh_db, raw, app_dsn):
    """memdb.retokenize from Python and the CLI: stale rows rewritten (one tenant, then every
    tenant), current ones left alone; an application login is refused."""
    stale = {t: _stale_keyword_index(raw, t, c) for t, c in
             (("victim", "I use List<String> in Java"), ("attacker", "李四用 Map<用户> 存数据"))}
    fresh = "SELECT count(*) FROM memdb.memories WHERE tsv = memdb.tokenize(content || ' ')"
    assert raw.execute(fresh).fetchone()[0] == 0
    with pytest.raises(Forbidden):
        MemoryAdmin(app_dsn)
    with MemoryAdmin(fresh_db) as admin:
        assert admin.retokenize(tenant="victim") == 1
        assert admin.retokenize(tenant="victim") == 0
    terms = raw.execute("SELECT tsvector_to_array(tsv) FROM memdb.memories WHERE id = %s",
                        (stale["victim"],)).fetchone()[0]
    assert "string" in terms and "stale" not in terms
    assert ok_json(fresh_db, "admin", "retokenize") == {"tenant": None, "retokenized": 1}
    assert raw.execute(fresh).fetchone()[0] == 2
    assert run(fresh_db, "admin", "retokenize").stdout.strip() == "retokenized 0 memories"
