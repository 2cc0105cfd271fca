"""How one synchronous implementation also runs natively on asyncio (the async driver).

memdb's operations are written once, as ordinary synchronous code over a small I/O surface:
``Database`` connections and cursors, ``Embedder.embed_*``, ``ChatLLM.complete``, ``sleep``
and a bounded wait. :class:`memdb.AsyncMemoryStore` runs each operation's synchronous body in a
*greenlet* (:func:`run`); whenever that body reaches I/O, the I/O object calls :func:`wait`,
which suspends the greenlet and hands an awaitable to the coroutine that started it. The
coroutine awaits it on the event loop (an ``AsyncConnection`` query, an ``AsyncOpenAI``
request, a CPU-bound embedding in a worker thread) and resumes the greenlet with the result or
the exception. Outside :func:`run` the same calls simply block, so the synchronous store pays
nothing. This is the mechanism of SQLAlchemy's asyncio extension; memdb's version is the few
functions below.

Rules for library code: never hold a ``threading`` lock across I/O (a suspended greenlet holding
it would block the loop's thread); reach blocking work only through :func:`blocking` and
waits only through :func:`sleep` / :func:`bounded`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import greenlet

__all__ = ["run", "active", "wait", "blocking", "ahead", "sleep", "bounded", "sync_context",
           "no_io"]

T = TypeVar("T")


def no_io(fn: T) -> T:
    """Mark a public method that does no I/O: the async classes keep it a plain method."""
    fn.__memdb_no_io__ = True  # type: ignore[attr-defined]
    return fn


class _Worker(greenlet.greenlet):
    """A greenlet running one synchronous memdb operation for a coroutine."""


def active() -> bool:
    """Whether the caller runs inside :func:`run` (the async driver)."""
    return isinstance(greenlet.getcurrent(), _Worker)


async def run(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``fn(*args, **kwargs)`` in a greenlet; await every awaitable it hands over
    through :func:`wait`, on the running loop. Returns (or raises) what ``fn`` does."""
    worker = _Worker(fn, parent=greenlet.getcurrent())
    worker.gr_context = contextvars.copy_context()
    handed = worker.switch(*args, **kwargs)
    while not worker.dead:
        try:
            value = await handed
        except BaseException as exc:  # noqa: BLE001 (re-raised inside the greenlet)
            handed = worker.throw(exc)
        else:
            handed = worker.switch(value)
    return handed


def wait(awaitable: Awaitable[T]) -> T:
    """Suspend the running operation until ``awaitable`` (awaited by :func:`run`) is done."""
    current = greenlet.getcurrent()
    if not isinstance(current, _Worker):
        if asyncio.iscoroutine(awaitable):
            awaitable.close()  # never awaited: no "coroutine was never awaited" warning
        raise RuntimeError("async I/O outside the async driver (use AsyncMemoryStore)")
    return current.parent.switch(awaitable)


def blocking(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``; under the async driver in a worker thread, so CPU-bound or
    blocking work (the local embedder, a subprocess, alembic) never stalls the event loop."""
    if not active():
        return fn(*args, **kwargs)
    return wait(asyncio.to_thread(fn, *args, **kwargs))


_ahead_pool: tuple[int, ThreadPoolExecutor] | None = None
_ahead_lock = threading.Lock()


def ahead(fn: Callable[..., T], *args: Any, **kwargs: Any) -> Callable[[], T]:
    """Start ``fn(*args, **kwargs)`` now, beside the caller's own work; the returned function
    waits for its result (or raises its exception). Synchronously ``fn`` runs on a shared pool
    of worker threads; under the async driver in a greenlet of its own on the running loop
    (its I/O awaited there, blocking work in a worker thread through :func:`blocking`). What
    nobody waits for still runs to its end, and its error is dropped."""
    if active():
        task = asyncio.ensure_future(run(fn, *args, **kwargs))
        task.add_done_callback(_retrieve)  # an unwaited failure is not "never retrieved"
        return lambda: wait(task)
    global _ahead_pool
    with _ahead_lock:
        if _ahead_pool is None or _ahead_pool[0] != os.getpid():  # a forked child has no threads
            _ahead_pool = (os.getpid(), ThreadPoolExecutor(32, thread_name_prefix="memdb-ahead"))
        pool = _ahead_pool[1]
    return pool.submit(fn, *args, **kwargs).result


def _retrieve(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


def sleep(seconds: float) -> None:
    """Pause (``asyncio.sleep`` under the async driver)."""
    if active():
        wait(asyncio.sleep(seconds))
    else:
        time.sleep(seconds)


def bounded(fn: Callable[[], T], timeout: float, on_timeout: Callable[[], BaseException]) -> T:
    """``fn()``, waited for at most ``timeout`` seconds, else ``on_timeout()`` is raised.

    Synchronously ``fn`` runs in a daemon thread that is abandoned on timeout (its own client
    timeout ends it; it never holds up the process's exit). Under the async driver ``fn`` runs
    in a greenlet of its own, cancelled on timeout.
    """
    if active():
        try:
            return wait(asyncio.wait_for(run(fn), timeout))
        except TimeoutError:
            raise on_timeout() from None
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 (handed to the waiting thread)
            box["error"] = exc

    worker = threading.Thread(target=work, name="memdb-bounded", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise on_timeout()
    if "error" in box:
        raise box["error"]
    return box["value"]


@contextlib.contextmanager
def sync_context(manager: Any) -> Iterator[Any]:
    """An async context manager used as a synchronous one, under the async driver."""
    value = wait(manager.__aenter__())
    try:
        yield value
    except BaseException as exc:
        if not wait(manager.__aexit__(type(exc), exc, exc.__traceback__)):
            raise
    else:
        wait(manager.__aexit__(None, None, None))
