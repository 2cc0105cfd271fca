"""alembic environment for memdb: connects as the admin login (the DSN memdb passes in, else
MEMDB_ADMIN_DSN, else MEMDB_DSN, else the embedded server's superuser, which then grants
memdb_app to the embedded data-path login), keeps its version table as
public.memdb_alembic_version, compares only schema ``memdb`` against memdb.core._tables.metadata,
and after any upgrade step re-applies the functions and triggers from sql/ (when the database
is then at head: they are written for the newest tables); at head with no step, it re-applies
them when the digest recorded on schema memdb differs from sql/'s (a newer memdb with changed
functions and no new revision). On Citus, an upgrade through revision 0014 (the tables
distributed) then moves the workers' identity sequences past the rows already in their ranges,
once committed (the citus_identity_past_rows query says why)."""

from __future__ import annotations

import logging.config

from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, pool

from alembic import context
from memdb.core import sql
from memdb.core._tables import metadata
from memdb.core.connection import resolve_admin_dsn
from memdb.core.migrations import (
    VERSION_TABLE,
    apply_objects,
    has_citus,
    installed_objects_digest,
    objects_digest,
    sqlalchemy_url,
)

config = context.config
if config.config_file_name is not None and config.get_section("formatters"):
    logging.config.fileConfig(config.config_file_name, disable_existing_loggers=False)


def include_object(obj, name, type_, reflected, compare_to):
    if type_ == "table":
        return obj.schema == "memdb"
    if type_ == "index" and name and name.startswith("memories_hnsw_space_"):
        return False  # made per embedding space by memdb.ensure_embedding_space()
    return True


def include_name(name, type_, parent_names):
    if type_ == "schema":
        return name == "memdb"
    return True


def run_migrations_online() -> None:
    dsn, server = resolve_admin_dsn(config.attributes.get("memdb_dsn"))
    try:
        _run(dsn)
        if server is not None:
            server.ensure_login()
    finally:
        if server is not None:
            server.stop()


def _run(dsn: str) -> None:
    engine = create_engine(sqlalchemy_url(dsn), poolclass=pool.NullPool)
    upgraded: list[bool] = []
    distributed: list[bool] = []
    script = ScriptDirectory.from_config(config)

    def on_apply(*, ctx, step, heads, run_args):
        upgraded.append(step.is_upgrade)
        distributed.append(step.is_upgrade and not step.is_stamp
                           and "0014" in step.up_revision_ids)

    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=metadata,
            version_table=VERSION_TABLE,
            include_schemas=True,
            include_object=include_object,
            include_name=include_name,
            on_version_apply=on_apply,
            transaction_per_migration=False,
        )
        with context.begin_transaction():
            # one migration at a time: a concurrent one waits here, then finds nothing to do
            connection.exec_driver_sql(sql.query("migration_lock"))
            context.run_migrations()
            at_head = context.get_context().get_current_revision() == script.get_current_head()
            driver = connection.connection.driver_connection
            if at_head and (any(upgraded) or config.attributes.get("memdb_always_apply_objects")
                            or installed_objects_digest(driver) != objects_digest()):
                apply_objects(driver)
            citus = any(distributed) and has_citus(driver)
        if citus:  # after the commit: the workers see the distributed tables only now
            failed = [row for row in driver.execute(sql.query("citus_identity_past_rows"))
                      if not row[2]]
            driver.commit()
            if failed:
                raise RuntimeError(f"could not move the workers' identity sequences: {failed}")
    engine.dispose()


if context.is_offline_mode():
    raise SystemExit("memdb migrations run online only: set MEMDB_DSN or use the embedded server")
run_migrations_online()
