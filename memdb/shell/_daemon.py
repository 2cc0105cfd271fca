"""The shell daemon: one per user, home folder and shaping environment (:mod:`memdb.shell`).

It runs the ``memdb`` commands its clients send, one at a time, in this process, where the
stores (and with them the embedder and the embedded server) stay open between commands. It
exits after ``$MEMDB_KEEP_ALIVE`` seconds without a command (the last command's setting), on
a stop request (``memdb server stop``), or on SIGTERM; then it closes its stores, and the
embedded server stops unless another process uses it.

    python -m memdb.shell._daemon SOCKET_PATH   (started by the memdb command)
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import queue
import signal
import socket
import struct
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

from . import _wire as w
from ._client import STARTED

__all__ = ["serve"]


class _Out(io.RawIOBase):
    """A stream of the client's (stdout or stderr), frame by frame."""

    def __init__(self, conn: socket.socket, kind: bytes, tty: bool) -> None:
        self._conn, self._kind, self._tty = conn, kind, tty

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self._tty

    def write(self, data: Any) -> int:
        with contextlib.suppress(OSError):  # a client gone: the command still finishes
            w.send(self._conn, self._kind, bytes(data))
        return len(data)


class _In(io.RawIOBase):
    """The client's stdin, read only when the command reads it (a prompt, or ``-``)."""

    def __init__(self, conn: socket.socket, chunks: queue.Queue[bytes], tty: bool,
                 interrupted: threading.Event) -> None:
        self._conn, self._chunks, self._tty = conn, chunks, tty
        self._interrupted = interrupted

    def readable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self._tty

    def readinto(self, buffer: Any) -> int:
        try:
            w.send(self._conn, w.NEED_IN, str(len(buffer)).encode())
        except OSError:
            return 0
        data = self._chunks.get()
        if not data and self._interrupted.is_set():
            # Ctrl-C while the command waits for stdin: the command is interrupted, as a cold
            # one would be, rather than reading end-of-input (the SIGINT sent to the main
            # thread may only be handled after the command has gone on with no input)
            raise KeyboardInterrupt
        buffer[:len(data)] = data
        return len(data)


class _Command:
    """One client's command: its streams, and a reader of what the client sends meanwhile
    (stdin, an interrupt, or its going away, which interrupts the command)."""

    def __init__(self, conn: socket.socket, request: dict[str, Any]) -> None:
        self.conn, self.request = conn, request
        self.chunks: queue.Queue[bytes] = queue.Queue()
        self.running = threading.Event()
        self.interrupted = threading.Event()
        self.lock = threading.Lock()

    def _read(self) -> None:
        while True:
            try:
                kind, data = w.recv(self.conn)
            except (EOFError, OSError):
                kind, data = b"", b""
            if kind == w.IN:
                self.chunks.put(data)
                continue
            self.interrupted.set()
            self.chunks.put(b"")  # Ctrl-C, or the client went away: no more stdin either
            with self.lock:
                if self.running.is_set():  # a real SIGINT: it also ends a blocking wait
                    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            if kind != w.INTERRUPT:
                return

    def run(self) -> int:
        from ..cli import main as cli_main

        req = self.request
        tty_in, tty_out, tty_err = req["tty"]
        enc_out, enc_err = req["encoding"]
        saved = (dict(os.environ), os.getcwd(), sys.stdin, sys.stdout, sys.stderr)
        out = io.TextIOWrapper(io.BufferedWriter(_Out(self.conn, w.OUT, tty_out)),
                               encoding=enc_out, errors="replace", line_buffering=True)
        err = io.TextIOWrapper(io.BufferedWriter(_Out(self.conn, w.ERR, tty_err)),
                               encoding=enc_err, errors="replace", line_buffering=True)
        stdin = io.TextIOWrapper(
            io.BufferedReader(_In(self.conn, self.chunks, tty_in, self.interrupted)),
            encoding="utf-8", errors="surrogateescape")
        code: Any = 0
        try:
            os.environ.clear()
            os.environ.update(req["env"])
            os.chdir(req["cwd"])
            sys.stdin, sys.stdout, sys.stderr = stdin, out, err
            w.send(self.conn, STARTED)
            self.running.set()
            threading.Thread(target=self._read, daemon=True).start()
            try:
                cli_main(list(req["argv"]))
            except SystemExit as exc:
                code = exc.code
            except KeyboardInterrupt:
                print("\nAborted!", file=err)
                code = 130
            except BaseException:  # noqa: BLE001 (shown to the client, as Python would)
                traceback.print_exc(file=err)
                code = 1
            finally:
                with self.lock:
                    self.running.clear()
        finally:
            for stream in (out, err):
                with contextlib.suppress(Exception):
                    stream.flush()
            env, cwd, sys.stdin, sys.stdout, sys.stderr = saved
            os.environ.clear()
            os.environ.update(env)
            with contextlib.suppress(OSError):
                os.chdir(cwd)
        if isinstance(code, str):
            with contextlib.suppress(OSError):
                w.send(self.conn, w.ERR, (code + "\n").encode("utf-8", "replace"))
            return 1
        return 0 if code is None else int(code)


