"""The ``memdb`` command's shell daemon (memdb.shell): a warm command prints what a cold one
does, `memdb server stop` ends the daemon and the embedded server, another OS user cannot
use it, and it exits after its keep-alive.

Every command runs as a real process (``python -m memdb.shell``, the console script's code)
on an embedded server in a temporary home.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from memdb.core.embedded import server_status
from memdb.shell import _wire

SECRET_EN = "The vault code is 4711, known only to Grace"
SECRET_ZH = "格蕾丝的保险箱密码是四七一一"


@pytest.fixture(scope="module")
def home() -> Path:
    path = Path(tempfile.mkdtemp(prefix="memdb-shell-"))
    yield path
    env = {**os.environ, "MEMDB_HOME": str(path)}
    subprocess.run([sys.executable, "-m", "memdb.cli", "server", "stop", "--force"], env=env,
                   capture_output=True, timeout=120)
    shutil.rmtree(path, ignore_errors=True)


def memdb(home: Path, *args: str, keep: str = "30", stdin: str | None = None
          ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMDB_HOME": str(home), "MEMDB_KEEP_ALIVE": keep}
    env.pop("MEMDB_DSN", None)
    return subprocess.run([sys.executable, "-m", "memdb.shell", *args], env=env, input=stdin,
                          capture_output=True, text=True, timeout=300)


def socket_of(home: Path) -> Path:
    env = {k: v for k, v in os.environ.items() if k != "MEMDB_DSN"}
    return _wire.socket_path({**env, "MEMDB_HOME": str(home)})


def daemons(home: Path) -> list[psutil.Process]:
    path = str(socket_of(home))
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if "memdb.shell._daemon" in cmd and path in cmd:
            found.append(proc)
    return found


def wait_gone(procs: list[psutil.Process], seconds: float) -> bool:
    _gone, alive = psutil.wait_procs(procs, timeout=seconds)
    return not alive


def test_a_warm_command_prints_what_a_cold_one_does(home):
    for text in (SECRET_EN, SECRET_ZH):
        assert memdb(home, "add", "--no-gate", text, "--subject", "grace", keep="0"
                     ).returncode == 0
    assert daemons(home) == []  # keep-alive 0: every command ran in its own process
    commands = [["search", "what is the vault code?", "--subject", "grace"],
                ["search", "保险箱密码", "--subject", "grace", "--json"],
                ["get", "00000000-0000-0000-0000-000000000000"],  # an error: exit 1, stderr
                ["search", "--no-such-option"]]  # a usage error: exit 2
    for args in commands:
        cold = memdb(home, *args, keep="0")
        first = memdb(home, *args)  # starts the daemon
        warm = memdb(home, *args)
        assert len(daemons(home)) == 1
        for run in (first, warm):
            assert (run.returncode, run.stdout, run.stderr) == (
                cold.returncode, cold.stdout, cold.stderr), args
    assert "4711" in cold.stdout or cold.returncode  # the searches found the secrets
    hits = json.loads(memdb(home, "search", "保险箱密码", "--subject", "grace", "--json").stdout)
    assert SECRET_ZH in [h["memory"]["content"] for h in hits["hits"]]
    # stdin is the client's, read when the command reads it: as a cold command reads it
    for who, keep in (("heidi", "30"), ("ivan", "0")):
        added = memdb(home, "add", "--no-gate", "-", "--subject", who, keep=keep,
                      stdin="海蒂喜欢乌龙茶 and oolong\n")
        assert added.returncode == 0 and "created" in added.stdout
    contents = [[m["content"] for m in json.loads(memdb(
        home, "list", "--subject", who, "--json").stdout)] for who in ("heidi", "ivan")]
    assert contents[0] == contents[1] and contents[0][0].startswith("海蒂喜欢乌龙茶 and oolong")


def test_server_stop_ends_the_daemon_and_the_server(home):
    assert memdb(home, "count").returncode == 0
    procs = daemons(home)
    assert len(procs) == 1 and server_status(home)["running"]
    stop = memdb(home, "server", "stop")
    assert stop.returncode == 0, stop.stderr
    assert f"pid {procs[0].pid}" in stop.stdout
    assert wait_gone(procs, 10)
    assert not socket_of(home).exists()
    assert not server_status(home)["running"]
    assert memdb(home, "count").stdout.strip() == "4"  # and the next command starts both again
    assert len(daemons(home)) == 1


def _as_nobody(path: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """A client written out by hand, run as the OS user nobody: connect, ask for ``argv``,
    print every frame that comes back."""
    code = f"""
