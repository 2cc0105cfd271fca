"""The ``memdb`` console script and its shell daemon: a warm store for a shell's commands.

Each ``memdb`` command used to start (or join) the embedded server and load the embedding
model, then drop both: 1 to 5 s a command. With a keep-alive (``$MEMDB_KEEP_ALIVE`` seconds,
default 300; 0 turns it off), the first command starts a per-user daemon that holds the open
store, the embedder and with them the embedded server; the next commands are sent to it over a
Unix socket (argv, environment, working folder; stdin on demand) and print what it streams
back. It exits after the keep-alive without a command, or at once with ``memdb server stop``.

Only this OS user reaches it: the socket lives in ``$TMPDIR/memdb-<uid>`` (mode 0700, owned
by the user, refused otherwise), is itself mode 0600, and the daemon checks each caller's
kernel-reported uid (``SO_PEERCRED``). ``memdb serve``, ``mcp``, ``ui`` and ``server`` always
run in their own process.
"""

from ._client import main

__all__ = ["main"]
