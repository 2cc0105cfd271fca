"""The embedded server's lifecycle with real processes (issue 14, item 9): a process that is
sent SIGTERM never deregisters itself, yet the last live process still stops the server;
`memdb server status` / `memdb server stop` show and stop a server nobody uses. Each test has
its own temporary MEMDB_HOME."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from memdb.cli import cli

HOLDER = """
import sys
from memdb import MemoryStore
store = MemoryStore()
print("ready", flush=True)
sys.stdin.read()  # until the parent closes stdin
store.close()
"""
OPEN_AND_CLOSE = "from memdb import MemoryStore; MemoryStore().close()"


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="memdb-life-"))
    os.chmod(path, 0o755)
    monkeypatch.setenv("MEMDB_HOME", str(path))
    for var in ("MEMDB_DSN", "MEMDB_ADMIN_DSN"):
        monkeypatch.delenv(var, raising=False)
    yield path
    pid = postmaster(path)
    if pid and psutil.pid_exists(pid):  # never leave a server behind, whatever failed
        psutil.Process(pid).terminate()
    shutil.rmtree(path, ignore_errors=True)


def postmaster(home: Path) -> int | None:
    pidfile = home / "pg18" / "postmaster.pid"
    return int(pidfile.read_text().split()[0]) if pidfile.exists() else None


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_gone(pid: int, seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.1)
    return False


def holder() -> subprocess.Popen:
    """A process that opens MemoryStore() on the embedded server and keeps it open."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=os.environ.copy())
    line = proc.stdout.readline()
    assert line.strip() == "ready", proc.stderr.read()
    return proc


def terminate(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == -signal.SIGTERM  # killed by the signal: no exit handlers ran


def open_and_close() -> None:
    done = subprocess.run([sys.executable, "-c", OPEN_AND_CLOSE], capture_output=True,
                          text=True, timeout=120, env=os.environ.copy())
    assert done.returncode == 0, done.stderr


def test_server_of_a_sigtermed_process_is_stopped_by_the_next_one(home):
    """The issue's repro: a child opens MemoryStore() and gets SIGTERM; the server keeps
    running; a later process opens and closes a store; then the postmaster is gone."""
    child = holder()
    pid = postmaster(home)
    assert pid and alive(pid)
    terminate(child)
    assert alive(pid)  # nobody is left to stop it
    open_and_close()
    assert wait_gone(pid), "the postmaster outlived its last live user"


def test_last_live_process_stops_the_server_after_another_was_killed(home):
    """A and B share the server; B is SIGTERMed; when A exits normally it is the last live
    user and stops the server (the dead B is pruned at A's exit)."""
    first = holder()
    second = holder()
    pid = postmaster(home)
    assert json.loads((home / "pg18" / ".handle_pids.json").read_text()) == [first.pid,
                                                                            second.pid]
    terminate(second)
    first.stdin.close()
    assert first.wait(60) == 0, first.stderr.read()
    assert wait_gone(pid), "the postmaster outlived its last live user"


def test_server_status_and_stop(home):
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(cli, list(args), catch_exceptions=False)

    fresh = invoke("server", "status")
    assert fresh.exit_code == 0 and "no embedded server" in fresh.stdout
    user = holder()
    status = json.loads(invoke("server", "status", "--json").stdout)
    pid = postmaster(home)
    assert status["running"] and status["pid"] == pid and status["clients"] == [user.pid]
    assert "memdb_user" in status["psql_app"] and "postgres" in status["psql_admin"]
    text = invoke("server", "status").stdout
    assert f"processes using it: {user.pid}" in text and "psql as the admin" in text
    refused = invoke("server", "stop")
    assert refused.exit_code == 1 and str(user.pid) in refused.stderr
    assert refused.stderr.startswith("error: not stopped")
    assert alive(pid)
    terminate(user)  # the orphan of the issue: running, used by nobody
    status = json.loads(invoke("server", "status", "--json").stdout)
    assert status["running"] and status["clients"] == []
    assert "none (stop it with `memdb server stop`)" in invoke("server", "status").stdout
    stopped = invoke("server", "stop")
    assert stopped.exit_code == 0 and f"stopped the embedded server in {home} (pid {pid})" \
        in stopped.stdout
    assert wait_gone(pid)
    assert "not running" in invoke("server", "status").stdout
    again = invoke("server", "stop", "--json")
    assert again.exit_code == 0
    assert json.loads(again.stdout)["stopped"] is False
    assert "nothing to stop" in invoke("server", "stop").stdout

    # --force stops a server in use; the next store starts it again
    user = holder()
    pid = postmaster(home)
    forced = invoke("server", "stop", "--force")
    assert forced.exit_code == 0 and f"process(es) {user.pid}" in forced.stdout
    assert wait_gone(pid)
    user.stdin.close()
    user.wait(60)
    open_and_close()  # starts a new server and stops it again
    assert not (home / "pg18" / "postmaster.pid").exists()
