"""Schema migrations: alembic revisions that apply ``sql/``.

``upgrade(dsn)`` is ``alembic upgrade head`` for memdb (also ``memdb migrate``); after any
upgrade step, every function and trigger in ``sql/functions`` and ``sql/triggers`` is
re-applied (CREATE OR REPLACE), so they always match the installed package. A database
already at head gets them re-applied too when their digest (recorded on schema memdb) differs
from the package's, so a plain ``alembic upgrade head`` also deploys function-only changes.
Table DDL lives in frozen, checksummed files under ``sql/schema``, one per revision.

Migrations run as the admin login: ``dsn``, else ``$MEMDB_ADMIN_DSN``, else ``$MEMDB_DSN``,
else the embedded server's superuser (:func:`memdb.core.servers.resolve_admin_dsn`); on the
embedded server, :func:`upgrade` then grants ``memdb_app`` to the data-path login.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

from . import sql
from .errors import MemdbError, NotMigrated
from .servers import resolve_admin_dsn

__all__ = ["alembic_config", "upgrade", "downgrade", "current", "head", "apply_objects",
           "apply_schema_file", "sqlalchemy_url", "objects_digest", "installed_objects_digest",
           "has_citus", "one_connection_per_node", "split_statements", "CITUS_SCHEMA_FILE"]

VERSION_TABLE = "memdb_alembic_version"
# Revision 0014's schema file: applied only on a Citus coordinator (it distributes the tables)
CITUS_SCHEMA_FILE = "0014_citus_distribution.sql"


def _alembic_dir() -> Path:
    packaged = resources.files("memdb") / "alembic"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "alembic"


def sqlalchemy_url(dsn: str):
    """A libpq DSN (URL or key=value form) as SQLAlchemy's psycopg 3 URL."""
    from psycopg.conninfo import conninfo_to_dict
    from sqlalchemy.engine import URL

    if dsn.startswith("postgresql+psycopg://"):
        dsn = "postgresql://" + dsn[len("postgresql+psycopg://"):]
    try:
        params = {k: str(val) for k, val in conninfo_to_dict(dsn).items() if val is not None}
    except Exception as exc:
        raise NotMigrated(f"unusable database DSN: {type(exc).__name__}") from exc
    return URL.create(
        "postgresql+psycopg",
        username=params.pop("user", None),
        password=params.pop("password", None) or None,
        database=params.pop("dbname", None),
        query=params,
    )


@contextlib.contextmanager
def _admin(dsn: str | None, *, grant: bool = False) -> Iterator[str]:
    """The admin DSN; an embedded server started for it is released afterwards, after
    granting ``memdb_app`` to its data-path login when ``grant`` (a migration may have just
    created the role)."""
    url, server = resolve_admin_dsn(dsn)
    try:
        yield url
        if server is not None and grant:
            server.ensure_login()
    finally:
        if server is not None:
            server.stop()


def alembic_config(dsn: str | None = None):
    """An alembic Config for memdb's revisions (``dsn``, else the admin login alembic's
    env.py resolves: $MEMDB_ADMIN_DSN, $MEMDB_DSN or the embedded server's superuser)."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(_alembic_dir()))
    if dsn:
        cfg.attributes["memdb_dsn"] = dsn
    return cfg


def upgrade(dsn: str | None = None, revision: str = "head") -> str:
    """Upgrade to ``revision`` and re-apply functions and triggers; returns the new revision."""
    from alembic import command

    with _admin(dsn, grant=True) as url:
        cfg = alembic_config(url)
        cfg.attributes["memdb_always_apply_objects"] = True
        command.upgrade(cfg, revision)
        return current(url) or ""


def downgrade(dsn: str | None = None, revision: str = "base") -> None:
    from alembic import command

    with _admin(dsn) as url:
        command.downgrade(alembic_config(url), revision)


def head() -> str:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head() or ""


def current(dsn: str | None = None) -> str | None:
    """The revision the database is at (None before the first migration)."""
    import psycopg

    with _admin(dsn) as url, psycopg.connect(url, autocommit=True) as conn:
        found = conn.execute("SELECT to_regclass(%s)", (f"public.{VERSION_TABLE}",)).fetchone()
        if found[0] is None:
            return None
        row = conn.execute(f"SELECT version_num FROM public.{VERSION_TABLE}").fetchone()
        return row[0] if row else None


def apply_schema_file(driver_conn: Any, name: str, sha256: str, *,
                      distribute: tuple[str, ...] = ()) -> None:
    """Run one frozen schema file after checking it is byte-for-byte the one released.

    ``distribute`` names tables the file creates that, on a Citus coordinator, are distributed
    by tenant (co-located with memdb.memories) right after their CREATE TABLE, before the
    file's later statements (policies, indexes) run on them."""
    path = sql.sql_dir() / "schema" / name
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise MemdbError(
            f"sql/schema/{name} changed after release (sha256 {digest}, expected {sha256}): "
            "schema changes go in a new file and a new revision"
        )
    if not distribute or not has_citus(driver_conn):
        driver_conn.execute(data.decode("utf-8"))
        return
    for statement in split_statements(data.decode("utf-8")):
        driver_conn.execute(statement)
        created = re.search(r"^\s*CREATE TABLE (memdb\.\w+)", statement, re.MULTILINE)
        if created and created.group(1) in distribute:
            driver_conn.execute("SELECT create_distributed_table(%s, 'tenant', "
                                "colocate_with => 'memdb.memories')", (created.group(1),))


