"""Read replicas: reads on a real streaming standby, writes on the primary, read-your-writes,
a lagging or dead standby, row-level security on the standby (tests/replica.py makes the pair:
an embedded primary and a pg_basebackup copy of it).

Lag is the tests' choice: with replay paused (``pg_wal_replay_pause()``) the standby receives
the primary's WAL but applies none of it, so a memory written meanwhile is on the primary only.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

import memdb.core.replica
from memdb import (
    AsyncMemoryStore,
    InvalidInput,
    MemoryStore,
    NotFound,
    ReplicaLagging,
    ReplicaUnavailable,
)
from memdb.core.replica import ReplicaFallback
from tests.cli_helpers import run as cli_run
from tests.drivers import run
from tests.replica import ReplicaPair, replica_pair

both_drivers = pytest.mark.parametrize("driver", ["sync", "async"], indirect=True)
_tenants = iter(range(1_000_000))


@pytest.fixture(scope="module")
def pair(embedder: Any) -> Iterator[ReplicaPair]:
    with replica_pair() as made:
        with MemoryStore(made.admin_dsn, embedder=embedder) as admin:
            admin.space_id()  # the admin registers the embedder's space
        yield made


@pytest.fixture
def tenant() -> str:
    return f"t{next(_tenants)}"


@pytest.fixture(autouse=True)
def _replaying(pair: ReplicaPair) -> Iterator[None]:
    """Every test starts and ends with the standby up and replaying."""
    yield
    try:
        pair.resume_replay()
    except psycopg.OperationalError:  # a test stopped it
        pair.start_standby()
    pair.wait_replayed()


def _store(pair: ReplicaPair, embedder: Any, tenant: str, **kwargs: Any) -> MemoryStore:
    kwargs.setdefault("read_dsn", pair.standby_app_dsn)
    return MemoryStore(pair.app_dsn, tenant=tenant, embedder=embedder, gate=None, **kwargs)


def _in_recovery(conn: Any) -> bool:
    return conn.execute("SELECT pg_is_in_recovery() AS r").fetchone()["r"]


def test_reads_run_on_the_standby_and_writes_on_the_primary(pair, embedder, tenant):
    with _store(pair, embedder, tenant) as store:
        with store.core.read() as conn:
            assert _in_recovery(conn)
            assert conn.execute("SELECT current_user AS u").fetchone()["u"] == "memdb_app"
        with store.core.transaction() as conn:
            assert not _in_recovery(conn)
        with store.consistency("primary"), store.core.read() as conn:
            assert not _in_recovery(conn)
    with _store(pair, embedder, tenant, read_dsn="") as store:  # none: the primary
        with store.core.read() as conn:
            assert not _in_recovery(conn)


@both_drivers
def test_a_replica_read_can_be_stale_read_your_writes_never_is(pair, embedder, tenant):
    with _store(pair, embedder, tenant, consistency="replica") as plain, \
            _store(pair, embedder, tenant, read_timeout=0.3) as ryw:
        pair.pause_replay()
        made = plain.add("Alice drinks oolong tea", subject="alice")
        assert plain.list(subject="alice") == []  # the standby has not replayed it
        with pytest.raises(NotFound):
            plain.get(made.id)
        assert plain.search("oolong", k=3) == []
        # read-your-writes: the standby cannot catch up (paused), so the primary answers
        mine = ryw.add("Bob drinks espresso", subject="bob")
        with pytest.warns(ReplicaFallback, match="did not replay"):
            assert ryw.get(mine.id).content == "Bob drinks espresso"
        assert ryw.replica.stats["fallback"] == 1
        assert plain.replica.stats["fallback"] == 0
        pair.resume_replay()
        pair.wait_replayed()
        assert plain.get(made.id).content == "Alice drinks oolong tea"
        before = ryw.replica.stats["replica"]
        with warnings.catch_warnings():
            warnings.simplefilter("error", ReplicaFallback)
            assert [h.memory.id for h in ryw.search("espresso", k=1)] == [mine.id]
        assert ryw.replica.stats["replica"] == before + 1


@both_drivers
def test_read_your_writes_sees_every_write_at_once(pair, embedder, tenant):
    """Each write is read back at once from the standby (waiting for its replay when
    needed); never from the primary, never missing."""
    with _store(pair, embedder, tenant, read_timeout=5, read_fallback=False) as store:
        for n in range(15):
            made = store.add(f"fact number {n}: the meeting moved to room {n}",
                             subject="carol")
            assert store.get(made.id).id == made.id
            assert made.id in {m.id for m in store.list(subject="carol", limit=100)}
        stats = store.replica.stats
        assert stats["replica"] == 30 and stats["primary"] == 0 and stats["fallback"] == 0


@both_drivers
def test_lag_past_the_timeout_raises_without_fallback(pair, embedder, tenant):
    with _store(pair, embedder, tenant, read_timeout=0.25, read_fallback=False) as store:
        pair.pause_replay()
        made = store.add("Dana is allergic to peanuts", subject="dana")
        started = time.monotonic()
        with pytest.raises(ReplicaLagging, match="within 0.25 s"):
            store.get(made.id)
        assert 0.25 <= time.monotonic() - started < 3
        pair.resume_replay()
        assert store.get(made.id).content == "Dana is allergic to peanuts"  # nothing lost


def test_consistency_for_a_block(pair, embedder, tenant):
    with _store(pair, embedder, tenant, consistency="replica") as store:
        pair.pause_replay()
        made = store.add("Erin works on Tuesdays", subject="erin")
        with store.consistency("primary"):
            assert store.get(made.id).content == "Erin works on Tuesdays"
            assert store.count() == 1
        with pytest.raises(NotFound):
            store.get(made.id)
        with store.consistency("read_your_writes", timeout=0.1), \
                pytest.warns(ReplicaFallback):
            assert store.get(made.id).id == made.id
        with pytest.raises(InvalidInput, match="consistency"):
            store.consistency("eventual")


def test_consistency_for_a_block_on_asyncio(pair, embedder, tenant):
    async def scenario() -> None:
        async with AsyncMemoryStore(pair.app_dsn, read_dsn=pair.standby_app_dsn,
                                    tenant=tenant, embedder=embedder, gate=None,
                                    consistency="replica") as store:
            pair.pause_replay()
            made = await store.add("Frank prefers window seats", subject="frank")
            with pytest.raises(NotFound):
                await store.get(made.id)
            with store.consistency("primary"):
                assert (await store.get(made.id)).id == made.id
            with store.consistency("read_your_writes", timeout=0.1), \
                    pytest.warns(ReplicaFallback):
                assert (await store.get(made.id)).id == made.id

    run(scenario())


def test_writes_read_the_primary(pair, embedder, tenant):
    """update and delete check the memory where they change it, whatever the consistency."""
    with _store(pair, embedder, tenant, consistency="replica", read_fallback=False) as store:
        pair.pause_replay()
        made = store.add("Gina lives in Lyon", subject="gina")
        updated = store.update(made.id, content="Gina lives in Paris")  # reads it back too
        assert updated.content == "Gina lives in Paris" and updated.version == 2
        store.delete(made.id)
        session = store.sessions.set_state("s1", {"goal": "book a flight"},
                                           expected_version=0, subject="gina")
        changed = store.sessions.update_state("s1", subject="gina", notes={"seat": "aisle"})
        assert changed.version == session.version + 1


@both_drivers
def test_row_level_security_holds_on_the_standby(pair, embedder, tenant):
    other = f"{tenant}x"
    with _store(pair, embedder, tenant, read_fallback=False) as mine, \
            _store(pair, embedder, other, read_fallback=False) as theirs, \
            _store(pair, embedder, tenant, subject="hana", read_fallback=False) as hana:
        secret = theirs.add("The vault code is 4711", subject="ivan")
        own = mine.add("Hana likes jasmine tea", subject="hana")
        mine.add("Ivo likes green tea", subject="ivo")
        pair.wait_replayed()
        for store in (mine, hana):
            with store.consistency("replica"):
                assert secret.id not in [h.memory.id for h in store.search("vault code", k=10)]
                with pytest.raises(NotFound):
                    store.get(secret.id)
        with mine.consistency("replica"):
            assert {m.subject for m in mine.list()} == {"hana", "ivo"}
        with hana.consistency("replica"):
            assert [m.id for m in hana.list()] == [own.id]  # subject isolation too
            assert hana.count() == 1
        with theirs.consistency("replica"):
            assert [m.id for m in theirs.list()] == [secret.id]
        for store in (mine, hana, theirs):
            assert store.replica.stats["replica"] > 0 and store.replica.stats["fallback"] == 0


@both_drivers
def test_core_operations_on_the_standby(pair, embedder, tenant):
    """Every routed read runs on the standby without writing there (a write would fail:
    the standby is read-only), and with read_fallback=False nothing may fall back."""
    with _store(pair, embedder, tenant, read_fallback=False) as store:
        made = store.add("Jo prefers trains to planes", subject="jo", category="preferences")
        store.add("记住：乔对花生过敏", subject="jo")
        store.sessions.append("trip", "user", "I want to go to Berlin", subject="jo")
        assert store.get(made.id).content == "Jo prefers trains to planes"
        assert store.get(made.id).uri == store.get(store.get(made.id).uri).uri
        assert made.id in [m.id for m in store.list(subject="jo")]
        assert store.search("trains", k=2)[0].memory.id == made.id
        assert "花生" in store.search("花生过敏", k=1)[0].memory.content
        recalled = store.recall("how does Jo travel?", k=2)
        assert recalled.trace_id is not None and recalled[0].memory.id == made.id
        assert store.traces.get(recalled.trace_id) is not None  # written on the primary
        assert [e.op for e in store.history(made.id)] == ["insert"]
        assert store.count() == 2
        assert store.profile("jo")["preferences"]
        context = store.context("how does Jo travel?", "trip", subject="jo")
        assert str(made.id) in context.memory_ids
        assert store.sessions.get("trip", subject="jo").messages[0].content.endswith("Berlin")
        assert [s["session_id"] for s in store.sessions.list(subject="jo")] == ["trip"]
        assert store.sessions.get_state("trip", subject="jo").version == 0
        assert store.documents.search("trains") == []
        assert store.meta.read("helper")["counts"] is not None
        stats = store.replica.stats
        assert stats["fallback"] == 0 and stats["primary"] == 0 and stats["replica"] >= 14


@both_drivers
def test_a_dead_standby_never_breaks_writes(pair, embedder, tenant, monkeypatch):
    monkeypatch.setattr(memdb.core.replica, "RETRY_AFTER", 0.5)
    pair.stop_standby()
    with _store(pair, embedder, tenant) as store, \
            _store(pair, embedder, tenant, read_fallback=False) as strict:
        made = store.add("Kai moved to Oslo", subject="kai")  # made with the standby down
        with pytest.warns(ReplicaFallback, match="unavailable"):
            assert store.get(made.id).content == "Kai moved to Oslo"
        started = time.monotonic()
        with pytest.raises(ReplicaUnavailable):
            strict.list()
        assert time.monotonic() - started < 5
        strict.add("Kai's cat is called Miso", subject="kai")  # writes still work
        with pytest.warns(ReplicaFallback):  # within RETRY_AFTER: straight to the primary
            assert store.count() == 2
        pair.start_standby()
        time.sleep(0.6)
        pair.wait_replayed()
        with warnings.catch_warnings():
            warnings.simplefilter("error", ReplicaFallback)
            assert store.count() == 2 and strict.count() == 2
        assert store.replica.stats["replica"] >= 1


def test_a_standby_lost_mid_life_is_typed_and_recovered(pair, embedder, tenant, monkeypatch):
    monkeypatch.setattr(memdb.core.replica, "RETRY_AFTER", 0.5)
    with _store(pair, embedder, tenant, read_fallback=False) as store:
        store.add("Lena runs on Sundays", subject="lena")
        assert store.count() == 1  # the standby pool is open
        pair.stop_standby()
        started = time.monotonic()
        with pytest.raises(ReplicaUnavailable):
            store.count()
        assert time.monotonic() - started < 10
        pair.start_standby()
        time.sleep(0.6)
        assert store.count() == 1


def test_bad_replica_options_are_refused(pair, embedder, tenant):
    with pytest.raises(InvalidInput, match="consistency"):
        _store(pair, embedder, tenant, consistency="eventually")
    with pytest.raises(InvalidInput, match="read timeout"):
        _store(pair, embedder, tenant, read_timeout=-1)
    with pytest.raises(InvalidInput, match="read_fallback"):
        _store(pair, embedder, tenant, read_fallback="yes")


def test_environment_and_cli_name_the_standby(pair, embedder, tenant, monkeypatch):
    monkeypatch.setenv("MEMDB_READ_DSN", pair.standby_app_dsn)
    monkeypatch.setenv("MEMDB_READ_CONSISTENCY", "replica")
    with MemoryStore(pair.app_dsn, tenant=tenant, embedder=embedder, gate=None) as store:
        assert store.replica is not None and store.replica.consistency == "replica"
        with store.core.read() as conn:
            assert _in_recovery(conn)
    monkeypatch.delenv("MEMDB_READ_DSN")
    pair.pause_replay()
    out = cli_run(pair.app_dsn, "--tenant", tenant, "add", "--no-gate", "Mia reads sci-fi",
                  "--json")
    assert out.exit_code == 0, out.output
    listed = cli_run(pair.app_dsn, "--read-dsn", pair.standby_app_dsn, "--tenant", tenant,
                     "list", "--json")
    assert listed.exit_code == 0 and "Mia" not in listed.stdout  # read on the paused standby
    listed = cli_run(pair.app_dsn, "--tenant", tenant, "list", "--json")
    assert "Mia reads sci-fi" in listed.stdout


def test_read_your_writes_waits_for_its_commit_not_for_unflushed_wal(pair, embedder, tenant):
    """The position a read waits for is where the store's write committed, not the end of
    WAL the primary has not flushed yet: such WAL (a checksum's full-page image after hint
    bits are set, a non-transactional message) reaches the standby only when the WAL writer
    flushes it, which an idle primary's writer does after up to 25 x wal_writer_delay. Here
    the writer waits 10 s and a non-transactional message follows each write: every read is
    answered from the standby at once."""
    with psycopg.connect(pair.admin_dsn, autocommit=True) as admin:
        admin.execute("ALTER SYSTEM SET wal_writer_delay = '10s'")
        admin.execute("SELECT pg_reload_conf()")
        try:
            with _store(pair, embedder, tenant, read_timeout=3, read_fallback=False) as store:
                for n in range(3):
                    made = store.add(f"Frank's locker is number {n} / 弗兰克的柜子是{n}号",
                                     subject="frank")
                    admin.execute("SELECT pg_logical_emit_message(false, 'memdb-test', 'x')")
                    started = time.monotonic()
                    assert store.get(made.id).id == made.id
                    assert time.monotonic() - started < 2
                assert store.replica.stats["primary"] == 0
                assert store.replica.stats["fallback"] == 0
        finally:
            admin.execute("ALTER SYSTEM RESET wal_writer_delay")
            admin.execute("SELECT pg_reload_conf()")
