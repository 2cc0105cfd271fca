"""One scripted session through every door, compared: the doors behave the same.

The doors: the sync store, the async store, the CLI (click's runner, ``--json``), the HTTP API
(a real uvicorn, httpx with a tenant key), MCP over stdio (the SDK's client spawning ``memdb
mcp``), MCP over streamable HTTP (the SDK's client, the same key) and the memory tool's
dispatcher. Each door works in a tenant of its own, on one database, and runs the same steps:
add a memory for two subjects (English and Chinese), search with and without a subject, a blank
query, ``k`` at 0, 1 and the limit, an unknown id, another tenant's id, a bad option (an unknown
category), forget, and get after forgetting. Each step's outcome is normalized (the contents
found, or the error's type) and every door must give the same as the sync store.

The memory tool is bound to one subject by its host (the model never chooses whose memories it
reads): its "without a subject" search is its bound subject's (here grace's), a deliberate
difference (see docs/operations.md).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from memdb import AsyncMemoryStore, MemoryAdmin, MemoryStore
from memdb.core.errors import MemdbError
from memdb.core.ops.catalog import MAX_K
from memdb.families.keys import create_key
from tests.app_login import app_login
from tests.cli_helpers import run as cli_run
from tests.http_server import running_door
from tests.test_mcp import http_session, stdio_session

pytest.importorskip("mcp")

GRACE = "Grace has a dog named Lucky."
ZHANG = "张伟喜欢喝乌龙茶，每天早上一杯。"


def outcome(fn: Callable[[], Any]) -> Any:
    """The step's normalized result, or ``("error", type name)``."""
    try:
        return fn()
    except MemdbError as exc:
        return ("error", type(exc).__name__)


class DoorError(Exception):
    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def _found(contents: list[str]) -> tuple[str, ...]:
    """Which of the two memories a search found (by marker), best first."""
    return tuple("grace" if "Lucky" in c else "zhang" if "乌龙茶" in c else "other"
                 for c in contents)


def script(door: Any, foreign_id: str) -> dict[str, Any]:
    """The session, step by step, through ``door`` (an object with add, search, get,
    delete); returns each step's normalized result."""
    steps: dict[str, Any] = {}

    def step(name: str, fn: Callable[[], Any]) -> Any:
        try:
            steps[name] = fn()
        except DoorError as exc:
            steps[name] = ("error", exc.kind)
        return steps[name]

    grace_id = step("add grace", lambda: door.add(GRACE, "grace"))
    step("add zhang", lambda: door.add(ZHANG, "zhangwei"))
    steps["add grace"] = "id" if isinstance(grace_id, str) else grace_id
    steps["add zhang"] = "id" if isinstance(steps["add zhang"], str) else steps["add zhang"]
    step("search dog, no subject", lambda: _found(door.search("dog Lucky", None)))
    step("search tea, no subject", lambda: _found(door.search("乌龙茶", None)))
    step("search tea, subject grace", lambda: _found(door.search("乌龙茶", "grace")))
    step("search tea, subject zhangwei", lambda: _found(door.search("乌龙茶", "zhangwei")))
    step("blank query", lambda: _found(door.search("   ", None)))
    step("k 0", lambda: _found(door.search("dog", None, k=0)))
    step("k 1", lambda: len(door.search("dog Lucky 乌龙茶", None, k=1)))
    step("k at the limit", lambda: _found(door.search("dog Lucky", None, k=MAX_K)))
    step("k over the limit", lambda: _found(door.search("dog", None, k=MAX_K + 1)))
    step("bad category", lambda: _found(door.search("dog", None, category="nope")))
    step("unknown id", lambda: door.get(str(uuid.uuid4())))
    step("another tenant's id", lambda: door.get(foreign_id))
    if isinstance(grace_id, str):
        step("get", lambda: _found([door.get(grace_id)]))
        step("forget", lambda: door.delete(grace_id) or "forgotten")
        step("get after forget", lambda: door.get(grace_id))
        step("search after forget", lambda: _found(door.search("dog Lucky", None)))
    return steps


