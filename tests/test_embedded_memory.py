"""The embedded server's shared_buffers: room for its largest database when that fits in a
third of the machine's memory and 8 GB (else 128 MB), or MEMDB_SHARED_BUFFERS, written to
memdb-memory.conf when memdb starts the server (not when it joins a running one), with the
planner's costs of pages in memory (random_page_cost 1.1, effective_cache_size half the
machine); `memdb server status` shows the running size and one a restart would bring. The
server tests run a real server of their own in a temporary MEMDB_HOME."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest
from click.testing import CliRunner

from memdb.cli import cli
from memdb.core import _embedded_memory as memory
from memdb.core.embedded import EmbeddedServer, server_status, stop_server
from memdb.core.errors import InvalidInput

GB = 2**30


MB = 2**20


@pytest.mark.parametrize(("machine", "data", "expected"), [
    (24 * GB, 0, "256MB"),  # a new cluster: 256 MB to grow into
    (24 * GB, 100 * MB, "356MB"),
    (24 * GB, 3 * GB, "3328MB"),
    (24 * GB, 7936 * MB, "8GB"),  # 7.75 GB + 256 MB: at the 8 GB ceiling, and within it
    (24 * GB, 7937 * MB, "128MB"),  # just past the ceiling: PostgreSQL's default
    (16 * GB, 6513 * MB, "128MB"),  # past a third of the machine (5461 MB)
    (64 * GB, 6513 * MB, "6769MB"),
    (256 * MB, 0, "128MB"),  # a third of a small machine is less than the default
])
def test_room_for_the_data_within_a_third_of_the_machine_and_8gb(machine, data, expected):
    assert memory.shared_buffers({}, machine, data) == expected


def test_database_bytes_is_the_largest_database(tmp_path):
    assert memory.database_bytes(tmp_path) == 0  # no base folder yet
    for oid, sizes in (("1", [10, 20]), ("5", [100]), ("7", [])):
        (tmp_path / "base" / oid).mkdir(parents=True)
        for i, size in enumerate(sizes):
            (tmp_path / "base" / oid / f"{i}").write_bytes(b"x" * size)
    assert memory.database_bytes(tmp_path) == 100


@pytest.mark.parametrize(("machine", "cache"), [
    (24 * GB, "12GB"),
    (3 * GB, "1536MB"),
    (200 * MB, "128MB"),  # at least PostgreSQL's smallest useful cache
    (0, "4GB"),  # the machine's memory unknown: PostgreSQL's default
])
def test_planner_costs_are_those_of_pages_in_memory(machine, cache):
    assert memory.planner_settings(machine) == {"random_page_cost": "1.1",
                                                "effective_cache_size": cache}


def test_the_environment_sets_another_size():
    assert memory.shared_buffers({memory.ENV: "512MB"}, 64 * GB) == "512MB"
    assert memory.shared_buffers({memory.ENV: "3GB"}, 4 * GB, 9 * GB) == "3GB"
    assert memory.shared_buffers({memory.ENV: "  "}, 8 * GB, GB) == "1280MB"  # blank: default


@pytest.mark.parametrize("bad", ["1", "64MB", "131071kB", "lots", "2 GB", "0GB", "-1GB",
                                 "1GB'\nfsync = off", "1e3MB", "2gb"])
def test_a_malformed_size_is_refused(bad):
    with pytest.raises(InvalidInput, match="MEMDB_SHARED_BUFFERS"):
        memory.shared_buffers({memory.ENV: bad})


def test_more_than_the_machine_is_refused():
    with pytest.raises(InvalidInput, match="more than this machine's memory"):
        memory.shared_buffers({memory.ENV: "5GB"}, 4 * GB)
    assert memory.requested({memory.ENV: "4GB"}, 4 * GB) == "4GB"
    assert memory.requested({}, 4 * GB) is None


def test_sizes_compare_as_postgresql_prints_them():
    assert memory.size_mb("6GB") == memory.size_mb("6144MB") == 6144
    assert memory.size_mb("131072kB") == 128
    assert memory.size_mb("many") is None


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="memdb-buffers-"))
    os.chmod(path, 0o755)
    monkeypatch.setenv("MEMDB_HOME", str(path))
    for var in ("MEMDB_DSN", "MEMDB_ADMIN_DSN"):
        monkeypatch.delenv(var, raising=False)
    yield path
    pidfile = path / "pg18" / "postmaster.pid"
    if pidfile.exists():  # never leave a server behind, whatever failed
        pid = int(pidfile.read_text().split()[0])
        if psutil.pid_exists(pid):
            psutil.Process(pid).terminate()
    shutil.rmtree(path, ignore_errors=True)


def _show(server: EmbeddedServer) -> str:
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        return conn.execute("SHOW shared_buffers").fetchone()[0]


def test_the_server_runs_with_the_size_and_a_restart_applies_a_new_one(home, monkeypatch):
    monkeypatch.setenv(memory.ENV, "160MB")
    server = EmbeddedServer(home)
    server.start()
    try:
        assert _show(server) == "160MB"
        conf = (home / "pg18" / memory.FILE).read_text()
        assert "shared_buffers = '160MB'" in conf
        planner = memory.planner_settings()
        assert f"effective_cache_size = '{planner['effective_cache_size']}'" in conf
        with psycopg.connect(server.dsn(), autocommit=True) as conn:  # what sessions plan with
            assert conn.execute("SHOW random_page_cost").fetchone()[0] == "1.1"
            assert conn.execute("SELECT setting::bigint * 8192 / 1048576 FROM pg_settings "
                                "WHERE name = 'effective_cache_size'").fetchone()[0] \
                == memory.size_mb(planner["effective_cache_size"])
        assert "include_if_exists = 'memdb-memory.conf'" in (
            home / "pg18" / "postgresql.conf").read_text().splitlines()
        status = server_status(home)
        assert status["shared_buffers"] == "160MB"
        assert status["shared_buffers_restart"] is False

        monkeypatch.setenv(memory.ENV, "192MB")
        status = json.loads(CliRunner().invoke(cli, ["server", "status", "--json"],
                                               catch_exceptions=False).stdout)
        assert (status["shared_buffers"], status["shared_buffers_at_start"],
                status["shared_buffers_restart"]) == ("160MB", "192MB", True)
        text = CliRunner().invoke(cli, ["server", "status"], catch_exceptions=False).stdout
        assert "shared_buffers: 160MB (192MB after `memdb server stop`" in text

        monkeypatch.setenv(memory.ENV, "lots")  # refused before anything is written
        with pytest.raises(InvalidInput, match="MEMDB_SHARED_BUFFERS"):
            EmbeddedServer(home).start()
        assert "shared_buffers = '160MB'" in (home / "pg18" / memory.FILE).read_text()
        assert _show(server) == "160MB"  # the running server is untouched

        monkeypatch.setenv(memory.ENV, "192MB")
        joined = EmbeddedServer(home)
        joined.start()  # joins the running server: its buffers stay until it restarts
        assert _show(joined) == "160MB"
        assert "shared_buffers = '160MB'" in (home / "pg18" / memory.FILE).read_text()
        joined.stop()
    finally:
        server.stop()
    assert stop_server(home, force=True)["reason"] in (None, "not running")
    restarted = EmbeddedServer(home)
    restarted.start()
    try:
        assert _show(restarted) == "192MB"
        assert server_status(home)["shared_buffers_restart"] is False
    finally:
        restarted.stop()
    monkeypatch.delenv(memory.ENV)  # the default: room for the data (a new cluster: ~8 MB)
    pgdata = home / "pg18"
    expected = memory.shared_buffers(data_bytes=memory.database_bytes(pgdata))
    assert 0 < memory.database_bytes(pgdata) < 64 * MB
    assert memory.size_mb(expected) in (128, 256 + -(-memory.database_bytes(pgdata) // MB))
    default = EmbeddedServer(home)
    default.start()
    try:
        assert memory.size_mb(_show(default)) == memory.size_mb(expected)
    finally:
        default.stop()
