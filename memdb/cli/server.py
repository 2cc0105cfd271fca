"""``memdb server``: the embedded server of $MEMDB_HOME (status, stop, psql).

These commands concern the embedded server only (not a server named by --dsn or $MEMDB_DSN),
and status and stop never start it.
"""

from __future__ import annotations

import subprocess

import click
from psycopg.conninfo import make_conninfo

from ..core import embedded
from ..core import validate as v
from ..shell.control import stop_daemons
from ._app import CliError, State, cli, emit_json, json_option


@cli.group()
def server() -> None:
    """The embedded PostgreSQL of $MEMDB_HOME (default: the per-user data folder).

    It is started by the first memdb process that needs it and stopped when the last live
    process using it exits: from the shell, that is the memdb daemon, which keeps it (and the
    model) up for $MEMDB_KEEP_ALIVE seconds (default 300) after the last command.
    `server stop` ends the daemon and stops the server at once.
    """


@server.command("status")
@json_option
def server_status(as_json: bool) -> None:
    """Whether the embedded server runs, which processes use it, and the psql command lines
    for the data-path login (memdb_user) and the admin (postgres)."""
    status = embedded.server_status()
    if as_json:
        emit_json(status)
        return
    if not status["initialized"]:
        click.echo(f"no embedded server in {status['home']} (made by the first memdb command)")
        return
    if not status["running"]:
        click.echo(f"embedded server in {status['home']}: not running "
                   "(started by the next memdb command)")
        return
    clients = ", ".join(map(str, status["clients"])) or "none (stop it with `memdb server stop`)"
    click.echo(f"embedded server in {status['home']}: running, pid {status['pid']}, socket "
               f"{status['socket_dir']} port {status['port']}")
    click.echo(f"processes using it: {clients}")
    click.echo(f"log: {status['log']}")
    restart = (f" ({status['shared_buffers_at_start']} after `memdb server stop` and the next "
               "command, unless ALTER SYSTEM set it)" if status["shared_buffers_restart"] else "")
    click.echo(f"shared_buffers: {status['shared_buffers']}{restart}")
    click.echo(f"psql as the app login (memdb_user, row-level security):\n  {status['psql_app']}")
    click.echo(f"psql as the admin (superuser postgres):\n  {status['psql_admin']}")


@server.command("stop")
@click.option("--force", is_flag=True,
              help="Stop it even while other processes use it (their connections are closed).")
@json_option
def server_stop(force: bool, as_json: bool) -> None:
    """Stop the embedded server (a fast shutdown: open transactions are rolled back). Refused
    while other live processes use it, unless --force. The shell daemons of this home
    ($MEMDB_KEEP_ALIVE) are stopped first, whatever their keep-alive."""
    daemons = stop_daemons()
    result = embedded.stop_server(force=force)
    result["daemons"] = daemons
    if daemons and not as_json:
        click.echo(f"stopped the memdb shell daemon(s) of {result['home']} (pid "
                   f"{', '.join(map(str, daemons))})")
    if as_json:
        emit_json(result)
    if result["clients"] and not result["stopped"]:
        pids = ", ".join(map(str, result["clients"]))
        raise CliError(f"not stopped: the embedded server (pid {result['pid']}) is in use by "
                       f"process(es) {pids}; it stops when the last of them exits "
                       "(--force stops it now)")
    if as_json:
        return
    if daemons and result["reason"] == "not running":
        click.echo(f"the embedded server in {result['home']} stopped with it")
    elif result["stopped"]:
        extra = (f"; closed the connections of process(es) "
                 f"{', '.join(map(str, result['clients']))}" if result["clients"] else "")
        click.echo(f"stopped the embedded server in {result['home']} (pid {result['pid']})"
                   + extra)
    else:
        click.echo(f"nothing to stop in {result['home']}: {result['reason']}")


@server.command("psql", context_settings={"ignore_unknown_options": True})
@click.option("--admin", "as_admin", is_flag=True,
              help="As the superuser postgres (default: the app login memdb_user).")
@click.option("--tenant", metavar="TENANT",
              help="As memdb_user: the tenant the session sees and writes (memdb.tenant; "
                   "default: memdb's --tenant, `default`). Not used with --admin.")
@click.argument("psql_args", nargs=-1, type=click.UNPROCESSED)
@click.pass_obj
def server_psql(state: State, as_admin: bool, tenant: str | None,
                psql_args: tuple[str, ...]) -> None:
    """Run the bundled psql on the embedded server's database memdb, keeping the server up
    while it runs; arguments after the options go to psql (memdb server psql -- -c 'SELECT 1').
    As memdb_user the session starts with memdb.tenant set to --tenant (default `default`),
    so the SQL of docs/sql.md runs as pasted; SET memdb.tenant = '...' switches tenants."""
    tenant = v.name(tenant or state.tenant, "tenant")
    handle = embedded.EmbeddedServer()
    handle.start()
    try:
        dsn = handle.dsn() if as_admin else make_conninfo(
            handle.app_dsn(), options=f"-c memdb.tenant={_option_value(tenant)}")
        code = subprocess.call([str(embedded.psql_path()), dsn, *psql_args])
    finally:
        handle.stop()
    if code:
        raise click.exceptions.Exit(code)


def _option_value(value: str) -> str:
    """``value`` inside libpq's ``options`` (a backslash escapes a space or a backslash)."""
    return value.replace("\\", "\\\\").replace(" ", "\\ ")
