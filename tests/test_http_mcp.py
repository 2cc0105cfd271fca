"""`memdb serve --mcp`: the MCP streamable-HTTP endpoint mounted in the HTTP door at /mcp,
reached with the MCP SDK's own client, authenticated by the same API keys: what tenant A
writes over REST, A finds over MCP and tenant B does not."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager

import anyio
import pytest

from memdb import MemoryAdmin, MemoryStore
from memdb.families.keys import create_key
from memdb.http import ServerSettings
from tests.app_login import app_login
from tests.http_server import running_door

pytest.importorskip("mcp")
httpx2 = pytest.importorskip("httpx2")


@asynccontextmanager
async def mcp_session(url: str, key: str | None):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


def test_mcp_endpoint_in_the_http_door(module_db, embedder):
    with MemoryStore(module_db, tenant="setup", embedder=embedder, gate=None) as setup:
        setup.add("registers the embedding space")
    with MemoryAdmin(module_db) as admin:
        acme = create_key(admin, tenant="acme").key
        globex = create_key(admin, tenant="globex").key
    with app_login(module_db) as app_dsn:
        settings = ServerSettings(dsn=app_dsn, embedder=embedder, mcp=True)
        with running_door(settings) as door:
            with door.client(acme) as c:
                r = c.post("/v1/memories", json={
                    "content": "Acme's release train leaves every second Tuesday.",
                    "source_id": "t1", "subject": "ops"})
                assert r.status_code == 201, r.text
            with door.client() as c:  # no key: 401 from the MCP endpoint too
                r = c.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                           headers={"Accept": "application/json, text/event-stream"})
                assert r.status_code == 401
                assert c.get("/v1/health").status_code == 200  # REST still served

            async def scenario() -> tuple[str, str, list[str]]:
                async with mcp_session(door.url + "/mcp", acme) as a:
                    tools = [t.name for t in (await a.list_tools()).tools]
                    found_a = await a.call_tool("search", {"query": "release train Tuesday",
                                                         "subject": "ops"})
                async with mcp_session(door.url + "/mcp", globex) as b:
                    found_b = await b.call_tool("search", {"query": "release train Tuesday",
                                                         "subject": "ops"})
                return found_a.content[0].text, found_b.content[0].text, tools

            text_a, text_b, tools = anyio.run(scenario)
    assert "search" in tools and "remember" in tools
    assert "second Tuesday" in text_a
    assert "second Tuesday" not in text_b
    json.loads(text_b)  # a well-formed (empty) result, not an error page
