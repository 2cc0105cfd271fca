"""Shared fixtures: a real PostgreSQL with pgvector for every test.

The server is the embedded one, in a temporary MEMDB_HOME (never the user's data), unless
MEMDB_TEST_DSN names a server where databases may be created. The schema is migrated once
into a template database; each test gets its own fresh copy of it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memdb import LocalEmbedder, MemoryStore
from memdb.core.embedded import EmbeddedServer
from memdb.core.migrations import upgrade
from tests.db_copies import TemplateCopies, create_database, drop_database

# The memdb commands tests run in subprocesses do not leave a shell daemon behind (it would
# keep their temporary homes' servers up); tests/test_shell.py turns it on where it tests it.
os.environ.setdefault("MEMDB_KEEP_ALIVE", "0")

TEMPLATE = "memdb_test_template"

# The core-behaviour modules run every test on both drivers (see tests/drivers.py): add, dedup,
# supersede, search, recall, isolation, sessions, lifecycle.
BOTH_DRIVERS = frozenset({
    "test_store", "test_versions", "test_gate", "test_search", "test_search_edges",
    "test_recall", "test_isolation", "test_sessions", "test_lifecycle", "test_remember",
    "test_embedding_faults", "test_llm_untrusted", "test_search_overlap",
})
# The core-behaviour modules also run against a real Citus cluster, a coordinator and two
# workers built from the vendored source (tests/citus_build.py, tests/citus_cluster.py), with
# memdb distributed by tenant: their database fixtures (fresh_db, module_db, and the store
# fixtures on them) are parametrized with backend "local" | "citus", and the cluster's tests
# are marked `citus` (`-m citus` selects them). On the cluster the sync driver runs them all,
# the async driver those of CITUS_BOTH_DRIVERS. Without Citus (no tarball, failed build) the
# cluster's tests skip, naming the reason and the build log.
CITUS_MODULES = frozenset({
    "test_store", "test_versions", "test_search", "test_recall", "test_isolation",
    "test_sessions", "test_lifecycle", "test_erasure", "test_ingest", "test_search_neighbors",
    "test_search_prf", "test_round_trips", "test_search_speaker", "test_decompose_llm",
    "test_search_temporal", "test_search_session_prior", "test_search_ties",
    "test_search_speaker_neighbors", "test_search_overlap",
})
CITUS_BOTH_DRIVERS = frozenset({"test_isolation", "test_store", "test_round_trips"})
_counter = itertools.count()


def _with_db(dsn: str, dbname: str) -> str:
    params = conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return make_conninfo(**params)


@pytest.fixture(scope="session")
def server_dsn() -> Iterator[str]:
    """DSN of the maintenance database ('postgres') of the test server."""
    env = os.environ.get("MEMDB_TEST_DSN")
    if env:
        yield _with_db(env, "postgres")
        return
    home = tempfile.mkdtemp(prefix="memdb-test-")
    os.chmod(home, 0o755)
    server = EmbeddedServer(home)
    server.start()
    # A throwaway server: no fsync (as the Citus test cluster), so commits and the copies of
    # the template do not wait for the disk. A killed backend or postmaster loses nothing
    # either way; only a machine crash would, and the folder goes with the run.
    with psycopg.connect(server.dsn("postgres"), autocommit=True) as conn:
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(f"ALTER SYSTEM SET {setting} = off")
        conn.execute("SELECT pg_reload_conf()")
    yield server.dsn("postgres")
    server.stop()


@pytest.fixture(scope="session")
def template_dsn(server_dsn: str) -> str:
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {TEMPLATE} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {TEMPLATE}")
    dsn = _with_db(server_dsn, TEMPLATE)
    upgrade(dsn)
    return dsn


@pytest.fixture(scope="session")
def template_copies(server_dsn: str, template_dsn: str) -> Iterator[TemplateCopies]:
    """Fresh copies of the template, made ahead by a thread (tests/db_copies.py)."""
    copies = TemplateCopies(server_dsn, TEMPLATE, "memdb_t")
    yield copies
    copies.close()


@contextlib.contextmanager
def template_copy(server_dsn: str, prefix: str) -> Iterator[str]:
    """A new database copied from the migrated template; dropped on exit."""
    name = f"{prefix}{os.getpid()}_{next(_counter)}"
    create_database(server_dsn, name, TEMPLATE)
    try:
        yield _with_db(server_dsn, name)
    finally:
        drop_database(server_dsn, name)


@pytest.fixture(scope="session")
def citus_cluster():
    """A Citus coordinator and two workers on loopback with memdb migrated, for the whole
    run (tests/citus_cluster.py documents its API: add_worker, stop_node, start_node...)."""
    from tests.citus_build import CitusUnavailable
    from tests.citus_cluster import migrated_cluster

    try:
        with migrated_cluster() as cluster:
            yield cluster
    except CitusUnavailable as exc:
        pytest.skip(f"no Citus cluster: {exc}")


@pytest.fixture(scope="module")
def backend(request: pytest.FixtureRequest) -> str:
    """Where this module's databases live: "local" (the embedded server, or MEMDB_TEST_DSN)
    or "citus" (the cluster's coordinator; see CITUS_MODULES)."""
    return getattr(request, "param", "local")


def _citus_db(request: pytest.FixtureRequest) -> str:
    """The cluster's migrated database, emptied: the cluster's fresh database."""
    from tests.citus_cluster import reset

    dsn = request.getfixturevalue("citus_cluster").dsn()
    reset(dsn)
    return dsn


@pytest.fixture
def fresh_db(request: pytest.FixtureRequest, backend: str) -> Iterator[str]:
    """A new, migrated database for this test only; dropped afterwards (on the Citus
    cluster: its one database, emptied first)."""
    if backend == "citus":
        yield _citus_db(request)
        return
    copies = request.getfixturevalue("template_copies")
    name = copies.take()
    yield _with_db(request.getfixturevalue("server_dsn"), name)
    copies.give_back(name)


@pytest.fixture(scope="module")
def module_db(request: pytest.FixtureRequest, backend: str) -> Iterator[str]:
    """A migrated database shared by one test module (for read-only or self-scoping tests,
    where creating a database per test would cost more than the test)."""
    if backend == "citus":
        yield _citus_db(request)
        return
    copies = request.getfixturevalue("template_copies")
    name = copies.take()
    yield _with_db(request.getfixturevalue("server_dsn"), name)
    copies.give_back(name)


@pytest.fixture
def empty_db(server_dsn: str) -> Iterator[str]:
    """A new database with no memdb schema at all (for migration tests)."""
    name = f"memdb_e{os.getpid()}_{next(_counter)}"
    create_database(server_dsn, name)
    yield _with_db(server_dsn, name)
    drop_database(server_dsn, name)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    module = metafunc.module.__name__.rpartition(".")[2]
    if module in BOTH_DRIVERS:
        metafunc.parametrize("driver", ["sync", "async"], indirect=True)
    if module in CITUS_MODULES and "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", ["local", "citus"], indirect=True, scope="module")


