"""Run the synchronous tests against the async driver too.

For the core-behaviour test modules (conftest.BOTH_DRIVERS) every test runs twice: with
``MemoryStore`` as it is, and with ``MemoryStore`` (the name in the test module and the
``store`` fixtures) replaced by :class:`OnAsyncDriver`, which builds a real
:class:`memdb.AsyncMemoryStore` and runs each of its coroutines to completion on one event loop
in a background thread. The test's own code stays synchronous; every store call it makes goes
through the async driver (AsyncConnectionPool, greenlet bridge, embedder in worker threads).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any

from memdb.families.aio import AsyncMemoryStore, _Facade

__all__ = ["OnAsyncDriver", "run"]

_loop: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()


def _event_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="memdb-test-loop",
                             daemon=True).start()
        return _loop


def run(coro: Any) -> Any:
    """Run ``coro`` on the test event loop and return its result (or raise its error)."""
    return asyncio.run_coroutine_threadsafe(coro, _event_loop()).result(timeout=300)


class _Blocking:
    """The coroutines of an async face, each awaited to completion on the test loop."""

    def __init__(self, target: Any) -> None:
        object.__setattr__(self, "_target", target)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if inspect.iscoroutinefunction(value):
            def call(*args: Any, **kwargs: Any) -> Any:
                return _wrapped(run(value(*args, **kwargs)))
            return call
        if callable(value) and not isinstance(value, type):
            def plain(*args: Any, **kwargs: Any) -> Any:
                return _wrapped(value(*args, **kwargs))
            return plain
        return _wrapped(value)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._target, name, value)

    def __repr__(self) -> str:
        return f"OnAsyncDriver({self._target!r})"


def _wrapped(value: Any) -> Any:
    return _Blocking(value) if isinstance(value, _Facade) else value


class OnAsyncDriver(_Blocking):
    """``MemoryStore(...)`` for the tests, on the async driver. A test reaching the store's
    core or a private helper (``store.core.transaction()`` for a SQL-level check) gets a
    synchronous twin's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(AsyncMemoryStore(*args, **kwargs))
        object.__setattr__(self, "_twin_args", (args, kwargs))
        object.__setattr__(self, "_twin", None)

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("_") and name != "core":
            return super().__getattr__(name)
        if self._twin is None:
            from memdb import MemoryStore

            args, kwargs = self._twin_args
            object.__setattr__(self, "_twin", MemoryStore(*args, **kwargs))
        return getattr(self._twin, name)

    def __enter__(self) -> OnAsyncDriver:
        run(self._target.open())
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        run(self._target.close())
        if self._twin is not None:
            self._twin.close()
