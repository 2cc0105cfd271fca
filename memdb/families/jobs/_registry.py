"""Handlers by job kind: what a worker runs for each job.

A handler is ``fn(ctx: JobContext) -> dict | None``, called inside the job's transaction
(``ctx.conn``, confined by row-level security to the job's tenant). What it writes through
``ctx.conn`` commits together with the job's completion, so a worker killed mid-job leaves no
effect behind and the retry applies it once. Its return value (JSON) is the job's ``result``.
Raising fails the attempt (retried with backoff); :class:`PermanentFailure` makes it dead.

>>> from memdb.families.jobs import handlers
>>> @handlers.handler("demo.echo")
... def echo(ctx):
...     return {"echo": ctx.job.payload}
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ...core.errors import InvalidInput

__all__ = ["Registry", "Handler", "handlers", "KIND"]

KIND = re.compile(r"^[a-z][a-z0-9_.:-]{0,63}$")  # the CHECK of memdb.jobs.kind
Handler = Callable[[Any], Any]


def check_kind(kind: str) -> str:
    if not isinstance(kind, str) or not KIND.match(kind):
        raise InvalidInput(f"a job kind is 1-64 characters [a-z0-9_.:-] starting with a "
                           f"letter, got {kind!r}")
    return kind


class Registry:
    """Job kinds and their handlers. ``memdb.families.jobs.handlers`` is the default one every
    worker
    uses unless given another."""

    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}

    def register(self, kind: str, fn: Handler, *, replace: bool = False) -> Handler:
        """Run ``fn`` for jobs of ``kind``; a kind already registered is refused unless
        ``replace``."""
        check_kind(kind)
        if not callable(fn):
            raise InvalidInput(f"the handler of {kind!r} is not callable")
        if kind in self._handlers and not replace and self._handlers[kind] is not fn:
            raise InvalidInput(f"job kind {kind!r} already has a handler")
        self._handlers[kind] = fn
        return fn

    def handler(self, kind: str, *, replace: bool = False) -> Callable[[Handler], Handler]:
        """Decorator form of :meth:`register`."""
        return lambda fn: self.register(kind, fn, replace=replace)

    def unregister(self, kind: str) -> None:
        self._handlers.pop(kind, None)

    def get(self, kind: str) -> Handler | None:
        return self._handlers.get(kind)

    def kinds(self) -> list[str]:
        return sorted(self._handlers)

    def __contains__(self, kind: object) -> bool:
        return kind in self._handlers


handlers = Registry()
