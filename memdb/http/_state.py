"""What the running door holds: the data-path connection that checks keys, the stores it has
opened (one :class:`~memdb.AsyncMemoryStore` per tenant and subject, least recently used closed
first), the shared embedder and, for admin keys, a :class:`~memdb.MemoryAdmin`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any

import psycopg

from .. import keys as _keys
from ..aio import AsyncMemoryStore
from ..connection import Database
from ..errors import translate
from ._limits import RateLimiter
from ._settings import ServerSettings

__all__ = ["DoorState"]

LOGGER = logging.getLogger("memdb.http")


class _Entry:
    def __init__(self, store: Any) -> None:
        self.store, self.users = store, 0


class DoorState:
    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self.limiter = RateLimiter(settings.rate_per_second, settings.burst)
        self.failures = RateLimiter(settings.auth_failures_per_second,
                                    settings.auth_failure_burst)
        self.db: Database | None = None
        self.embedder: Any = settings.embedder
        self._stores: OrderedDict[tuple[str, str | None], _Entry] = OrderedDict()
        self._lock = asyncio.Lock()
        self._admin: Any = None
        self._admin_lock = asyncio.Lock()
        self._keys_pool: Any = None

    async def start(self) -> None:
        """Find the server (starting the embedded one when no DSN is given), open the small
        pool that checks keys, load the embedder once."""
        from psycopg_pool import AsyncConnectionPool

        self.db = await asyncio.to_thread(Database, self.settings.dsn, min_size=1, max_size=1)
        # check=: a connection the server dropped while idle is replaced, not a failed request
        self._keys_pool = AsyncConnectionPool(self.db.dsn, min_size=1, max_size=4, open=False,
                                              check=AsyncConnectionPool.check_connection,
                                              kwargs={"autocommit": True,
                                                      "application_name": "memdb-http"})
        await self._keys_pool.open(wait=True, timeout=30)
        if self.embedder is None:
            from ..embeddings import embedder_from_env

            self.embedder = await asyncio.to_thread(embedder_from_env)

    async def stop(self) -> None:
        async with self._lock:
            entries = list(self._stores.values())
            self._stores.clear()
        for entry in entries:
            with contextlib.suppress(Exception):
                await entry.store.close()
        if self._admin is not None:
            await asyncio.to_thread(self._admin.close)
            self._admin = None
        if self._keys_pool is not None:
            await self._keys_pool.close()
            self._keys_pool = None
        if self.db is not None:
            await asyncio.to_thread(self.db.close)
            self.db = None

    async def authenticate(self, key: str | None) -> _keys.Binding | None:
        if not key or self._keys_pool is None or _keys.parse_key(key) is None:
            return None
        try:
            async with self._keys_pool.connection() as conn:
                return await _keys.lookup_async(conn, key)
        except psycopg.Error as exc:  # the pool's timeout too: the database is not there
            raise translate(exc) from None

    @contextlib.asynccontextmanager
    async def store(self, tenant: str, subject: str | None) -> AsyncIterator[Any]:
        """The store of (tenant, subject), opened on first use and kept for the next request."""
        assert self.db is not None
        slot = (tenant, subject)
        closing: list[Any] = []
        async with self._lock:
            entry = self._stores.pop(slot, None)
            if entry is None:
                entry = _Entry(AsyncMemoryStore(self.db.dsn, tenant=tenant, subject=subject,
                                                embedder=self.embedder,
                                                pool_size=self.settings.pool_size))
            self._stores[slot] = entry
            entry.users += 1
            # over the bound: close the least recently used stores no request is using
            for other_slot, other in list(self._stores.items()):
                if len(self._stores) <= self.settings.max_stores:
                    break
                if other.users == 0 and other_slot != slot:
                    del self._stores[other_slot]
                    closing.append(other.store)
        for old in closing:
            with contextlib.suppress(Exception):
                await old.close()
        try:
            yield entry.store
        finally:
            entry.users -= 1

    @property
    def open_stores(self) -> int:
        return len(self._stores)

    async def admin(self) -> Any:
        """The admin login's MemoryAdmin (for admin keys), connected on first use."""
        async with self._admin_lock:
            if self._admin is None:
                from ..admin import MemoryAdmin

                assert self.db is not None
                dsn = self.settings.admin_dsn or self.db.admin_dsn
                self._admin = await asyncio.to_thread(MemoryAdmin, dsn)
            return self._admin
