"""The ``memdb`` console script: send the command to this shell's daemon (starting it when
none runs), else run it in this process.

Imports nothing heavy before it knows it must run the command itself: a warm command costs
the interpreter's start, one socket round trip and the command's own work.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from . import _wire as w

__all__ = ["main", "forwardable"]

# commands that always run in their own process: servers, and the embedded server's own
# lifecycle (`server stop` ends the daemon; `server psql` is interactive)
LOCAL = frozenset({"serve", "mcp", "ui", "server"})
_GLOBAL_WITH_VALUE = ("--dsn", "--read-dsn", "--tenant", "--as-subject")
_START_TIMEOUT = 60.0
STARTED = b"a"  # daemon -> client: the command began (before it, a lost daemon is retried)


def forwardable(argv: list[str]) -> bool:
    """Whether ``argv`` names a command the daemon may run (not --help/--version alone, not
    a server or the embedded server's own commands)."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in _GLOBAL_WITH_VALUE:
            i += 2
            continue
        if arg.startswith("-"):
            if arg in ("-h", "--help", "--version"):
                return False
            i += 1
            continue
        return arg not in LOCAL
    return False


def _connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        return None
    return sock


def _start_daemon(path: Path) -> socket.socket | None:
    """Start the daemon for ``path`` and wait until it listens (None: it did not)."""
    log = open(path.with_suffix(".log"), "ab")  # noqa: SIM115 (the daemon's own)
    os.chmod(log.name, 0o600)
    with log:
        proc = subprocess.Popen([sys.executable, "-m", "memdb.shell._daemon", str(path)],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd="/",
                                start_new_session=True, close_fds=True)
    deadline = time.monotonic() + _START_TIMEOUT
    while time.monotonic() < deadline:
        sock = _connect(path)
        if sock is not None:
            return sock
        if proc.poll() is not None:  # it failed, or another one won the lock: try once more
            return _connect(path)
        time.sleep(0.02)
    return None


def _request(argv: list[str]) -> bytes:
    streams = (sys.stdin, sys.stdout, sys.stderr)
    env = dict(os.environ)
    try:  # stdout's terminal size, which click's help reads (shutil.get_terminal_size)
        size = os.get_terminal_size(1)
        env.setdefault("COLUMNS", str(size.columns))
        env.setdefault("LINES", str(size.lines))
    except (OSError, ValueError):
        pass
    return json.dumps({
        "argv": argv, "env": env, "cwd": os.getcwd(),
        "tty": [bool(s is not None and s.isatty()) for s in streams],
        "encoding": [getattr(s, "encoding", None) or "utf-8" for s in streams[1:]],
    }).encode("utf-8", "surrogateescape")


def _exchange(sock: socket.socket, argv: list[str]) -> int | None:
    """Run ``argv`` on the daemon; its exit status, or None when it ended before starting
    the command (the caller may then run it itself). Ctrl-C interrupts the command there (a
    second one leaves it)."""
    w.send(sock, w.REQUEST, _request(argv))
    state = {"started": False}
    interrupted = 0
    while True:
        try:
            code = _step(sock, state)
        except KeyboardInterrupt:
            interrupted += 1
            if interrupted > 1 or not state["started"]:
                return 130
            w.send(sock, w.INTERRUPT)
            continue
        if code != -1:
            return code


def _step(sock: socket.socket, state: dict[str, bool]) -> int | None:
    """Handle one frame from the daemon: -1 to go on, else what :func:`_exchange` returns."""
    try:
        kind, data = w.recv(sock)
    except (EOFError, ConnectionError):
        if not state["started"]:
            return None
        print("error: the memdb daemon ended during the command (its log: "
              f"{w.socket_path().with_suffix('.log')})", file=sys.stderr)
        return 1
    if kind == STARTED:
        state["started"] = True
    elif kind in (w.OUT, w.ERR):
        stream = (sys.stdout if kind == w.OUT else sys.stderr).buffer
        stream.write(data)
        stream.flush()
    elif kind == w.NEED_IN:
        try:
            chunk = os.read(0, int(data))
        except OSError:
            chunk = b""
        w.send(sock, w.IN, chunk)
    elif kind == w.EXIT:
        return int(data)
    return -1


def forward(argv: list[str]) -> int | None:
    """Run ``argv`` on this shell's daemon, starting it if needed; None: run it here."""
    try:
        path = w.socket_path()
    except OSError:
        return None
    for _attempt in range(2):  # a daemon that was just ending its keep-alive: start another
        sock = _connect(path) or _start_daemon(path)
        if sock is None:
            return None
        with sock:
            try:
                code = _exchange(sock, argv)
            except OSError:
                code = None
        if code is not None:
            return code
    return None


def main() -> None:
    """The ``memdb`` command."""
    argv = sys.argv[1:]
    if w.keep_alive() > 0 and forwardable(argv):
        code = forward(argv)
        if code is not None:
            raise SystemExit(code)
    from ..cli import main as run_here

    run_here()
