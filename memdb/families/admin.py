"""``MemoryAdmin``: the explicitly administrative entry point, connected as the admin login.

A :class:`~memdb.MemoryStore` is confined to its tenant (and subject) by row-level security and
never acts outside it. What spans tenants (maintenance over every tenant, as pg_cron would run
it) is done here, on a connection that must really be an admin: a superuser, a ``BYPASSRLS``
role, or a member of the owner of ``memdb.memories`` (the test of ``memdb.confine()``); any
other login is refused with :class:`~memdb.core.errors.Forbidden`.

The login: ``dsn``, else ``$MEMDB_ADMIN_DSN``, else ``$MEMDB_DSN``, else the embedded server's
superuser.

>>> with MemoryAdmin() as admin:                                 # doctest: +SKIP
...     admin.maintain(dry_run=True)["steps"]
{'purge_expired': 0, 'forget_importance': 2, ...}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from psycopg.types.json import Jsonb

from ..core import sql
from ..core import validate as v
from ..core.connection import Database, set_local
from ..core.errors import Forbidden

__all__ = ["MemoryAdmin"]


class MemoryAdmin:
    """Administration over every tenant, as the admin login (see the module docstring).

    ``actor``: who is recorded in history for its changes (default: the database user).
    """

    def __init__(self, dsn: str | None = None, *, actor: str | None = None) -> None:
        self.actor = v.optional_name(actor, "actor")
        self.db = Database(dsn, admin=True, max_size=2)
        self.login: str | None = None
        try:
            self._verify(require=False)
        except BaseException:
            self.db.close()
            raise

    def __repr__(self) -> str:
        return f"MemoryAdmin(login={self.login!r}, db={self.db!r})"

    def __enter__(self) -> MemoryAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    def _verify(self, *, require: bool) -> None:
        """Forbidden unless the login is an admin. Before the first migration (no
        memdb.memories, so no owner to be a member of) only ``require`` refuses a login that
        is neither a superuser nor BYPASSRLS; otherwise the check waits for first use."""
        if self.login is not None:
            return
        with self.db.transaction() as conn:
            row = conn.execute(sql.query("admin_login")).fetchone()
        if row["admin"]:
            self.login = row["login"]
        elif row["migrated"] or require:
            raise Forbidden(
                f"login {row['login']!r} is not an admin (not a superuser, not BYPASSRLS, not a "
                "member of the owner of memdb.memories): connect MemoryAdmin with the login "
                "that ran the migrations ($MEMDB_ADMIN_DSN), or use a MemoryStore for one tenant")

    def migrate(self) -> str:
        """Bring the schema to the newest revision as this login; returns the revision."""
        from ..core.migrations import upgrade

        revision = upgrade(self.db.dsn)
        self.db.ensure_app_login()
        self.db.reset()
        return revision

    def maintain(self, *, dry_run: bool = False, tenant: str | None = None,
                 **options: Any) -> dict[str, Any]:
        """One ``memdb.run_maintenance`` pass over every tenant (or only ``tenant``); the
        options and result are :meth:`memdb.families.maintenance.Maintenance.run`'s. ``dry_run``:
        the counts
        a real pass would give now; nothing changes. On a Citus cluster the pass runs on the
        coordinator: over every tenant each of its statements fans out to every shard (all
        workers), for one tenant each goes to that tenant's shard only."""
        tenant = v.optional_name(tenant, "tenant")
        self._verify(require=True)
        params = {"tenant": tenant, "options": Jsonb(options), "dry_run": bool(dry_run)}
        with self.db.transaction() as conn:
            set_local(conn, "set_context",
                      {"actor": self.actor or "", "reason": "maintenance (admin)"})
            return conn.execute(sql.query("run_maintenance"), params).fetchone()["result"]

    def vector_indexes(self, *, build: bool = False,
                       progress: Callable[[dict[str, Any]], None] | None = None
                       ) -> list[dict[str, Any]]:
        """Each embedding space's HNSW index: ``space_id``, ``model``, ``dims``, ``index`` (its
        name), ``built``, ``memories`` (current memories in the database) and ``min_rows`` (the
        ``memdb.hnsw_min_rows`` threshold at which memdb builds it by itself, default 10,000;
        ``memdb.ensure_vector_index``). ``build``: build every missing one now, e.g. before a
        bulk import that will pass the threshold (about 2 s per 10,000 memories on 2 cores,
        writers wait meanwhile); ``progress`` is called with a space's row before its build."""
        self._verify(require=True)
        rows = self._vector_indexes()
        for row in rows:
            if build and not row["built"]:
                if progress is not None:
                    progress(row)
                with self.db.transaction() as conn:
                    conn.execute(sql.query("build_vector_index"), {"space_id": row["space_id"]})
        return self._vector_indexes() if build else rows

    def _vector_indexes(self) -> list[dict[str, Any]]:
        """memdb.hnsw_min_rows() raises 22023 (InvalidInput) for a malformed setting."""
        with self.db.transaction() as conn:
            return [dict(r) for r in conn.execute(sql.query("vector_indexes")).fetchall()]

    def retokenize(self, *, tenant: str | None = None) -> int:
        """Re-derive the keyword index (``tsv``) of every tenant's memories (or only
        ``tenant``'s) whose stored index differs from today's analyzer, as after an upgrade that
        changed ``memdb.tokenize`` (``memdb.retokenize``); BM25 statistics stay exact, versions
        and history are untouched. Returns how many memories were rewritten."""
        tenant = v.optional_name(tenant, "tenant")
        self._verify(require=True)
        with self.db.transaction() as conn:
            return int(conn.execute(sql.query("retokenize"), {"tenant": tenant}).fetchone()["n"])
