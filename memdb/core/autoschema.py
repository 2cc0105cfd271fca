"""The embedded server migrates itself on first use.

The embedded server is memdb's own (no DSN and no ``$MEMDB_DSN``), so the first
:class:`~memdb.core.connection.Database` to reach a data folder whose database was never migrated
creates the schema there (``alembic upgrade head`` as the superuser, then ``memdb_app`` granted
to the data-path login) and says so once, as an INFO line on logger ``memdb.schema`` (the CLI
prints it on stderr): ``memdb: created the schema in <data folder> (first use)``. A server given
by a DSN or ``$MEMDB_DSN`` is never migrated implicitly: it stays
:class:`~memdb.core.errors.NotMigrated`
until ``memdb migrate``. A schema already created but at an older revision is left alone too
(upgrading stays explicit).

Several processes starting on a fresh folder at once: the check and the migration run under a
file lock in the data folder, and the process that finds the schema made by another one only
waits for it (alembic's migration also holds a PostgreSQL advisory lock, see alembic/env.py).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import filelock
import psycopg

from . import sql
from .errors import translate

__all__ = ["ensure_schema", "owns_server", "LOGGER"]

LOGGER = logging.getLogger("memdb.schema")
_checked: set[Path] = set()  # data folders found migrated by this process


def owns_server(db: Any) -> bool:
    """Whether ``db`` (a :class:`~memdb.core.connection.Database`) is on the embedded server, which
    memdb owns: it migrates itself, and its superuser registers a store's embedding space on
    first use (on a server given by a DSN only the admin's ``memdb migrate`` does)."""
    return getattr(db, "_server", None) is not None


def _created(server: Any) -> bool:
    try:
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            return bool(conn.execute(sql.query("schema_created")).fetchone()[0])
    except psycopg.Error as exc:
        raise translate(exc) from exc


def ensure_schema(server: Any) -> bool:
    """Create the schema on the embedded ``server`` (an
    :class:`~memdb.core.embedded.EmbeddedServer`,
    started) unless a migration already ran there; True when this call created it."""
    key = server.pgdata.resolve()
    if key in _checked:
        return False
    if not _created(server):
        with filelock.FileLock(str(server.home / "migrate.lock"), timeout=600):
            if not _created(server):  # another process may have made it meanwhile
                from .migrations import upgrade

                upgrade(server.dsn())
                server.ensure_login()
                _checked.add(key)
                LOGGER.info("memdb: created the schema in %s (first use)", server.home)
                return True
    _checked.add(key)
    return False
