"""Streamable HTTP for the MCP server: the SDK's ASGI app behind memdb's API-key check.

Every request must carry ``Authorization: Bearer <key>``; ``authenticate(key)`` (awaited
when it is a coroutine function, like memdb's key checker; else run in a worker thread: it
may query the database) returns the key's :class:`Scope` or None. No key,
an unknown or revoked key: 401 with ``WWW-Authenticate: Bearer``; an admin key (no tenant):
403, since every MCP tool works inside one tenant. The scope is put on the request
(``scope["memdb.scope"]``), where the tool handlers read it, per request: a session id
opened with one key gives another key nothing but its own scope. A session belongs to the
key that opened it: a request carrying its ``mcp-session-id`` with any other key (or an id
this process did not hand out) is answered 404, as if there were no such session, and the
session lives on. The key itself is never logged nor echoed (only its SHA-256 is kept).

Without ``authenticate`` (no API keys configured) the server's configured scope serves every
caller: bind to 127.0.0.1 (the default) or put it behind something that authenticates.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import inspect
import json
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio.to_thread
from starlette.applications import Starlette

from .._doors import UNAUTHORIZED
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


MAX_SESSIONS = 10_000  # owners remembered; the oldest session beyond is ended for its key
_SESSION_HEADER = b"mcp-session-id"


def _header(scope: dict[str, Any], wanted: bytes) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == wanted:
            return value.decode("latin-1")
    return None


class BearerAuth:
    """ASGI middleware: the API key in ``Authorization: Bearer`` selects the caller's scope,
    and each MCP session is tied to the key that opened it (see the module docstring)."""

    def __init__(self, app: Any, authenticate: Authenticate) -> None:
        self.app, self.authenticate = app, authenticate
        self.owners: OrderedDict[str, bytes] = OrderedDict()  # session id -> SHA-256 of key

    async def _bound(self, scope: dict[str, Any], receive: Any, send: Any, token: str) -> None:
        """Run the request if its session (if any) is the key's; record new sessions."""
        digest = hashlib.sha256(token.encode()).digest()
        session = _header(scope, _SESSION_HEADER)
        if session is not None:
            owner = self.owners.get(session)
            if owner is None or not hmac.compare_digest(owner, digest):
                await _refuse(send, 404, "NotFound", "no such MCP session for this key")
                return

        async def recording_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                opened = dict(message.get("headers", ())).get(_SESSION_HEADER)
                if opened is not None and session is None:
                    self.owners[opened.decode("latin-1")] = digest
                    while len(self.owners) > MAX_SESSIONS:
                        self.owners.popitem(last=False)
                elif session is not None and scope.get("method") == "DELETE" \
                        and message.get("status", 500) < 300:
                    self.owners.pop(session, None)
            await send(message)

        await self.app(scope, receive, recording_send)

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
            await _refuse(send, 401, "Unauthorized", UNAUTHORIZED)
            return
        assert token is not None
        await self._bound({**scope, SCOPE_KEY: found}, receive, send, token)


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
