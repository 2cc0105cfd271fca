"""The server a benchmark runs on: $MEMDB_DSN / --dsn, or an embedded one in a temporary
MEMDB_HOME (never the user's data), removed afterwards."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from psycopg.conninfo import conninfo_to_dict, make_conninfo


@contextmanager
def server(dsn: str | None) -> Iterator[tuple[str, str]]:
    """(admin DSN, how) for a server where databases may be created."""
    dsn = dsn or os.environ.get("MEMDB_DSN")
    if dsn:
        yield dsn, "dsn"
        return
    from memdb.embedded import EmbeddedServer

    home = tempfile.mkdtemp(prefix="memdb-bench-")
    os.chmod(home, 0o755)
    embedded = EmbeddedServer(home)
    try:
        embedded.start()
        yield embedded.dsn("postgres"), "embedded"
    finally:
        embedded.stop()
        shutil.rmtree(home, ignore_errors=True)


def with_db(dsn: str, dbname: str) -> str:
    """The same server DSN, pointing at another database."""
    params = conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return make_conninfo(**params)
