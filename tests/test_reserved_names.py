"""Names memdb reserves for itself (memdb.core.validate.RESERVED_NAMES), and tenant-wide traces.

A search over several or all subjects stores its trace with subject '*'. Were '*' a subject
name like any other, a key or store confined to subject '*' would list every tenant-wide query
of its tenant (with the subjects and ids it returned), and erasing subject '*' would delete
them. Proven here:
- '*' is refused, with InvalidInput naming it, as a tenant, subject and agent name at every
  door: MemoryStore and per-call arguments, the tool, MCP's scope, API keys (Python and
  `memdb keys create`), the CLI's --tenant, --as-subject and --subject, HTTP;
  subjects.forget('*') too. Names around it, English and Chinese ('alice', '爱丽丝',
  '*爱丽丝', 'a*b', '**'), are accepted;
- a tenant-wide trace is readable only by a tenant-wide scope: a store confined to a subject
  does not list or get it, and neither does the application login in raw SQL with
  memdb.subject set to '*' (select, delete, forget_subject leave it alone; revision 0019).
"""

from __future__ import annotations

import psycopg
import pytest

from memdb import MemoryAdmin, MemoryStore
from memdb.cli import cli
from memdb.core.errors import InvalidInput, NotFound
from memdb.families.aio import AsyncMemoryStore
from memdb.families.keys import create_key
from memdb.mcp._server import Scope
from tests.app_login import app_login

ACCEPTED = ("alice", "爱丽丝", "*爱丽丝", "a*b", "**", "张三 *")


def _refused(excinfo: pytest.ExceptionInfo, field: str) -> None:
    text = str(excinfo.value)
    assert "'*'" in text and field in text and "reserved" in text, text


@pytest.fixture
def store(fresh_db, embedder):
    with MemoryStore(fresh_db, tenant="acme", embedder=embedder, gate=None) as s:
        yield s


@pytest.mark.parametrize("field", ["tenant", "subject"])
def test_store_refuses_a_reserved_tenant_or_subject(fresh_db, embedder, field):
    with pytest.raises(InvalidInput) as excinfo:
        MemoryStore(fresh_db, embedder=embedder, gate=None, **{"tenant": "acme", field: "*"})
    _refused(excinfo, field)
    with pytest.raises(InvalidInput) as excinfo:  # before it opens a connection
        AsyncMemoryStore(fresh_db, embedder=embedder, **{"tenant": "acme", field: "*"})
    _refused(excinfo, field)


def test_per_call_names_are_refused_and_names_around_them_kept(store):
    with pytest.raises(InvalidInput) as excinfo:
        store.add("星号用户喜欢绿茶 / the star user likes green tea", subject="*")
    _refused(excinfo, "subject")
    with pytest.raises(InvalidInput) as excinfo:
        store.add("the agent is called star / 代理名叫星号", agent="*")
    _refused(excinfo, "agent")
    with pytest.raises(InvalidInput) as excinfo:
        store.list(subject="*")
    _refused(excinfo, "subject")
    with pytest.raises(InvalidInput) as excinfo:
        store.tool(subject="*")
    _refused(excinfo, "subject")
    with pytest.raises(InvalidInput) as excinfo:
        store.subjects.forget("*")
    _refused(excinfo, "subject")
    for n, name in enumerate(ACCEPTED):
        added = store.add(f"第{n}条：{name} 喜欢喝茶 / {name} likes tea number {n}",
                          subject=name, agent=name)
        assert store.get(added.id).subject == name
    assert {m.subject for m in store.list(limit=100)} == set(ACCEPTED)


@pytest.mark.parametrize("field", ["tenant", "subject", "agent"])
def test_mcp_scope_refuses_reserved_names(field):
    values = {"tenant": "acme", field: "*"}
    with pytest.raises(InvalidInput) as excinfo:
        Scope(**values)
    _refused(excinfo, field)
    assert Scope(**{**values, field: "爱丽丝"})


def test_keys_for_a_reserved_subject_or_tenant_cannot_be_created(fresh_db, monkeypatch):
    from click.testing import CliRunner

    with MemoryAdmin(fresh_db) as admin:
        with pytest.raises(InvalidInput) as excinfo:
            create_key(admin, tenant="acme", subject="*")
        _refused(excinfo, "subject")
        with pytest.raises(InvalidInput) as excinfo:
            create_key(admin, tenant="*")
        _refused(excinfo, "tenant")
        assert create_key(admin, tenant="acme", subject="爱丽丝").info.subject == "爱丽丝"
    monkeypatch.setenv("MEMDB_ADMIN_DSN", fresh_db)
    runner = CliRunner()
    made = runner.invoke(cli, ["keys", "create", "--tenant", "acme", "--subject", "*"])
    assert made.exit_code != 0 and "'*'" in made.output and "reserved" in made.output, made.output
    assert not made.output.startswith("mdb_")
    made = runner.invoke(cli, ["keys", "create", "--tenant", "*"])
    assert made.exit_code != 0 and "reserved" in made.output, made.output


