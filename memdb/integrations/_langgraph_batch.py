"""Concurrent async calls of one LangGraph store share batches, as LangGraph's
``AsyncBatchedBaseStore`` groups them: thousands of concurrent ``aget``/``aput`` calls become a
few ``_batch`` runs, one at a time per event loop, instead of thousands of waits for a pooled
connection.

Unlike ``AsyncBatchedBaseStore`` (which needs a running loop when the store is made and fails
every call of a batch when one op fails), a :class:`Batcher` starts its worker on the loop of
the first call, stops it when the queue is empty, and when a shared batch fails reruns each
caller's own ops alone, so an error reaches only the caller whose op caused it.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["Batcher"]

_Entry = tuple["asyncio.Future[list[Any]]", list[Any]]


class Batcher:
    """``await batcher.submit(ops)``: ``run(ops)``'s results for these ops, run together with
    the ops other tasks submitted meanwhile (in submission order, so the last put of a key
    wins, and reads run before puts, as in every LangGraph store's batch)."""

    def __init__(self, run: Callable[[list[Any]], Awaitable[list[Any]]]) -> None:
        self._run = run
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop,
                                                tuple[asyncio.Queue[_Entry],
                                                      list[asyncio.Task[None] | None]]] = (
            weakref.WeakKeyDictionary())

    async def submit(self, ops: list[Any]) -> list[Any]:
        loop = asyncio.get_running_loop()
        if loop not in self._queues:
            self._queues[loop] = (asyncio.Queue(), [None])
        queue, worker = self._queues[loop]
        future: asyncio.Future[list[Any]] = loop.create_future()
        queue.put_nowait((future, ops))
        if worker[0] is None or worker[0].done():
            worker[0] = loop.create_task(self._work(queue))
        return await future

    async def _work(self, queue: asyncio.Queue[_Entry]) -> None:
        while not queue.empty():  # exits when idle; submit starts it again
            entries: list[_Entry] = []
            while not queue.empty():
                entry = queue.get_nowait()
                if not entry[0].done():  # a cancelled caller's ops are dropped
                    entries.append(entry)
            if entries:
                await self._serve(entries)

    async def _serve(self, entries: list[_Entry]) -> None:
        if len(entries) > 1:
            try:
                results = await self._run([op for _, ops in entries for op in ops])
            except Exception:  # noqa: BLE001 (each caller's ops are rerun alone below)
                pass
            else:
                start = 0
                for future, ops in entries:
                    if not future.done():
                        future.set_result(results[start:start + len(ops)])
                    start += len(ops)
                return
        for future, ops in entries:
            try:
                result = await self._run(ops)
            except Exception as exc:  # noqa: BLE001 (handed to the caller)
                if not future.done():
                    future.set_exception(exc)
            else:
                if not future.done():
                    future.set_result(result)
