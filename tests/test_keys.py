"""API keys of the HTTP door (memdb.families.keys, revision 0012, memdb.api_key_lookup): stored
hashed,
shown once, bound to a tenant (and subject) or admin, revoked at once, and unreadable by the
application login, which can only ask whether a key it holds is live."""

from __future__ import annotations

import hashlib

import psycopg
import pytest

from memdb import MemoryAdmin
from memdb.cli import cli
from memdb.core.connection import Database
from memdb.core.errors import Forbidden, InvalidInput, NotFound
from memdb.families.keys import create_key, hash_key, list_keys, lookup, parse_key, revoke_key
from tests.app_login import app_login


@pytest.fixture
def admin(fresh_db):
    with MemoryAdmin(fresh_db) as a:
        yield a


@pytest.fixture
def app_dsn(fresh_db):
    with app_login(fresh_db) as dsn:
        yield dsn


def test_key_is_stored_hashed_and_shown_once(admin, fresh_db):
    created = create_key(admin, tenant="acme", subject="alice", name="laptop 笔记本")
    assert parse_key(created.key) == created.info.key_id
    assert created.key.startswith(created.info.prefix)
    assert "***" in repr(created) and created.key not in repr(created)
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        rows = conn.execute("SELECT key_id, secret_sha256, tenant, key_subject, name"
                            " FROM memdb.api_keys").fetchall()
    assert rows == [(created.info.key_id, hashlib.sha256(created.key.encode()).digest(),
                     "acme", "alice", "laptop 笔记本")]
    listed = list_keys(admin)
    assert [k.key_id for k in listed] == [created.info.key_id]
    assert created.key not in str(listed) and created.key not in str(listed[0].to_dict())


def test_lookup_binds_tenant_subject_and_admin(admin, app_dsn):
    alice = create_key(admin, tenant="acme", subject="alice")
    team = create_key(admin, tenant="globex")
    root = create_key(admin, is_admin=True, name="ops")
    db = Database(app_dsn)
    try:
        a = lookup(db, alice.key)
        assert (a.tenant, a.subject, a.is_admin) == ("acme", "alice", False)
        t = lookup(db, team.key)
        assert (t.tenant, t.subject, t.is_admin) == ("globex", None, False)
        r = lookup(db, root.key)
        assert (r.tenant, r.is_admin, r.name) == (None, True, "ops")
        # malformed, unknown, a known id with a wrong secret: all None
        assert lookup(db, "") is None and lookup(db, None) is None
        assert lookup(db, "mdb_" + "x" * 12 + "_" + "y" * 43) is None
        assert lookup(db, alice.key[:-1] + ("A" if alice.key[-1] != "A" else "B")) is None
        revoke_key(admin, alice.info.prefix)
        assert lookup(db, alice.key) is None
        assert lookup(db, team.key) is not None
    finally:
        db.close()


def test_app_login_cannot_read_or_write_keys(admin, app_dsn):
    create_key(admin, tenant="acme")
    with psycopg.connect(app_dsn, autocommit=True) as conn:
        for statement in ("SELECT * FROM memdb.api_keys",
                          "SELECT secret_sha256 FROM memdb.api_keys",
                          "UPDATE memdb.api_keys SET revoked_at = NULL",
                          "INSERT INTO memdb.api_keys (key_id, secret_sha256, tenant)"
                          " VALUES ('abcdefgh1234', '\\x00', 'acme')"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
        # as memdb_app with the tenant set (what a store does), still nothing
        conn.execute("SET ROLE memdb_app")
        conn.execute("SELECT set_config('memdb.tenant', 'acme', false)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT count(*) FROM memdb.api_keys")
        # the lookup answers with bindings only: its result has no hash column
        cols = [c.name for c in conn.execute(
            "SELECT * FROM memdb.api_key_lookup(%s)", (b"\x00" * 32,)).description]
        assert cols == ["id", "key_id", "tenant", "subject", "is_admin", "name"]
    with pytest.raises(Forbidden):
        create_key(app_dsn, tenant="acme")
    with pytest.raises(Forbidden):
        list_keys(app_dsn)


def test_revoke_by_id_prefix_or_key_and_errors(admin):
    a = create_key(admin, tenant="acme")
    b = create_key(admin, tenant="acme")
    c = create_key(admin, tenant="acme")
    assert revoke_key(admin, a.info.key_id).revoked_at is not None
    assert revoke_key(admin, str(b.info.id)).key_id == b.info.key_id
    first = revoke_key(admin, c.key)  # the whole key works too
    again = revoke_key(admin, c.info.prefix)
    assert again.revoked_at == first.revoked_at  # the first revocation time is kept
    assert [k.revoked_at is not None for k in list_keys(admin)] == [True, True, True]
    assert list_keys(admin, include_revoked=False) == []
    with pytest.raises(NotFound):
        revoke_key(admin, "nosuchkey123")
    with pytest.raises(InvalidInput):
        revoke_key(admin, "")
    with pytest.raises(InvalidInput):
        create_key(admin, tenant="acme", is_admin=True)
    with pytest.raises(InvalidInput):
        create_key(admin, tenant="")
    assert len(hash_key("x")) == 32


def test_cli_keys_create_list_revoke(fresh_db, monkeypatch):
    from click.testing import CliRunner

    monkeypatch.setenv("MEMDB_ADMIN_DSN", fresh_db)
    runner = CliRunner()
    made = runner.invoke(cli, ["keys", "create", "--tenant", "acme", "--subject", "alice",
                               "--name", "bot"])
    assert made.exit_code == 0, made.output
    key = made.output.strip().splitlines()[0]
    key_id = parse_key(key)
    assert key_id
    listed = runner.invoke(cli, ["keys", "list", "--json"])
    assert listed.exit_code == 0 and key_id in listed.output and key not in listed.output
    assert key.split("_", 2)[2] not in listed.output
    revoked = runner.invoke(cli, ["keys", "revoke", key_id])
    assert revoked.exit_code == 0, revoked.output
    assert key not in revoked.output
    gone = runner.invoke(cli, ["keys", "revoke", "nosuchkey999"])
    assert gone.exit_code == 1 and "no API key" in gone.output


def test_a_subjects_export_and_erasure_leave_keys_alone(admin, app_dsn, fresh_db, embedder,
                                                         tmp_path):
    """memdb.subject_tables() finds tables by their tenant and subject columns: the keys' column
    is key_subject, so exporting or erasing a subject as the application login neither needs
    the keys table (which it may not read) nor copies a hash into the export."""
    from memdb import MemoryStore

    with MemoryStore(fresh_db, tenant="setup", embedder=embedder, gate=None) as setup:
        setup.add("registers the embedding space")
    made = create_key(admin, tenant="acme", subject="alice")
    with MemoryStore(app_dsn, tenant="acme", embedder=embedder, gate=None) as store:
        store.add("Alice likes quiet trains", subject="alice")
        counts = store.subjects.export("alice", tmp_path / "alice.json")
        assert "api_keys" not in counts
        exported = (tmp_path / "alice.json").read_text(encoding="utf-8")
        assert made.info.key_id not in exported
        store.subjects.forget("alice")
    assert [k.key_id for k in list_keys(admin)] == [made.info.key_id]
