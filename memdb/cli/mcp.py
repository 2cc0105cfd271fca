"""``memdb mcp``: memdb as an MCP server, over stdio (default) or streamable HTTP.

    memdb mcp --tenant acme --subject alice          # stdio: Claude Desktop, any MCP client
    memdb mcp --http --port 8765                     # streamable HTTP at /mcp, API keys
    memdb mcp --http --port 0 --json                 # any free port; prints {"url": ...}
"""

from __future__ import annotations

import json
import socket

import click

from ._app import State, cli


@cli.command("mcp")
@click.option("--tenant", envvar="MEMDB_TENANT", show_envvar=True,
              help="The tenant every tool works in (default: memdb's --tenant). Over HTTP "
                   "with API keys, each caller's key decides instead.")
@click.option("--subject", envvar="MEMDB_SUBJECT", show_envvar=True,
              help="Confine the server to this subject: tools read and write only its "
                   "memories and take no subject argument (default: memdb's --as-subject).")
@click.option("--agent", envvar="MEMDB_AGENT", show_envvar=True,
              help="The agent recorded on the memories the tools write.")
@click.option("--http", "http", is_flag=True,
              help="Serve streamable HTTP (endpoint /mcp) instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="--http: address to bind.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535),
              help="--http: port (0: any free).")
@click.option("--no-keys", is_flag=True,
              help="--http: no API keys; every caller gets the configured tenant (only "
                   "behind something that authenticates).")
@click.option("--max-ingest-chunks", default=64, show_default=True, type=click.IntRange(1),
              help="Most chunks one add_document call may write (more: a TooLarge tool "
                   "error before any embedding; bigger documents: `memdb documents ingest`).")
@click.option("--json", "as_json", is_flag=True,
              help="--http: print where it listens as one JSON line ({\"url\": ...}) on "
                   "stdout before serving (without it: one line on stderr). Refused without "
                   "--http: over stdio, stdout is the protocol.")
@click.pass_obj
def mcp_command(state: State, tenant: str | None, subject: str | None, agent: str | None,
                http: bool, host: str, port: int, no_keys: bool, as_json: bool,
                max_ingest_chunks: int = 64) -> None:
    """Serve memdb's tools (remember, search, recall, get, update, forget, context,
    add_document, ask) and resources (memdb://profile/{subject}, mem:// URIs) over MCP.

    The scope is fixed here, never by a tool argument: stdio serves --tenant (and --subject);
    over --http each request's API key (Authorization: Bearer) selects its tenant and subject
    (`memdb keys create`), and a wrong key gets 401.
    """
    if as_json and not http:
        raise click.UsageError("--json needs --http: over stdio, stdout is the MCP protocol "
                               "channel")
    from .. import mcp as door  # needs memdb[mcp]

    options = {"dsn": None if state.dsn_from_env else state.dsn,
               "tenant": tenant or state.tenant, "subject": subject or state.subject,
               "agent": agent, "max_ingest_chunks": max_ingest_chunks}
    if http:
        if port == 0:  # choose the free port here, so that it can be printed
            with socket.socket() as probe:
                probe.bind((host, 0))
                port = probe.getsockname()[1]
        url = f"http://{host}:{port}/mcp"
        if as_json:
            click.echo(json.dumps({"url": url, "transport": "streamable-http",
                                   "keys": not no_keys}))
        else:
            click.echo(f"memdb mcp: {url} (streamable HTTP; "
                       + ("no API keys" if no_keys else "API keys: Authorization: Bearer")
                       + ")", err=True)
        door.run_http(host=host, port=port, authenticate=None if no_keys else "keys",
                      **options)
    else:
        door.run_stdio(**options)
