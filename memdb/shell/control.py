"""Stop the shell daemons of a home folder (``memdb server stop``), without importing them."""

from __future__ import annotations

import contextlib
import json
import os
import socket

from . import _wire as w

__all__ = ["stop_daemons"]


def stop_daemons(env: dict[str, str] | None = None, *, timeout: float = 60.0) -> list[int]:
    """Ask every shell daemon of this home (``$MEMDB_HOME``) to exit now, and wait until each
    has closed its stores (releasing the embedded server). Returns their pids."""
    try:
        paths = w.daemon_sockets(os.environ if env is None else env)
    except OSError:
        return []
    stopped = []
    for path in paths:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(str(path))
            w.send(sock, w.STOP)
            kind, data = w.recv(sock)
            if kind == w.EXIT:
                stopped.append(int(json.loads(data)["pid"]))
        except (FileNotFoundError, ConnectionRefusedError):
            with contextlib.suppress(OSError):  # a daemon that died: its socket is stale
                path.unlink()
        except (OSError, EOFError, ValueError, KeyError):
            pass
        finally:
            sock.close()
    return stopped