# The comment on schema memdb records which sql/ objects are installed (objects_digest), so
# a plain `alembic upgrade head` on a database already at head still re-applies functions and
# triggers that changed in a newer memdb release without a new revision.
_DIGEST_PREFIX = "memdb sql objects sha256 "


def objects_digest() -> str:
    """sha256 over the names and bytes of every file in sql/functions and sql/triggers."""
    digest = hashlib.sha256()
    for path in sql.object_files():
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def installed_objects_digest(driver_conn: Any) -> str | None:
    """The objects_digest recorded by the last apply_objects (None: none recorded)."""
    row = driver_conn.execute(
        "SELECT obj_description(to_regnamespace('memdb')::oid, 'pg_namespace')").fetchone()
    text = row[0] if row else None
    return text[len(_DIGEST_PREFIX):] if text and text.startswith(_DIGEST_PREFIX) else None


def split_statements(text: str) -> list[str]:
    """The statements of one sql/ object file: split at a ``;`` ending a line (not a comment
    line), outside dollar-quoted bodies (the files' layout: no other quoting spans lines)."""
    out: list[str] = []
    current: list[str] = []
    quoted = False
    for line in text.splitlines(keepends=True):
        current.append(line)
        quoted ^= line.count("$$") % 2 == 1
        if not quoted and line.rstrip().endswith(";") and not line.lstrip().startswith("--"):
            out.append("".join(current))
            current = []
    rest = "".join(current)
    if rest.strip() and any(not ln.lstrip().startswith("--") and ln.strip()
                            for ln in rest.splitlines()):
        out.append(rest)
    return out


def has_citus(driver_conn: Any) -> bool:
    """Whether the database has the citus extension (a Citus coordinator)."""
    return driver_conn.execute(sql.query("has_citus")).fetchone()[0]


def one_connection_per_node(driver_conn: Any) -> None:
    """On Citus, DDL on a distributed table in parallel would forbid the function DDL (and
    multi-shard updates) later in the same migration transaction: run this transaction's
    shard commands sequentially. Nothing on plain PostgreSQL."""
    if has_citus(driver_conn):
        driver_conn.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")


def apply_objects(driver_conn: Any) -> None:
    """(Re-)create every function and trigger from sql/ inside the current transaction, and
    record their digest on schema memdb."""
    driver_conn.execute("SET LOCAL check_function_bodies = off")
    citus = has_citus(driver_conn)
    # the tenant functions' bodies get their names back, so sql/functions replaces them (not
    # their guards, made again below: memdb.guard_tenant_functions)
    driver_conn.execute(sql.query("unguard_tenant_functions"))
    if citus:  # the triggers on memories are re-created on its shards too
        driver_conn.execute(sql.query("citus_allow_triggers"))
    for path in sql.object_files():
        text = path.read_text(encoding="utf-8")
        # Citus passes some DDL on to the workers as the text it came in, which must then be
        # one statement (CREATE TRIGGER, for the shell tables)
        for statement in split_statements(text) if citus else [text]:
            driver_conn.execute(statement)
    driver_conn.execute("SET LOCAL check_function_bodies = on")
    driver_conn.execute(sql.query("guard_tenant_functions"))
    if citus:
        driver_conn.execute(sql.query("citus_undistribute_functions"))
        driver_conn.execute(sql.query("citus_keep_functions_whole"))
        driver_conn.execute(sql.query("citus_allow_nested_in_tenant_functions"))
        for statement in split_statements(sql.query("citus_delete_set_null_trigger") + ";"):
            driver_conn.execute(statement)
    else:
        driver_conn.execute(sql.query("generic_plan_functions"))
    driver_conn.execute(f"COMMENT ON SCHEMA memdb IS '{_DIGEST_PREFIX}{objects_digest()}'")
