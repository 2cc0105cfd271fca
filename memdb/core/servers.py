"""Which server a connection goes to: an explicit DSN, the environment's, or the embedded
server (started here). Below :mod:`memdb.core.connection` and :mod:`memdb.core.migrations`, which
both need it, so neither imports the other for it."""

from __future__ import annotations

import os

from .embedded import EmbeddedServer

__all__ = ["resolve_dsn", "resolve_admin_dsn"]


def resolve_dsn(dsn: str | None = None) -> tuple[str, EmbeddedServer | None]:
    """The data path's DSN and, when it is the embedded server, the server handle (started;
    the caller stops it): ``dsn``, else ``$MEMDB_DSN``, else the embedded ``memdb_user``."""
    if dsn:
        return dsn, None
    env = os.environ.get("MEMDB_DSN")
    if env:
        return env, None
    server = EmbeddedServer()
    server.start()
    return server.app_dsn(), server


def resolve_admin_dsn(dsn: str | None = None) -> tuple[str, EmbeddedServer | None]:
    """The admin login's DSN (migrations, all-tenant maintenance) and the embedded server
    handle when it is that: ``dsn``, else ``$MEMDB_ADMIN_DSN``, else ``$MEMDB_DSN``, else the
    embedded server's superuser."""
    if dsn:
        return dsn, None
    env = os.environ.get("MEMDB_ADMIN_DSN") or os.environ.get("MEMDB_DSN")
    if env:
        return env, None
    server = EmbeddedServer()
    return server.start(), server
