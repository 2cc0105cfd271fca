"""``memdb serve``: the HTTP API (FastAPI on uvicorn, :mod:`memdb.http`), authenticated by the
API keys of ``memdb keys``. Bound to 127.0.0.1 unless --host says otherwise."""

from __future__ import annotations

import socket

import click

from ._app import State, cli, emit_json, json_option
from ._shared import FINITE


def _server_options(fn):  # type: ignore[no-untyped-def]
    """The options `memdb serve` and `memdb ui` share."""
    for option in reversed(_OPTIONS):
        fn = option(fn)
    return fn


_OPTIONS = [
    click.option("--host", default="127.0.0.1", show_default=True,
                 help="Interface to bind (0.0.0.0: every interface; put TLS in front)."),
    click.option("--port", default=8765, show_default=True, type=int,
                 help="TCP port (0: any free)."),
    click.option("--mcp", "with_mcp", is_flag=True,
                 help="Also serve the MCP streamable-HTTP endpoint at /mcp (needs memdb[mcp])."),
    click.option("--cors-origin", "cors_origins", multiple=True, metavar="ORIGIN",
                 help="Allow browser calls from this origin (repeatable). Default: no CORS."),
    click.option("--max-body", default=1_048_576, show_default=True, type=int,
                 help="Largest request body in bytes (larger: 413)."),
    click.option("--rate", default=20.0, show_default=True, type=FINITE,
                 help="Requests per second allowed per key (token bucket; over it: 429)."),
    click.option("--burst", default=40, show_default=True, type=int,
                 help="Requests a key may make at once before the rate applies."),
    click.option("--auth-failure-rate", default=1.0, show_default=True, type=FINITE,
                 help="Failed authentications per second allowed per client address, after a "
                      "burst of 30 (then 429); 0: no limit (behind a proxy all clients share "
                      "its address)."),
    click.option("--max-ingest-chunks", default=64, show_default=True, type=click.IntRange(1),
                 help="Most chunks one document-ingest request may write (HTTP and MCP; "
                      "larger: 413 before any embedding). Ingest bigger documents with "
                      "`memdb documents ingest`."),
    click.option("--max-stores", default=32, show_default=True, type=int,
                 help="Open stores kept (one per tenant and subject; least recently used "
                      "closed)."),
    click.option("--log-level", default="info", show_default=True,
                 type=click.Choice(["critical", "error", "warning", "info", "debug"]),
                 help="uvicorn's log level (the access log is at info)."),
]


@cli.command("serve")
@_server_options
@click.option("--ui", "with_ui", is_flag=True,
              help="Also serve the memory browser's pages at /ui (see `memdb ui`).")
@click.option("--worker/--no-worker", "with_worker", default=True, show_default=True,
              help="Run a job worker in this process (every tenant's jobs: remember with "
                   "wait false...); --no-worker when `memdb worker` runs elsewhere.")
@json_option
@click.pass_obj
def serve(state: State, host: str, port: int, with_mcp: bool, cors_origins: tuple[str, ...],
          max_body: int, rate: float, burst: int, auth_failure_rate: float, max_stores: int,
          log_level: str, as_json: bool, with_ui: bool = False,
          max_ingest_chunks: int = 64, with_worker: bool = True) -> None:
    """Serve the HTTP API (OpenAPI document at /openapi.json, docs at /docs). Every request
    carries an API key: `Authorization: Bearer mdb_...` (or `X-API-Key`); the key selects the
    tenant and subject, row-level security does the rest. --json prints where it listens as
    one JSON document first."""
    from ..http import ServerSettings, run

    settings = ServerSettings(
        dsn=None if state.dsn_from_env else state.dsn, cors_origins=tuple(cors_origins),
        max_body_bytes=max_body, rate_per_second=rate, burst=burst, max_stores=max_stores,
        auth_failures_per_second=auth_failure_rate, max_ingest_chunks=max_ingest_chunks,
        mcp=with_mcp, host=host, ui=with_ui)
    if port == 0:  # choose the free port here, so that it can be printed
        with socket.socket() as probe:
            probe.bind((host, 0))
            port = probe.getsockname()[1]
    url = f"http://{host}:{port}"
    if as_json:
        emit_json({"url": url, "openapi": f"{url}/openapi.json",
                   "mcp": f"{url}/mcp" if with_mcp else None,
                   "ui": f"{url}/ui/" if with_ui else None})
    else:
        click.echo(f"memdb serve: {url} (OpenAPI: {url}/openapi.json"
                   + (f"; memory browser: {url}/ui/" if with_ui else "") + ")", err=True)
    worker = _worker(settings.dsn) if with_worker else None
    try:
        run(settings, host=host, port=port, log_level=log_level)
    finally:
        if worker is not None:
            worker.stop()


def _worker(dsn: str | None):  # type: ignore[no-untyped-def]
    """An in-process job worker for every tenant (background threads; docs/jobs.md)."""
    from ..families.jobs import Worker
    from ..families.store import MemoryStore

    return Worker(dsn, store_factory=lambda tenant: MemoryStore(dsn, tenant=tenant,
                                                                pool_size=2)).start()


@cli.command("ui")
@_server_options
@json_option
@click.pass_context
def ui(ctx: click.Context, **options: object) -> None:
    """The memory browser: `memdb serve --ui`, the HTTP API with HTML pages at /ui/ (log in
    with an API key from `memdb keys create`; the key is kept in an HttpOnly cookie). Opens
    no browser by itself: open the printed address."""
    ctx.invoke(serve, with_ui=True, **options)