def test_cli_refuses_a_reserved_tenant_or_subject(fresh_db, monkeypatch):
    from click.testing import CliRunner

    monkeypatch.setenv("MEMDB_DSN", fresh_db)
    runner = CliRunner()
    for args in (["--tenant", "*", "count"], ["--as-subject", "*", "count"],
                 ["--as-subject", "*", "traces", "list"],
                 ["add", "星号 star", "--subject", "*", "--source-id", "t1"]):
        out = runner.invoke(cli, args)
        assert out.exit_code != 0 and "reserved" in out.output, (args, out.output)
        assert "Traceback" not in out.output


def _tenant_wide_trace(store: MemoryStore) -> str:
    store.add_many([{"content": "爱丽丝喜欢绿茶 Alice likes green tea", "subject": "alice"},
                    {"content": "鲍勃喜欢咖啡 Bob likes coffee", "subject": "bob"}])
    found = store.recall("谁喜欢喝什么 who likes which drink", k=4)
    trace = store.traces.get(found.trace_id)
    assert trace["subject"] == "*" and set(trace["result_subjects"]) == {"alice", "bob"}
    return str(found.trace_id)


def test_a_subject_scoped_store_never_sees_tenant_wide_traces(fresh_db, embedder, store):
    wide = _tenant_wide_trace(store)
    with MemoryStore(fresh_db, tenant="acme", subject="alice", embedder=embedder,
                     gate=None) as alice:
        own = str(alice.recall("爱丽丝喜欢什么 what does alice like", k=2).trace_id)
        assert [str(t["id"]) for t in alice.traces.list()] == [own]
        with pytest.raises(NotFound):
            alice.traces.get(wide)
        assert alice.subjects.forget("alice").counts["retrieval_traces"] >= 1
    assert wide in {str(t["id"]) for t in store.traces.list()}  # out of alice's reach


def test_app_login_with_subject_star_reaches_no_tenant_wide_trace(fresh_db, store):
    wide = _tenant_wide_trace(store)
    with app_login(fresh_db) as dsn, psycopg.connect(dsn) as conn:
        with conn.transaction():
            conn.execute("SELECT set_config('memdb.tenant', 'acme', true),"
                         " set_config('memdb.subject', '*', true)")
            seen = conn.execute("SELECT count(*) FROM memdb.retrieval_traces").fetchone()[0]
            deleted = conn.execute("DELETE FROM memdb.retrieval_traces").rowcount
            erased = conn.execute("SELECT memdb.forget_subject('acme', '*')").fetchone()[0]
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                with conn.transaction():
                    conn.execute(
                        "INSERT INTO memdb.retrieval_traces (tenant, subject, query, intent,"
                        " plan_source, status, k, latency_ms) VALUES"
                        " ('acme', '*', '伪造 forged', 'lookup', 'given', 'ok', 1, 1)")
        # as a tenant-wide login, the same role reaches them
        with conn.transaction():
            conn.execute("SELECT set_config('memdb.tenant', 'acme', true)")
            wide_seen = conn.execute("SELECT count(*) FROM memdb.retrieval_traces"
                                     " WHERE subject = '*'").fetchone()[0]
    assert (seen, deleted) == (0, 0)
    assert erased["retrieval_traces"] == 0 and erased["memories"] == 0
    assert wide_seen == 1
    assert str(store.traces.get(wide)["id"]) == wide


def test_http_refuses_a_reserved_subject(fresh_db, embedder):
    pytest.importorskip("fastapi")
    from tests.http_server import make_keys, served_door

    keys = make_keys(fresh_db, embedder)
    with served_door(fresh_db, embedder) as door, \
            door.client(keys["acme"]) as c:
        r = c.post("/v1/memories", json={"content": "星号 star user", "subject": "*"})
        assert r.status_code == 400 and "reserved" in r.text, r.text
        r = c.get("/v1/memories", params={"subject": "*"})
        assert r.status_code == 400 and "reserved" in r.text, r.text
        r = c.post("/v1/memories", json={"content": "爱丽丝喜欢茶 Alice likes tea",
                                         "subject": "爱丽丝", "source_id": "t1"})
        assert r.status_code == 201, r.text
