"""Runs memdb's HTTP door (memdb.http) under a real uvicorn on a free loopback port, in a
thread of the test process, for tests that talk to it with a real HTTP client (httpx)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx


class RunningDoor:
    def __init__(self, app: Any, server: Any, url: str) -> None:
        self.app, self.server, self.url = app, server, url

    def client(self, key: str | None = None, **kwargs: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60, **kwargs)

    def async_client(self, key: str | None = None) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=60)


@contextlib.contextmanager
def running_door(settings: Any) -> Iterator[RunningDoor]:
    import uvicorn

    from memdb.http import create_app

    app = create_app(settings)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="info", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the HTTP door did not start")
        time.sleep(0.05)
    try:
        yield RunningDoor(app, server, f"http://127.0.0.1:{port}")
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
