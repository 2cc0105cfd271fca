"""What the doors (``memdb serve``, ``memdb mcp``) hold while they run, written once for both.

- :class:`KeyChecker`: an API key -> its :class:`~memdb.families.keys.Binding` (or None), the one
  synchronous :func:`memdb.families.keys.lookup`
  run under the async driver (:func:`memdb.core.bridge.run`)
  on a ``Database(driver="async")``: no worker-thread hop per request, and pooled connections
  are probed before use, so connections the server dropped are replaced, not failed requests.
- :class:`StoreCache`: one :class:`~memdb.AsyncMemoryStore` per (tenant, subject), opened on
  first use and kept; beyond ``max_open`` the least recently used stores *no request is
  using* are closed (a store in use is never closed under its caller).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any

from .core import bridge
from .core.connection import Database
from .families import keys as _keys
from .families.aio import AsyncMemoryStore

__all__ = ["KeyChecker", "StoreCache", "UNAUTHORIZED"]

# The one answer of both doors (HTTP, MCP over HTTP) to a request without a valid key (401).
UNAUTHORIZED = "a valid API key is required (Authorization: Bearer <key>)"


class KeyChecker:
    """Checks the API keys presented to a door: ``await checker.check(key)`` is the key's
    binding, or None (absent, malformed, unknown, revoked). A database that cannot be reached
    is a :class:`~memdb.core.errors.DatabaseUnavailable` (its DSN's password masked).

    ``dsn``: the data path's login (the application login is enough; default ``$MEMDB_DSN``,
    else the embedded server). The pool (``max_size`` connections) opens on the first check or
    :meth:`open`; :meth:`close` ends it.
    """

    def __init__(self, dsn: str | None = None, *, max_size: int = 4) -> None:
        self.db = Database(dsn, min_size=1, max_size=max_size, driver="async")
        self._opened = False
        self._opening: asyncio.Lock | None = None

    async def open(self) -> None:
        """Find the server and open the pool (else the first check does). Idempotent."""
        if self._opened:
            return
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if not self._opened:
                await asyncio.to_thread(self.db.connect)  # may start the embedded server
                await bridge.run(lambda: self.db.pool)
                self._opened = True

    async def check(self, key: object) -> _keys.Binding | None:
        if _keys.parse_key(key) is None:  # garbage costs no round trip
            return None
        await self.open()
        return await bridge.run(_keys.lookup, self.db, key)

    async def close(self) -> None:
        await bridge.run(self.db.close)
        self._opened = False


class _Entry:
    __slots__ = ("store", "users")

    def __init__(self, store: Any) -> None:
        self.store, self.users = store, 0


class StoreCache:
    """The open stores of a door, one per (tenant, subject), least recently used first.

    ``async with cache.store(tenant, subject) as store`` hands out the (tenant, subject) store,
    counted as in use until the block ends. Over ``max_open`` (read at each call, so it can be
    changed while serving) the least recently used stores no request is using are closed;
    while every store is in use the cache stays over the bound until they are released.
    """

    def __init__(self, dsn: str | None = None, *, embedder: Any = None, pool_size: int = 2,
                 max_open: int = 32) -> None:
        self.dsn, self.embedder, self.pool_size, self.max_open = dsn, embedder, pool_size, max_open
        self._entries: OrderedDict[tuple[str, str | None], _Entry] = OrderedDict()
        self._lock = asyncio.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @contextlib.asynccontextmanager
    async def store(self, tenant: str, subject: str | None = None) -> AsyncIterator[Any]:
        slot = (tenant, subject)
        closing: list[Any] = []
        async with self._lock:
            entry = self._entries.pop(slot, None)
            if entry is None:  # opened by its first operation (outside this lock)
                entry = _Entry(AsyncMemoryStore(self.dsn, tenant=tenant, subject=subject,
                                                embedder=self.embedder,
                                                pool_size=self.pool_size))
            self._entries[slot] = entry  # the most recently used, last
            entry.users += 1
            for other_slot, other in list(self._entries.items()):
                if len(self._entries) <= self.max_open:
                    break
                if other.users == 0:
                    del self._entries[other_slot]
                    closing.append(other.store)
        for old in closing:
            with contextlib.suppress(Exception):
                await old.close()
        try:
            yield entry.store
        finally:
            entry.users -= 1

    async def close(self) -> None:
        """Close every store (at shutdown)."""
        async with self._lock:
            entries = list(self._entries.values())
            self._entries.clear()
        for entry in entries:
            with contextlib.suppress(Exception):
                await entry.store.close()
