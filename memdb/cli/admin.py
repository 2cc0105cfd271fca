"""``memdb admin``: what spans tenants, run as the admin login (:class:`~memdb.MemoryAdmin`).

The login: --dsn given on the command line, else $MEMDB_ADMIN_DSN, else $MEMDB_DSN, else the
embedded server's superuser; a login that is not an admin is refused (exit 1).
"""

from __future__ import annotations

import functools

import click

from ..families.admin import MemoryAdmin
from ._app import CliError, State, cli, emit_json, json_option
from .lifecycle import maintenance_options, run_maintenance


@cli.group()
@click.pass_obj
def admin(state: State) -> None:
    """Administration over every tenant, as the admin login: --dsn, else $MEMDB_ADMIN_DSN,
    else $MEMDB_DSN, else the embedded server's superuser. A login that is not an admin
    (superuser, BYPASSRLS or owner of the memdb tables) is refused."""
    if state.subject is not None:
        raise CliError("--as-subject confines a store to one subject, and `memdb admin` acts on "
                       "every tenant as the admin login: drop --as-subject. Nothing was changed")
    if state.tenant_given:
        raise CliError("`memdb admin` does not take the global --tenant: choose one tenant with "
                       "`memdb admin maintain --tenant NAME`. Nothing was changed")


@admin.command("maintain")
@click.option("--tenant", help="Only this tenant (default: every tenant).")
@maintenance_options
@click.pass_obj
def admin_maintain(state: State, tenant: str | None, dry_run: bool, steps: tuple[str, ...],
                   settings: tuple[str, ...], until_done: bool, as_json: bool) -> None:
    """Run maintenance over every tenant (or --tenant), as pg_cron would: the passes of
    `memdb maintain` (memdb.run_maintenance with tenant NULL)."""
    with MemoryAdmin(None if state.dsn_from_env else state.dsn) as memory_admin:
        run_maintenance(functools.partial(memory_admin.maintain, tenant=tenant),
                        dry_run=dry_run, steps=steps, settings=settings,
                        until_done=until_done, as_json=as_json)


@admin.command("retokenize")
@click.option("--tenant", help="Only this tenant (default: every tenant).")
@json_option
@click.pass_obj
def admin_retokenize(state: State, tenant: str | None, as_json: bool) -> None:
    """Re-derive the keyword index of memories stored before an analyzer change
    (memdb.retokenize): only rows whose index differs are rewritten; BM25 statistics stay
    exact, versions and history are untouched."""
    with MemoryAdmin(None if state.dsn_from_env else state.dsn) as memory_admin:
        n = memory_admin.retokenize(tenant=tenant)
    if as_json:
        emit_json({"tenant": tenant, "retokenized": n})
    else:
        click.echo(f"retokenized {n} memories" + (f" of tenant {tenant}" if tenant else ""))


@admin.command("vector-index")
@click.option("--build", is_flag=True,
              help="Build every embedding space's missing HNSW index now (before a bulk import).")
@json_option
@click.pass_obj
def admin_vector_index(state: State, build: bool, as_json: bool) -> None:
    """Show each embedding space's HNSW index, or build the missing ones (--build).

    memdb builds a space's index by itself once the database holds memdb.hnsw_min_rows current
    memories (default 10000): below that every vector search is an exact scan and the index
    would only slow writes (memdb.ensure_vector_index)."""
    def progress(row: dict) -> None:
        click.echo(f"building {row['index']} over {row['memories']} memories ...", err=True)

    with MemoryAdmin(None if state.dsn_from_env else state.dsn) as memory_admin:
        rows = memory_admin.vector_indexes(build=build, progress=progress)
    if as_json:
        emit_json(rows)
        return
    if not rows:
        click.echo("no embedding space is registered")
    for row in rows:
        state_text = ("built" if row["built"] else
                      f"not built: memdb builds it at {row['min_rows']} memories")
        click.echo(f"space {row['space_id']} ({row['model']}, {row['dims']} dims): "
                   f"{row['index']} {state_text}; the database holds {row['memories']} memories")
