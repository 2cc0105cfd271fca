"""memdb as an MCP server (``memdb mcp``), on the official MCP Python SDK (``memdb[mcp]``).

Tools: remember, search, recall, get, update, forget, context, add_document, ask (their
descriptions and schemas share one source with the OpenAI memory tool, :mod:`memdb.families.tool`);
resources: ``memdb://profile/{subject}`` (a subject's profile) and ``mem://{subject}/
{category}/{id}`` (one memory). See docs/mcp.md.

The scope (tenant, optionally subject and agent) is the server's configuration, or over
HTTP the caller's API key; no tool argument can change the tenant, and a server (or key)
bound to a subject reaches only that subject.

- :func:`create_server`: the :class:`MemdbMcp` (``.server`` is the SDK's low-level Server);
- :func:`serve_stdio` / :func:`run_stdio`: serve it on stdin/stdout (``memdb mcp``);
- :func:`streamable_http_app`: the streamable-HTTP ASGI app (endpoint ``/mcp``) with the
  API-key check; the HTTP door mounts it in ``memdb serve --mcp`` (its lifespan must be
  entered by the host app: ``async with mcp_app.router.lifespan_context(mcp_app): ...``);
- :func:`run_http`: serve that app with uvicorn (``memdb mcp --http``);
- :func:`keys_authenticator`: API key -> :class:`Scope` through :mod:`memdb.families.keys` (the
  HTTP door's own key checker, :class:`memdb._doors.KeyChecker`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.errors import MissingDependency

try:
    import mcp as _sdk  # noqa: F401
except ImportError:  # pragma: no cover (the extra is installed in dev)
    raise MissingDependency("the MCP server needs the MCP SDK: pip install 'memdb[mcp]'") from None

from .._doors import StoreCache
from ._http import ADMIN, BearerAuth, build_app, call_authenticate
from ._server import MAX_INGEST_CHUNKS, PROFILE_SCHEME, MemdbMcp, Scope
from ._tools import TOOLS, ToolSpec, input_schema

__all__ = ["Scope", "MemdbMcp", "StoreCache", "TOOLS", "ToolSpec", "input_schema", "ADMIN",
           "BearerAuth", "PROFILE_SCHEME", "create_server", "serve_stdio", "run_stdio",
           "streamable_http_app", "run_http", "keys_authenticator"]

_KEYS = "keys"  # authenticate="keys": memdb's API keys (memdb.families.keys), when available


def create_server(*, dsn: str | None = None, tenant: str | None = "default",
                  subject: str | None = None, agent: str | None = None, embedder: Any = None,
                  pool_size: int = 2, require_request_scope: bool = False,
                  max_ingest_chunks: int | None = MAX_INGEST_CHUNKS) -> MemdbMcp:
    """The MCP server over the database ``dsn`` (default ``$MEMDB_DSN``, else the embedded
    server), for the scope ``tenant``/``subject``/``agent`` (None with
    ``require_request_scope``: every request brings its own, from its API key);
    ``max_ingest_chunks``: the most chunks one ``add_document`` call may write."""
    scope = None if tenant is None else Scope(tenant, subject, agent)
    return MemdbMcp(StoreCache(dsn, embedder=embedder, pool_size=pool_size), scope,
                    require_request_scope=require_request_scope,
                    max_ingest_chunks=max_ingest_chunks)


async def serve_stdio(server: MemdbMcp) -> None:
    """Serve ``server`` on this process's stdin/stdout until the client closes them."""
    from mcp.server.stdio import stdio_server

    try:
        async with stdio_server() as (read, write):
            await server.server.run(read, write, server.server.create_initialization_options())
    finally:
        await server.stores.close()


def run_stdio(**options: Any) -> None:
    """``memdb mcp``: :func:`create_server` with ``options``, served over stdio."""
    import anyio

    anyio.run(serve_stdio, create_server(**options))


def keys_authenticator(dsn: str | None = None) -> Callable[[str], Any] | None:
    """API key -> :class:`Scope` (or :data:`ADMIN`, or None) through memdb's API keys: a
    coroutine function on a :class:`memdb._doors.KeyChecker` (a small pool of its own:
    ``await authenticate.close()``); None when this memdb has no API keys."""
    try:
        from .._doors import KeyChecker
    except ImportError:  # pragma: no cover (the keys land with the HTTP door)
        return None

    checker = KeyChecker(dsn, max_size=2)

    async def authenticate(token: str) -> Any:
        found = await checker.check(token)
        if found is None:
            return None
        if found.is_admin or found.tenant is None:
            return ADMIN
        return Scope(found.tenant, found.subject)

    authenticate.close = checker.close  # type: ignore[attr-defined]
    return authenticate


def _with_agent(authenticate: Callable[[str], Any], agent: str) -> Callable[[str], Any]:
    """``authenticate`` whose scopes record ``agent`` on what the tools write."""
    async def with_agent(token: str) -> Any:
        found = await call_authenticate(authenticate, token)
        return Scope(found.tenant, found.subject, agent) if isinstance(found, Scope) else found

    with_agent.close = getattr(authenticate, "close", None)  # type: ignore[attr-defined]
    return with_agent


def streamable_http_app(*, dsn: str | None = None, tenant: str | None = None,
                        subject: str | None = None, agent: str | None = None,
                        authenticate: Callable[[str], Any] | str | None = _KEYS,
                        embedder: Any = None, pool_size: int = 2, path: str = "/mcp",
                        host: str = "127.0.0.1",
                        max_ingest_chunks: int | None = MAX_INGEST_CHUNKS) -> Any:
    """The MCP server as a streamable-HTTP ASGI (Starlette) app, endpoint ``path``.

    ``authenticate``: ``"keys"`` (default: memdb's API keys; without them, the configured
    ``tenant`` serves every caller), a function key -> :class:`Scope` / :data:`ADMIN` / None
    (a coroutine function, or a plain one run in a worker thread), or None (no key check:
    the configured scope for everyone). ``host``: the host the app is served on (127.0.0.1
    turns on the SDK's DNS-rebinding protection). ``max_ingest_chunks``: the most chunks one
    ``add_document`` call may write.
    """
    if authenticate == _KEYS:
        authenticate = keys_authenticator(dsn)
    if authenticate is not None and agent is not None:
        authenticate = _with_agent(authenticate, agent)
    if authenticate is None and tenant is None:
        tenant = "default"
    server = create_server(dsn=dsn, tenant=tenant, subject=subject, agent=agent,
                           embedder=embedder, pool_size=pool_size,
                           require_request_scope=authenticate is not None,
                           max_ingest_chunks=max_ingest_chunks)
    assert not isinstance(authenticate, str)
    return build_app(server, authenticate=authenticate, path=path, host=host)


def run_http(*, host: str = "127.0.0.1", port: int = 8765, **options: Any) -> None:
    """``memdb mcp --http``: :func:`streamable_http_app` served by uvicorn."""
    import uvicorn

    app = streamable_http_app(host=host, **options)
    uvicorn.run(app, host=host, port=port, log_level="warning")
