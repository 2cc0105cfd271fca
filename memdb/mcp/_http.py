"""Streamable HTTP for the MCP server: the SDK's ASGI app behind memdb's API-key check.

Every request must carry ``Authorization: Bearer <key>``; ``authenticate(key)`` (awaited
when it is a coroutine function, like memdb's key checker; else run in a worker thread: it
may query the database) returns the key's :class:`Scope` or None. No key,
an unknown or revoked key: 401 with ``WWW-Authenticate: Bearer``; an admin key (no tenant):
403, since every MCP tool works inside one tenant. The scope is put on the request
(``scope["memdb.scope"]``), where the tool handlers read it, per request: a session id
opened with one key gives another key nothing but its own scope. The key itself is never
logged nor echoed.

Without ``authenticate`` (no API keys configured) the server's configured scope serves every
caller: bind to 127.0.0.1 (the default) or put it behind something that authenticates.
"""

from __future__ import annotations

import contextlib
import inspect
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio.to_thread
from starlette.applications import Starlette

from ._server import SCOPE_KEY, MemdbMcp, Scope

__all__ = ["ADMIN", "BearerAuth", "build_app", "call_authenticate"]

ADMIN = object()  # what authenticate returns for a valid admin key (no tenant)
Authenticate = Callable[[str], "Scope | object | None"]


async def call_authenticate(authenticate: Authenticate, token: str) -> Any:
    """``authenticate(token)``: awaited when it is a coroutine function, else in a thread."""
    if inspect.iscoroutinefunction(authenticate):
        return await authenticate(token)
    return await anyio.to_thread.run_sync(authenticate, token)


async def _close(close: Any) -> None:
    if inspect.iscoroutinefunction(close):
        await close()
    else:
        await anyio.to_thread.run_sync(close)


def _bearer(scope: dict[str, Any]) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            kind, _, token = value.decode("latin-1").partition(" ")
            if kind.lower() == "bearer" and token.strip():
                return token.strip()
            return None
    return None


async def _refuse(send: Any, status: int, kind: str, message: str) -> None:
    body = json.dumps({"error": {"type": kind, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="memdb"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class BearerAuth:
    """ASGI middleware: the API key in ``Authorization: Bearer`` selects the caller's scope."""

    def __init__(self, app: Any, authenticate: Authenticate) -> None:
        self.app, self.authenticate = app, authenticate

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = _bearer(scope)
        found = None if token is None else await call_authenticate(self.authenticate, token)
        if found is ADMIN:
            await _refuse(send, 403, "Forbidden", "an admin key has no tenant: use a tenant's "
                                                  "key for the MCP server")
            return
        if not isinstance(found, Scope):
            await _refuse(send, 401, "Unauthorized", "missing or invalid API key (send "
                                                     "Authorization: Bearer <key>)")
            return
        await self.app({**scope, SCOPE_KEY: found}, receive, send)


def build_app(mcp: MemdbMcp, *, authenticate: Authenticate | None = None, path: str = "/mcp",
              host: str = "127.0.0.1") -> Starlette:
    """The Starlette app serving ``mcp`` over streamable HTTP at ``path``.

    Its lifespan runs the SDK's session manager and closes the stores at the end: an app that
    mounts this one must enter ``app.router.lifespan_context(app)`` in its own lifespan.
    """
    inner = mcp.server.streamable_http_app(streamable_http_path=path, host=host)
    inner_lifespan = inner.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            async with inner_lifespan(inner):
                yield
        finally:
            await mcp.stores.close()
            close = getattr(authenticate, "close", None)
            if close is not None:
                await _close(close)

    app = Starlette(lifespan=lifespan)
    app.mount("/", inner if authenticate is None else BearerAuth(inner, authenticate))
    return app
