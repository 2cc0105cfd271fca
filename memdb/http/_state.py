"""What the running door holds: the key checker and the stores it has opened (one
:class:`~memdb.AsyncMemoryStore` per tenant and subject, least recently used closed first),
both shared with the MCP door (:mod:`memdb._doors`), the shared embedder and, for admin keys,
a :class:`~memdb.MemoryAdmin`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from .._doors import KeyChecker, StoreCache
from ..core.autoschema import owns_server
from ..core.connection import Database
from ..families import keys as _keys
from ._limits import RateLimiter
from ._settings import ServerSettings

__all__ = ["DoorState"]

LOGGER = logging.getLogger("memdb.http")


class DoorState:
    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self.limiter = RateLimiter(settings.rate_per_second, settings.burst)
        self.failures = RateLimiter(settings.auth_failures_per_second,
                                    settings.auth_failure_burst)
        self.db: Database | None = None
        self.embedder: Any = settings.embedder
        self.stores: StoreCache | None = None
        self.keys: KeyChecker | None = None
        self._admin: Any = None
        self._admin_lock = asyncio.Lock()

    async def start(self) -> None:
        """Find the server (starting the embedded one when no DSN is given), open the small
        pool that checks keys, load the embedder once."""
        self.db = await asyncio.to_thread(Database, self.settings.dsn, min_size=1, max_size=1)
        self.keys = KeyChecker(self.db.dsn)
        await self.keys.open()
        if self.embedder is None:
            from ..core.embeddings import embedder_from_env

            self.embedder = await asyncio.to_thread(embedder_from_env)
        # on the embedded server the stores open it themselves (no DSN), like every other
        # door's: memdb owns that server, so a store registers its embedding space on first use
        self.stores = StoreCache(None if owns_server(self.db) else self.db.dsn,
                                 embedder=self.embedder,
                                 pool_size=self.settings.pool_size,
                                 max_open=self.settings.max_stores)

    async def stop(self) -> None:
        if self.stores is not None:
            await self.stores.close()
        if self._admin is not None:
            await asyncio.to_thread(self._admin.close)
            self._admin = None
        if self.keys is not None:
            await self.keys.close()
            self.keys = None
        if self.db is not None:
            await asyncio.to_thread(self.db.close)
            self.db = None

    async def authenticate(self, key: str | None) -> _keys.Binding | None:
        if not key or self.keys is None:
            return None
        return await self.keys.check(key)

    @contextlib.asynccontextmanager
    async def store(self, tenant: str, subject: str | None) -> AsyncIterator[Any]:
        """The store of (tenant, subject), opened on first use and kept for the next request."""
        assert self.stores is not None
        async with self.stores.store(tenant, subject) as store:
            yield store

    @property
    def open_stores(self) -> int:
        return 0 if self.stores is None else len(self.stores)

    async def admin(self) -> Any:
        """The admin login's MemoryAdmin (for admin keys), connected on first use."""
        async with self._admin_lock:
            if self._admin is None:
                from ..families.admin import MemoryAdmin

                assert self.db is not None
                dsn = self.settings.admin_dsn or self.db.admin_dsn
                self._admin = await asyncio.to_thread(MemoryAdmin, dsn)
            return self._admin
