"""Runs memdb's HTTP door (memdb.http) under a real uvicorn on a free loopback port, in a
thread of the test process, for tests that talk to it with a real HTTP client (httpx)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx


def make_keys(dsn: str, embedder: Any) -> dict[str, str]:
    """API keys on the database ``dsn`` (an admin login): "acme" (tenant-wide), "alice"
    (tenant acme, subject alice), "globex" (tenant-wide), "admin", "revoked" (acme's, revoked).
    The embedder's space is registered first (`memdb migrate` with it configured): the
    application login the door runs as may not create one."""
    from memdb import MemoryAdmin, MemoryStore
    from memdb.families.keys import create_key, revoke_key

    with MemoryStore(dsn, tenant="setup", embedder=embedder, gate=None) as setup:
        setup.add("registers the embedding space")
    with MemoryAdmin(dsn) as admin:
        made = {
            "acme": create_key(admin, tenant="acme", name="acme team"),
            "alice": create_key(admin, tenant="acme", subject="alice", name="alice"),
            "globex": create_key(admin, tenant="globex", name="globex team"),
            "admin": create_key(admin, is_admin=True, name="ops"),
            "revoked": create_key(admin, tenant="acme", name="old"),
        }
        revoke_key(admin, made["revoked"].info.key_id)
    return {name: created.key for name, created in made.items()}


def door_settings(app_dsn: str, admin_dsn: str, embedder: Any, **overrides: Any) -> Any:
    """The test door's settings: small caps (body 64,000 bytes, k 50, pages 200) that tests
    can reach, rate limits out of the way."""
    from memdb.http import ServerSettings

    values: dict[str, Any] = {"max_body_bytes": 64_000, "max_k": 50, "max_page": 200,
                              "rate_per_second": 1000, "burst": 1000,
                              "auth_failure_burst": 1000}
    values.update(overrides)
    return ServerSettings(dsn=app_dsn, admin_dsn=admin_dsn, embedder=embedder, **values)


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


@contextlib.contextmanager
def served_door(admin_dsn: str, embedder: Any, **overrides: Any) -> Iterator[RunningDoor]:
    """The HTTP door on a real application login (tests/app_login.py) of the database at
    ``admin_dsn``, with ``door_settings(..., **overrides)``, for the ``with`` block."""
    from tests.app_login import app_login

    with app_login(admin_dsn) as app_dsn, \
            running_door(door_settings(app_dsn, admin_dsn, embedder, **overrides)) as running:
        yield running


@dataclass
class DoorProcess:
    """A `memdb serve`/`memdb ui` process: where it listens (its --json line), its output."""

    where: dict[str, Any]
    output: str = ""


@contextlib.contextmanager
def door_process(admin_dsn: str, app_dsn: str, command: str = "serve") -> Iterator[DoorProcess]:
    """``memdb COMMAND --port 0 --json`` as a process of its own (the console command), the data
    path the application login ``app_dsn`` ($MEMDB_DSN); yields once /v1/health answers. After
    the block, ``output`` holds what the process printed (stdout and stderr)."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "MEMDB_DSN": app_dsn, "MEMDB_ADMIN_DSN": admin_dsn,
           "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "memdb.cli", command, "--port", "0",
                             "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    running = DoorProcess({})
    try:
        lines: list[str] = []
        while not lines or lines[-1].strip() != "}":
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            lines.append(line)
        running.where = json.loads("".join(lines))
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(running.where["url"] + "/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        yield running
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
        running.output = out + err