import json, socket, struct
s = socket.socket(socket.AF_UNIX)
try:
    s.connect({str(path)!r})
except OSError as exc:
    print("refused", type(exc).__name__); raise SystemExit(0)
body = json.dumps({{"argv": {argv!r}, "env": {{"MEMDB_HOME": {str(path)!r}}}, "cwd": "/",
                   "tty": [False, False, False], "encoding": ["utf-8", "utf-8"]}}).encode()
data = b""
try:
    s.sendall(struct.pack("!cI", b"r", len(body)) + body)
    while chunk := s.recv(65536):
        data += chunk
except OSError:
    pass  # the daemon hung up (a reset when it had not read the request)
print("received", repr(data))
"""
    return subprocess.run(["/usr/bin/python3", "-I", "-c", code], user="nobody",
                          group="nogroup", cwd="/", env={"PATH": "/usr/bin:/bin", "HOME": "/"},
                          capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="switching to the OS user nobody needs root")
def test_another_os_user_cannot_use_the_daemon(home):
    assert memdb(home, "count").returncode == 0
    path = socket_of(home)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    out = _as_nobody(path, ["list", "--subject", "grace"])
    assert out.stdout.startswith("refused PermissionError"), (out.stdout, out.stderr)
    # the folder and the socket are not the only wall: opened up, the daemon still refuses
    # nobody by its kernel-reported uid, and runs nothing
    folder_mode = stat.S_IMODE(path.parent.stat().st_mode)
    try:
        path.parent.chmod(0o711)
        path.chmod(0o666)
        out = _as_nobody(path, ["list", "--subject", "grace"])
    finally:
        path.parent.chmod(folder_mode)
        path.chmod(0o600)
    assert out.stdout.strip() == "received b''", (out.stdout, out.stderr)
    assert "4711" not in out.stdout and "四七一一" not in out.stdout
    assert memdb(home, "count").stdout.strip() == "4"  # and it still serves its own user


def test_ctrl_c_interrupts_the_command_in_the_daemon(home):
    """Ctrl-C on the client reaches the command (here blocked reading the client's stdin): it
    ends as a cold one does ("Aborted!", exit 1), and the daemon serves the next command."""
    env = {**os.environ, "MEMDB_HOME": str(home), "MEMDB_KEEP_ALIVE": "30"}
    assert memdb(home, "count").returncode == 0
    # SIGINT as a terminal gives it: a run started in the background (CI under nohup ... &)
    # inherits it ignored, and Python then never raises KeyboardInterrupt
    proc = subprocess.Popen([sys.executable, "-m", "memdb.shell", "add", "-", "--subject", "x"],
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(3)  # the daemon now waits for stdin
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out, err.strip()) == (1, "", "Aborted!")
    assert memdb(home, "count").stdout.strip() == "4"  # nothing added; the daemon still serves
    assert len(daemons(home)) == 1


def test_the_daemon_exits_after_its_keep_alive(home):
    memdb(home, "server", "stop")
    assert memdb(home, "count", keep="1.5").stdout.strip() == "4"
    procs = daemons(home)
    assert len(procs) == 1 and server_status(home)["running"]
    assert wait_gone(procs, 30)
    assert not socket_of(home).exists()
    deadline = time.monotonic() + 10  # the daemon was the server's last user
    while server_status(home)["running"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not server_status(home)["running"]


def test_servers_and_help_always_run_in_their_own_process():
    from memdb.shell import _client

    assert _client.forwardable(["search", "x"]) and _client.forwardable(
        ["--tenant", "acme", "add", "记住这个"])
    assert not any(_client.forwardable(a) for a in (
        [], ["--help"], ["--version"], ["serve"], ["mcp"], ["server", "stop"],
        ["--dsn", "postgresql://x", "server", "psql"], ["ui"]))
    assert _wire.keep_alive({}) == _wire.DEFAULT_KEEP_ALIVE
    assert _wire.keep_alive({"MEMDB_KEEP_ALIVE": "0"}) == 0
    assert _wire.keep_alive({"MEMDB_KEEP_ALIVE": "-5"}) == 0
    assert _wire.keep_alive({"MEMDB_KEEP_ALIVE": "12.5"}) == 12.5
