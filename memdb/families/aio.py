"""``AsyncMemoryStore``: memdb on asyncio, the same operations as :class:`MemoryStore`.

>>> async with AsyncMemoryStore(tenant="acme") as store:          # doctest: +SKIP
...     await store.add("Alice prefers green tea", subject="alice")
...     hits = await store.search("what does alice drink?", subject="alice")
...     turn = await store.sessions.append("s1", "user", "你好")

Every operation is written once, in the synchronous classes. This module derives the async
classes from them: each public method becomes a coroutine with the same name, signature,
docstring and return type, which runs the synchronous body in a greenlet
(:func:`memdb.core.bridge.run`) whose I/O is awaited on the event loop: queries on psycopg's
``AsyncConnectionPool``, OpenAI-compatible calls on ``AsyncOpenAI``, the local embedder and
other blocking work in worker threads. Families (``store.sessions``, ``store.documents``...)
and the memory tool are derived the same way. Methods marked :func:`memdb.core.bridge.no_io`
(``store.tool()``, ``tool.schema()``) stay plain methods.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from typing import Any

from ..core import bridge
from ..core.family import Family
from .store import MemoryStore
from .tool import MemoryTool

__all__ = ["AsyncMemoryStore", "async_class"]

# Methods that do not open the store first (they end it).
_NO_OPEN = frozenset({"close"})


class _AsyncCore(MemoryStore):
    """The synchronous store whose database I/O runs on an ``AsyncConnectionPool``."""

    _driver = "async"


class _Facade:
    """An async face over one synchronous object (the store's core, a family, a tool)."""

    _sync: Any
    _root: Any  # the AsyncMemoryStore it belongs to (opens the store on first use)

    def _bind(self, sync: Any, root: Any) -> _Facade:
        self._sync, self._root = sync, root
        return self

    async def _ready(self) -> None:
        await self._root._ready()

    def _wrap(self, value: Any) -> Any:
        """Results that do I/O of their own (families, tools) get their async face."""
        if isinstance(value, (Family, MemoryTool)):
            return object.__new__(async_class(type(value)))._bind(value, self._root)
        return value

    def __dir__(self) -> list[str]:
        hidden = getattr(self._sync, "_hidden_names", frozenset())
        forwarded = [n for n in vars(self._sync) if not n.startswith("_")]
        return [n for n in {*super().__dir__(), *forwarded} if n not in hidden]

    def __getattr__(self, name: str) -> Any:
        """The sync object's public instance attributes (tenant, subject, gate, db...)."""
        if name.startswith("_"):
            raise AttributeError(name)
        return self._wrap(getattr(self._sync, name))

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_") or isinstance(getattr(type(self), name, None), property):
            object.__setattr__(self, name, value)
        else:
            setattr(self._sync, name, value)

    def __repr__(self) -> str:
        return f"Async{self._sync!r}"


def _coroutine(name: str, fn: Any) -> Any:
    opens = name not in _NO_OPEN

    @functools.wraps(fn)
    async def operation(self: _Facade, *args: Any, **kwargs: Any) -> Any:
        if opens:
            await self._ready()
        return self._wrap(await bridge.run(getattr(self._sync, name), *args, **kwargs))

    return operation


def _plain(name: str, fn: Any) -> Any:
    @functools.wraps(fn)
    def method(self: _Facade, *args: Any, **kwargs: Any) -> Any:
        return self._wrap(getattr(self._sync, name)(*args, **kwargs))

    return method


def _attribute(name: str, doc: str | None, writable: bool) -> property:
    def get(self: _Facade) -> Any:
        return self._wrap(getattr(self._sync, name))

    def set_(self: _Facade, value: Any) -> None:
        setattr(self._sync, name, value)

    return property(get, set_ if writable else None, doc=doc)


@functools.cache
def async_class(sync_cls: type, name: str | None = None, base: type = _Facade) -> type:
    """The async class of ``sync_cls``: every public method a coroutine running the sync
    body under the async driver (except :func:`~memdb.core.bridge.no_io` ones), every public
    property and attribute forwarded."""
    namespace: dict[str, Any] = {
        "__module__": __name__,
        "__doc__": f"Async face of :class:`{sync_cls.__module__}.{sync_cls.__qualname__}` "
                   f"(every operation a coroutine).\n\n{inspect.getdoc(sync_cls) or ''}",
    }
    for attr in dir(sync_cls):
        if attr.startswith("_"):
            continue
        raw = inspect.getattr_static(sync_cls, attr)
        if isinstance(raw, (staticmethod, classmethod)):
            namespace[attr] = raw
        elif inspect.isfunction(raw):
            wrap = _plain if getattr(raw, "__memdb_no_io__", False) else _coroutine
            namespace[attr] = wrap(attr, raw)
        elif isinstance(raw, property):
            namespace[attr] = _attribute(attr, raw.__doc__, raw.fset is not None)
        elif isinstance(raw, functools.cached_property):
            namespace[attr] = _attribute(attr, raw.__doc__, False)
        else:  # a class-level setting (trace_recall, recall_timeout_ms...)
            namespace[attr] = _attribute(attr, None, True)
    return type(name or f"Async{sync_cls.__name__}", (base,), namespace)


class _AsyncStoreBase(_Facade):
    """Construction and lifetime of :class:`AsyncMemoryStore` (the operations are derived)."""

    @functools.wraps(MemoryStore.__init__)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Validates everything and does no I/O: the server is found and the pool opened by
        # open() (``async with``) or the first operation.
        self._bind(_AsyncCore(*args, **kwargs), self)
        self._opened = False
        self._opening: asyncio.Lock | None = None

    async def _ready(self) -> None:
        if self._opened:
            return
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._opened:
                return
            await asyncio.to_thread(self._sync.db.connect)  # may start the embedded server
            await bridge.run(self._sync.open)
            self._opened = True

    async def __aenter__(self) -> Any:
        await self._ready()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()  # type: ignore[attr-defined]


AsyncMemoryStore = async_class(MemoryStore, "AsyncMemoryStore", _AsyncStoreBase)
AsyncMemoryStore.__doc__ = (
    "Long-term memory for one tenant, on asyncio: every operation of :class:`MemoryStore`, "
    "with the same name, parameters and results, as a coroutine.\n\n"
    "``async with AsyncMemoryStore(tenant=...) as store``; the pool is psycopg's "
    "``AsyncConnectionPool`` (``pool_size`` connections).\n\n" + (MemoryStore.__doc__ or ""))