def _same_user(conn: socket.socket) -> bool:
    """Whether the caller runs as this daemon's user (the kernel's SO_PEERCRED; where it is
    missing, the socket folder's mode 0700 is the boundary)."""
    if not hasattr(socket, "SO_PEERCRED"):
        return True
    raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", raw)
    return uid == os.geteuid()


def _listen(path: Path) -> socket.socket:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a dead daemon's (we hold the lock)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    listener.listen(16)
    return listener


def serve(path: Path) -> None:
    """Listen on ``path`` until the keep-alive passes without a command, or a stop."""
    if path.parent != w.socket_folder():
        raise SystemExit(f"not a memdb socket path: {path}")
    lock = open(path.with_suffix(".lock"), "w")  # noqa: SIM115 (held for the daemon's life)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another daemon serves this socket
    from .. import cli

    cli.keep_stores_open()
    listener = _listen(path)
    idle = w.keep_alive()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # its only SIGINTs are a client's Ctrl-C, forwarded: they must interrupt the command even
    # when the daemon was started from a shell that ignores SIGINT (a background job)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        while idle > 0:
            listener.settimeout(idle)
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                break
            except KeyboardInterrupt:  # an interrupt that came after its command ended
                continue
            with conn:
                try:
                    idle = _handle(conn, path, listener, idle)
                except KeyboardInterrupt:  # a late interrupt for a command that ended
                    pass
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)  # wakes the command's reader thread
    finally:
        listener.close()
        path.unlink(missing_ok=True)
        cli.close_kept_stores()
        _tidy(path)


def _tidy(path: Path) -> None:
    """Remove the lock file (its socket is gone: a new daemon locks a new file) and the log
    when nothing was written to it."""
    path.with_suffix(".lock").unlink(missing_ok=True)
    log = path.with_suffix(".log")
    with contextlib.suppress(OSError):
        if log.stat().st_size == 0:
            log.unlink()


def _handle(conn: socket.socket, path: Path, listener: socket.socket, idle: float) -> float:
    """One client's request; returns the keep-alive to wait next (0: exit now)."""
    from .. import cli

    conn.settimeout(None)
    if not _same_user(conn):
        return idle
    try:
        kind, data = w.recv(conn)
    except (EOFError, OSError):
        return idle
    if kind == w.STOP:  # stop accepting, release the server, then answer
        path.unlink(missing_ok=True)
        listener.close()
        cli.close_kept_stores()
        w.send(conn, w.EXIT, json.dumps({"pid": os.getpid()}).encode())
        return 0.0
    if kind != w.REQUEST:
        return idle
    request = json.loads(data.decode("utf-8", "surrogateescape"))
    try:
        code = _Command(conn, request).run()
        w.send(conn, w.EXIT, str(code).encode())
    except OSError:
        pass
    return w.keep_alive(request["env"])


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
