"""Copies of the migrated test template, made ahead of time and dropped behind.

A test's fresh database is ``CREATE DATABASE ... TEMPLATE memdb_test_template``: 0.2-0.5 s of
the server's time on a 2-core machine (the copy writes the template's ~10 MB, mostly
PostgreSQL's own catalogs), and its ``DROP DATABASE`` afterwards a few tens of milliseconds.
A test mostly keeps one core busy (the client and its backend take turns), so a thread makes
the next copies while the test runs and drops the used ones after it: each test still gets a
database no other test has touched, without waiting for it. Every operation opens its own
short connection (no connection is shared with the test's threads or survives a fork).
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import deque

import psycopg


def create_database(admin_dsn: str, name: str, template: str | None = None) -> None:
    """``CREATE DATABASE name`` (a copy of ``template`` when given); names are the tests' own."""
    copy = f" TEMPLATE {template}" if template else ""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}{copy}")


def drop_database(admin_dsn: str, name: str) -> None:
    """``DROP DATABASE IF EXISTS name WITH (FORCE)``: connections a test left open end."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


class TemplateCopies:
    """Hands out new copies of ``template`` on the server of ``admin_dsn`` (its maintenance
    database), keeping ``ahead`` of them made in advance; :meth:`give_back` drops one in the
    background, :meth:`close` waits for the drops and drops the copies nobody took."""

    def __init__(self, admin_dsn: str, template: str, prefix: str, ahead: int = 2) -> None:
        self._dsn = admin_dsn
        self._template = template
        self._prefix = f"{prefix}{os.getpid()}_"
        self._names = itertools.count()
        self._ahead = ahead
        self._ready: deque[str] = deque()
        self._to_drop: deque[str] = deque()
        self._error: BaseException | None = None
        self._closing = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._work, name="test-db-copies", daemon=True)
        self._thread.start()

    def take(self) -> str:
        """The name of a new copy, made ahead when one is ready, else now."""
        with self._cond:
            name = self._ready.popleft() if self._ready else None
            self._cond.notify_all()
        if name is None:
            name = self._new_name()
            create_database(self._dsn, name, self._template)
        return name

    def give_back(self, name: str) -> None:
        """Drop ``name`` (with FORCE: connections a test left open end) in the background."""
        with self._cond:
            self._to_drop.append(name)
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._thread.join()
        for name in list(self._ready):
            drop_database(self._dsn, name)
        self._ready.clear()
        if self._error is not None:
            raise RuntimeError(f"making or dropping a test database failed: {self._error}")

    def _new_name(self) -> str:
        return f"{self._prefix}{next(self._names)}"

    def _work(self) -> None:
        while True:
            with self._cond:
                while not (self._to_drop or self._closing
                           or (len(self._ready) < self._ahead and self._error is None)):
                    self._cond.wait()
                if self._to_drop:
                    job = ("drop", self._to_drop.popleft())
                elif self._closing:
                    return
                else:
                    job = ("create", self._new_name())
            try:
                if job[0] == "drop":
                    drop_database(self._dsn, job[1])
                else:
                    create_database(self._dsn, job[1], self._template)
                    with self._cond:
                        self._ready.append(job[1])
            except Exception as exc:  # reported at close; take() then makes copies itself
                with self._cond:
                    self._error = exc