# -- the doors --------------------------------------------------------------------------------
class StoreDoor:
    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def _call(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except MemdbError as exc:
            raise DoorError(type(exc).__name__) from None

    def add(self, text: str, subject: str) -> str:
        result = self._call(lambda: self.store.add(text, subject=subject, source_id="parity:1"))
        return str(result.id)

    def search(self, query: str, subject: str | None, *, k: int = 10,
               category: str | None = None) -> list[str]:
        extra: dict[str, Any] = {}
        if subject is not None:
            extra["subject"] = subject
        if category is not None:
            extra["category"] = category
        return [h.memory.content for h in self._call(
            lambda: self.store.search(query, k, **extra))]

    def get(self, ref: str) -> str:
        return self._call(lambda: self.store.get(ref)).content

    def delete(self, ref: str) -> None:
        self._call(lambda: self.store.delete(ref))


class AsyncDoor(StoreDoor):
    """The async store, driven from a private event loop."""

    def __init__(self, store: AsyncMemoryStore, loop: asyncio.AbstractEventLoop) -> None:
        self.store, self.loop = store, loop  # type: ignore[assignment]

    def _call(self, fn: Callable[[], Any]) -> Any:
        async def go() -> Any:
            return await fn()
        try:
            return self.loop.run_until_complete(go())
        except MemdbError as exc:
            raise DoorError(type(exc).__name__) from None


class CliDoor:
    def __init__(self, dsn: str, tenant: str) -> None:
        self.dsn, self.tenant = dsn, tenant

    def _json(self, *args: str) -> Any:
        result = cli_run(self.dsn, "--tenant", self.tenant, *args, "--json")
        body = json.loads(result.stdout) if result.stdout.strip() else {}
        if result.exit_code != 0:
            raise DoorError(body.get("error", {}).get("type", f"exit {result.exit_code}"))
        return body

    def add(self, text: str, subject: str) -> str:
        return self._json("add", text, "--subject", subject, "--source-id", "parity:1")["id"]

    def search(self, query: str, subject: str | None, *, k: int = 10,
               category: str | None = None) -> list[str]:
        args = ["search", query, "-k", str(k)]
        if subject is not None:
            args += ["--subject", subject]
        if category is not None:
            args += ["--category", category]
        return [h["memory"]["content"] for h in self._json(*args)["hits"]]

    def get(self, ref: str) -> str:
        return self._json("get", ref)["content"]

    def delete(self, ref: str) -> None:
        self._json("delete", ref)


class HttpDoor:
    def __init__(self, client: Any) -> None:
        self.client = client

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        r = self.client.request(method, path, **kwargs)
        body = r.json() if r.content else {}
        if r.status_code >= 400:
            raise DoorError(body.get("error", {}).get("type", f"HTTP {r.status_code}"))
        return body

    def add(self, text: str, subject: str) -> str:
        return self._call("POST", "/v1/memories", json={"content": text, "subject": subject,
                                                        "source_id": "parity:1"})["id"]

    def search(self, query: str, subject: str | None, *, k: int = 10,
               category: str | None = None) -> list[str]:
        body: dict[str, Any] = {"query": query, "k": k}
        if subject is not None:
            body["subject"] = subject
        if category is not None:
            body["filter"] = {"category": category}
        return [h["memory"]["content"] for h in self._call("POST", "/v1/search",
                                                           json=body)["hits"]]

    def get(self, ref: str) -> str:
        return self._call("GET", f"/v1/memories/{ref}")["content"]

    def delete(self, ref: str) -> None:
        self._call("DELETE", f"/v1/memories/{ref}")


class McpDoor:
    """An MCP client session (stdio or streamable HTTP) on a private event loop."""

    def __init__(self, session: Any, runner: Callable[[Any], Any]) -> None:
        self.session, self.runner = session, runner

    def _call(self, tool: str, **arguments: Any) -> Any:
        result = self.runner(self.session.call_tool(tool, arguments))
        body = json.loads(result.content[0].text)
        if result.is_error:
            raise DoorError(body["error"]["type"])
        return body

    def add(self, text: str, subject: str) -> str:
        return self._call("remember", content=text, subject=subject)["id"]

    def search(self, query: str, subject: str | None, *, k: int = 10,
               category: str | None = None) -> list[str]:
        args: dict[str, Any] = {"query": query, "k": k}
        if subject is not None:
            args["subject"] = subject
        if category is not None:
            args["category"] = category
        return [h["content"] for h in self._call("search", **args)["results"]]

    def get(self, ref: str) -> str:
        return self._call("get", memory=ref)["memory"]["content"]

    def delete(self, ref: str) -> None:
        self._call("forget", id=ref)


class ToolDoor:
    """The memory tool's dispatcher, bound to a subject per call by its host."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def _call(self, subject: str | None, **arguments: Any) -> Any:
        tool = self.store.tool(subject=subject, source_id="parity:1")
        result = tool.run({"id": "call-1", "name": "memory", "arguments": arguments})
        if not result.get("ok"):
            raise DoorError(result["error"]["type"])
        return result

    def add(self, text: str, subject: str) -> str:
        return self._call(subject, action="add", content=text)["id"]

    def search(self, query: str, subject: str | None, *, k: int = 10,
               category: str | None = None) -> list[str]:
        args: dict[str, Any] = {"action": "search", "query": query, "k": k}
        if category is not None:
            args["category"] = category
        return [h["content"] for h in self._call(subject or "grace", **args)["results"]]

    def get(self, ref: str) -> str:
        try:  # the tool has no get: its host reads by id
            return self.store.get(ref).content
        except MemdbError as exc:
            raise DoorError(type(exc).__name__) from None

    def delete(self, ref: str) -> None:
        self._call("grace", action="remove", id=ref)


# -- the test ---------------------------------------------------------------------------------
def _mcp_steps(factory: Callable[[], Any], foreign_id: str) -> dict[str, Any]:
    """The script through an MCP session opened by ``factory`` (an async context manager),
    run in a worker thread of one event loop: the SDK's sessions are async."""
    async def main() -> dict[str, Any]:
        async with factory() as session:
            loop_token = anyio.lowlevel.current_token()

            def runner(coro: Any) -> Any:
                return anyio.from_thread.run(lambda: coro, token=loop_token)

            return await anyio.to_thread.run_sync(
                lambda: script(McpDoor(session, runner), foreign_id))
    return anyio.run(main)


def test_every_door_behaves_the_same(module_db, embedder):
    with MemoryStore(module_db, tenant="other", embedder=embedder, gate=None) as other:
        foreign_id = str(other.add("Another tenant's secret: the vault code is 1234.",
                                   subject="grace").id)
    tenants = ("store", "async", "cli", "http", "mcp-stdio", "mcp-http", "tool")
    with MemoryAdmin(module_db) as admin:
        keys = {t: create_key(admin, tenant=f"parity-{t}").key for t in ("http", "mcp-http")}
    results: dict[str, dict[str, Any]] = {}

    with MemoryStore(module_db, tenant="parity-store", embedder=embedder) as store:
        results["store"] = script(StoreDoor(store), foreign_id)
    loop = asyncio.new_event_loop()
    try:
        store_async = AsyncMemoryStore(module_db, tenant="parity-async", embedder=embedder)
        results["async"] = script(AsyncDoor(store_async, loop), foreign_id)
        loop.run_until_complete(store_async.close())
    finally:
        loop.close()
    results["cli"] = script(CliDoor(module_db, "parity-cli"), foreign_id)
    with MemoryStore(module_db, tenant="parity-tool", embedder=embedder) as store:
        results["tool"] = script(ToolDoor(store), foreign_id)
    results["mcp-stdio"] = _mcp_steps(
        lambda: stdio_session(module_db, "--tenant", "parity-mcp-stdio"), foreign_id)
    with app_login(module_db) as app_dsn:
        from memdb.http import ServerSettings

        settings = ServerSettings(dsn=app_dsn, embedder=embedder, mcp=True, max_k=MAX_K)
        with running_door(settings) as door:
            with door.client(keys["http"]) as client:
                results["http"] = script(HttpDoor(client), foreign_id)
            with door.client() as anonymous:  # no key: the same 401 body at both doors
                rest = anonymous.post("/v1/search", json={"query": "tea"})
                mcp = anonymous.post("/mcp", json={"jsonrpc": "2.0", "id": 1,
                                                   "method": "tools/list"},
                                     headers={"Accept": "application/json, text/event-stream"})
            assert rest.status_code == mcp.status_code == 401
            assert rest.json() == mcp.json()
            results["mcp-http"] = _mcp_steps(lambda: http_session(door.url + "/mcp",
                                                                  keys["mcp-http"]), foreign_id)

    print(json.dumps(results, ensure_ascii=False, indent=1, default=str))
    expected = results["store"]
    assert expected["search dog, no subject"][0] == "grace"
    assert expected["search tea, no subject"][0] == "zhang"
    assert expected["search tea, subject grace"] == ("grace",)
    assert expected["search tea, subject zhangwei"] == ("zhang",)
    assert expected["blank query"] == ()
    assert expected["k 0"] == ("error", "InvalidInput")
    assert expected["k 1"] == 1
    assert expected["k over the limit"] == ("error", "InvalidInput")
    assert expected["unknown id"] == ("error", "NotFound")
    assert expected["another tenant's id"] == ("error", "NotFound")
    assert expected["get after forget"] == ("error", "NotFound")
    bound = {"search dog, no subject": ("grace",), "search tea, no subject": ("grace",),
             "k at the limit": ("grace",), "search after forget": ()}  # bound to grace
    differences = {}
    for door in tenants[1:]:
        want = {**expected, **bound} if door == "tool" else expected
        diff = {step: (want.get(step), got) for step, got in results[door].items()
                if want.get(step) != got}
        if diff:
            differences[door] = diff
    assert not differences, json.dumps(differences, ensure_ascii=False, indent=1, default=str)
    assert tenants == tuple(results) or set(tenants) == set(results)