def pytest_configure(config: pytest.Config) -> None:
    # The evaluations' vector cache (memdb eval ... is on by default in the CLI) goes to a
    # directory of this run, never the user's ~/.cache/memdb/eval-vectors.
    cache = tempfile.mkdtemp(prefix="memdb-test-eval-cache-")
    os.environ["MEMDB_EVAL_CACHE"] = cache
    config.add_cleanup(lambda: shutil.rmtree(cache, ignore_errors=True))
    config.addinivalue_line("markers", "citus: runs against the Citus cluster (CITUS_MODULES)")
    config.addinivalue_line("markers", "local_only(reason): a test of a CITUS_MODULES module "
                            "that does not run on the cluster, and why")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the cluster's tests `citus`; on the cluster, the async driver runs only the
    modules of CITUS_BOTH_DRIVERS."""
    dropped = []
    for item in list(items):
        params = getattr(item, "callspec", None)
        params = params.params if params else {}
        if params.get("backend") != "citus":
            continue
        module = item.module.__name__.rpartition(".")[2]
        if params.get("driver") == "async" and module not in CITUS_BOTH_DRIVERS:
            dropped.append(item)
            continue
        item.add_marker(pytest.mark.citus)
        local_only = item.get_closest_marker("local_only")
        if local_only:
            item.add_marker(pytest.mark.skip(reason=f"not on Citus: {local_only.args[0]}"))
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]


@pytest.fixture(autouse=True)
def driver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which driver this test's stores use: "async" swaps ``MemoryStore`` in the test module
    for tests.drivers.OnAsyncDriver (a real AsyncMemoryStore driven from the test)."""
    name = getattr(request, "param", "sync")
    if name == "async" and hasattr(request.module, "MemoryStore"):
        monkeypatch.setattr(request.module, "MemoryStore", _store_class("async"))
    return name


def _store_class(driver: str) -> type:
    if driver == "async":
        from tests.drivers import OnAsyncDriver

        return OnAsyncDriver
    return MemoryStore


@pytest.fixture(scope="session")
def embedder() -> LocalEmbedder:
    """The real bundled model, loaded once for the whole run."""
    return LocalEmbedder()


@pytest.fixture
def store(fresh_db: str, embedder: LocalEmbedder, driver: str) -> Iterator[MemoryStore]:
    """A store with no write gate (``gate=None``): the storage, dedup and retrieval tests
    write short, sourceless test strings on purpose. The gate, near-duplicate merging and
    TTL defaults are tested through ``gated_store`` (tests/test_gate.py, test_versions.py)."""
    with _store_class(driver)(fresh_db, embedder=embedder, gate=None) as s:
        yield s


@pytest.fixture
def gated_store(fresh_db: str, embedder: LocalEmbedder, driver: str) -> Iterator[MemoryStore]:
    """A store with the default write gate (memdb.DEFAULT_POLICY), as users get it."""
    with _store_class(driver)(fresh_db, embedder=embedder) as s:
        yield s


@pytest.fixture
def raw(fresh_db: str) -> Iterator[psycopg.Connection]:
    """A plain autocommit connection to the test's database, for SQL-level checks."""
    from pgvector.psycopg import register_vector

    with psycopg.connect(fresh_db, autocommit=True) as conn:
        register_vector(conn)
        yield conn


@pytest.fixture(scope="session")
def local_llm():
    """llama.cpp's server with a small GGUF model on loopback, for the whole run: .base_url,
    .model, .api_key, .env() (tests/local_llm.py documents it). Skips with the reason when the
    server is not built (`python -m tests.local_llm prepare`) or the model cannot be installed
    (fails instead with MEMDB_REQUIRE_LOCAL_LLM=1)."""
    from tests.local_llm import LocalLLMUnavailable, running_server

    try:
        with running_server(build=False) as server:
            yield server
    except LocalLLMUnavailable as exc:
        if os.environ.get("MEMDB_REQUIRE_LOCAL_LLM") == "1":
            raise
        pytest.skip(f"no local LLM server: {exc}")
