"""The door's limits: request body size (an ASGI middleware, 413) and a per-key rate limit
(a token bucket in this process, 429 with Retry-After)."""

from __future__ import annotations

import json
import math
import time
from collections import OrderedDict
from typing import Any

__all__ = ["BodyLimit", "RateLimiter", "error_body"]


def error_body(kind: str, message: str) -> bytes:
    return json.dumps({"error": {"type": kind, "message": message}},
                      ensure_ascii=False).encode("utf-8")


class _TooLarge(Exception):
    pass


class BodyLimit:
    """Refuses a request whose body is over ``limit`` bytes with 413, by its Content-Length
    before reading anything, else while it streams in (chunked bodies). ``prefixes`` gives
    paths starting with a prefix a limit of their own (file uploads)."""

    def __init__(self, app: Any, limit: int, prefixes: dict[str, int] | None = None) -> None:
        self.app, self.limit = app, limit
        self.prefixes = dict(prefixes or {})

    def _limit(self, scope: Any) -> int:
        path = scope.get("path", "")
        for prefix, limit in self.prefixes.items():
            if path == prefix or path.startswith(prefix + "/"):
                return limit
        return self.limit

    async def _refuse(self, send: Any, limit: int) -> None:
        body = error_body("PayloadTooLarge", f"the request body is over {limit} bytes")
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self._limit(scope)
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > limit:
                    await self._refuse(send, limit)
                    return
        seen = 0
        started = refused = False

        async def limited_receive() -> Any:
            nonlocal seen, refused
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    # answer now: the framework may turn any error raised while it reads the
                    # body into a 400 of its own, which tracking_send then drops
                    if not started and not refused:
                        refused = True
                        await self._refuse(send, limit)
                    raise _TooLarge
            return message

        async def tracking_send(message: Any) -> None:
            nonlocal started
            if refused:
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started and not refused:
                await self._refuse(send, limit)


class RateLimiter:
    """One token bucket per key id: ``rate`` tokens a second up to ``burst``. At most
    ``max_keys`` buckets are kept (least recently used dropped: a dropped key starts full)."""

    def __init__(self, rate: float, burst: int, max_keys: int = 10_000) -> None:
        self.rate, self.burst, self.max_keys = float(rate), max(1, int(burst)), max_keys
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def take(self, key: str, now: float | None = None) -> float:
        """0 when the request may go ahead (a token taken), else the seconds to wait."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic() if now is None else now
        tokens, last = self._buckets.pop(key, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - last) * self.rate)
        wait = 0.0
        if tokens >= 1.0:
            tokens -= 1.0
        else:
            wait = (1.0 - tokens) / self.rate
        self._buckets[key] = (tokens, now)
        while len(self._buckets) > self.max_keys:
            self._buckets.popitem(last=False)
        return wait

    def peek(self, key: str, now: float | None = None) -> float:
        """The seconds until ``key`` has a token again (0: it has one now); takes nothing."""
        if self.rate <= 0 or key not in self._buckets:
            return 0.0
        now = time.monotonic() if now is None else now
        tokens, last = self._buckets[key]
        tokens = min(float(self.burst), tokens + (now - last) * self.rate)
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate

    @staticmethod
    def retry_after(wait: float) -> str:
        return str(max(1, math.ceil(wait)))
