"""`memdb eval`'s scratch database (memdb/evaluation/_scratch.py) does not outlive its run:
SIGTERM drops it before the process exits, and a run killed harder (SIGKILL) leaves one that
the next run sweeps, but only when its owner process is gone (issue 21). Real processes, real
signals, the real embedded server."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import psycopg
import pytest
from psycopg import sql

from memdb.evaluation._scratch import PREFIX, scratch_database
from tests.test_eval_locomo import _tiny

HOLD = """
import sys, time
from memdb.evaluation._scratch import scratch_database
with scratch_database(sys.argv[1]) as dsn:
    print(dsn, flush=True)
    time.sleep(300)
"""


def _databases(server_dsn: str, pid: int | None = None) -> set[str]:
    prefix = PREFIX + (f"{pid}_" if pid is not None else "")
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT datname FROM pg_database WHERE starts_with(datname, %s)",
                            (prefix,))
        return {r[0] for r in rows}


def _wait_for(predicate, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_sigterm_during_memdb_eval_drops_its_scratch_database(server_dsn, tmp_path) -> None:
    data = tmp_path / "tiny_locomo.json"
    data.write_text(json.dumps(_tiny(), ensure_ascii=False), encoding="utf-8")
    before = _databases(server_dsn)
    proc = subprocess.Popen([sys.executable, "-m", "memdb.cli", "--dsn", server_dsn, "eval",
                             "locomo", str(data), "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: _databases(server_dsn) - before or proc.poll() is not None,
                  "the scratch database")
        assert _databases(server_dsn, proc.pid), proc.communicate()  # named with its pid
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert _databases(server_dsn) == before
    assert proc.returncode == 128 + signal.SIGTERM


def test_the_next_run_sweeps_a_killed_runs_database_and_keeps_live_ones(server_dsn) -> None:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, server_dsn], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline()  # inside the block: its database exists
        stale = _databases(server_dsn, proc.pid)
        assert len(stale) == 1
    finally:
        proc.kill()  # SIGKILL: no cleanup runs
        proc.wait()
    assert _databases(server_dsn, proc.pid) == stale  # left behind
    # kept: one owned by this (live) process, one by another machine, one with no owner record
    kept = {f"{PREFIX}live", f"{PREFIX}elsewhere", f"{PREFIX}unknown"}
    owners = {
        f"{PREFIX}live": {"host": socket.gethostname(), "pid": os.getpid(),
                          "boot": _boot(), "started": None},
        f"{PREFIX}elsewhere": {"host": "not-" + socket.gethostname(), "pid": proc.pid},
    }
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        for name in kept:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            if name in owners:
                conn.execute(sql.SQL("COMMENT ON DATABASE {} IS {}").format(
                    sql.Identifier(name), sql.Literal(json.dumps(owners[name]))))
    try:
        with scratch_database(server_dsn) as dsn:
            assert psycopg.connect(dsn).close() is None
            assert _databases(server_dsn, proc.pid) == set()  # swept at the start
            assert kept <= _databases(server_dsn)
        assert _databases(server_dsn, os.getpid()) == set()  # its own dropped at the end
    finally:
        with psycopg.connect(server_dsn, autocommit=True) as conn:
            for name in kept:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))


def _boot() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        pytest.skip("no /proc boot id on this system")
