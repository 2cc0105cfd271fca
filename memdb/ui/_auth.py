"""The browser's session: the API key is entered once on the login form and kept in an
HttpOnly, SameSite=Strict cookie scoped to /ui (never in a URL, never logged). Every page
resolves it to its tenant and subject through the door's key checker, as the API does.
Forms that change something carry a CSRF token derived from the key (HMAC with a secret of
this process), checked on POST. The login form, sent before there is a key, is refused when the
browser says it comes from another site (:func:`same_origin`)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any
from urllib.parse import parse_qs, urlsplit

from fastapi import Request

from ..families.keys import Binding

__all__ = ["COOKIE", "TENANT_COOKIE", "LoginNeeded", "binding_of", "csrf_token", "check_csrf",
           "form_of", "same_origin"]

COOKIE = "memdb_ui"
TENANT_COOKIE = "memdb_ui_tenant"  # the tenant an admin key browses
_SECRET = secrets.token_bytes(32)


class LoginNeeded(Exception):
    """No live key in the cookie: the page answers with the login form."""

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message


class TooMany(Exception):
    def __init__(self, retry_after: str) -> None:
        super().__init__(retry_after)
        self.retry_after = retry_after


async def check_key(request: Request, key: str | None) -> Binding | None:
    """The key's binding, counting failures per client address like the API (429 after)."""
    door: Any = request.app.state.door
    client = request.client.host if request.client else "-"
    if door.failures.peek(client) > 0:
        raise TooMany(door.failures.retry_after(door.failures.peek(client)))
    binding = await door.authenticate(key)
    if binding is None:
        if key:
            door.failures.take(client)
        return None
    wait = door.limiter.take(binding.key_id)
    if wait > 0:
        raise TooMany(door.limiter.retry_after(wait))
    request.state.key_id = binding.key_id
    return binding


async def binding_of(request: Request) -> tuple[Binding, str]:
    """(binding, key) of the cookie, else :class:`LoginNeeded`."""
    key = request.cookies.get(COOKIE)
    binding = await check_key(request, key)
    if binding is None or key is None:
        raise LoginNeeded("your key is no longer valid: log in again" if key else "")
    return binding, key


def csrf_token(key: str) -> str:
    return hmac.new(_SECRET, key.encode(), hashlib.sha256).hexdigest()[:40]


def check_csrf(key: str, token: str | None) -> bool:
    return bool(token) and hmac.compare_digest(csrf_token(key), token or "")


async def form_of(request: Request) -> dict[str, str]:
    """The url-encoded form body, first value of each field."""
    body = (await request.body()).decode("utf-8", "replace")
    return {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}


def same_origin(request: Request) -> bool:
    """Whether a browser's POST comes from this site's own pages: ``Sec-Fetch-Site`` (set by
    the browser, not by the page) must say ``same-origin`` (or ``none``: typed by the user);
    without it, an ``Origin`` header must name this host (``null`` does not). A request with
    neither header is not a browser's cross-site form (curl, scripts) and passes."""
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return site.lower() in ("same-origin", "none")
    origin = request.headers.get("origin")
    if origin is None:
        return True
    parts = urlsplit(origin)
    host = request.headers.get("host", "")
    return bool(parts.scheme in ("http", "https") and parts.netloc) \
        and parts.netloc.lower() == host.lower()
