"""The MCP door (``memdb mcp``), driven by the MCP SDK's own client over both transports.

stdio: ``stdio_client`` spawns the ``memdb mcp`` console script (a real subprocess on a test
database); streamable HTTP: ``streamable_http_client`` against the app served by uvicorn on a
loopback port. Nothing calls the handlers directly.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from memdb import MemoryStore
from memdb.families.tool import OPERATIONS as tool_operations
from memdb.families.tool import PROPERTIES
from memdb.mcp import TOOLS, Scope, input_schema, streamable_http_app
from tests.image_factory import text_image

SCRIPT = str(Path(sys.executable).with_name("memdb"))


# -- helpers ------------------------------------------------------------------------------
@asynccontextmanager
async def stdio_session(dsn: str, *args: str):
    params = StdioServerParameters(command=SCRIPT, args=["mcp", *args],
                                   env={"MEMDB_DSN": dsn, "OMP_NUM_THREADS": "1"})
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


@asynccontextmanager
async def http_session(url: str, key: str | None):
    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """The tool's structured result; fails the test on a tool error."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    body = json.loads(result.content[0].text)
    assert body == result.structured_content
    return body


async def error(session: ClientSession, tool: str, arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert result.is_error, result.content[0].text
    return json.loads(result.content[0].text)["error"]


def run(scenario: Any, *args: Any) -> Any:
    return anyio.run(scenario, *args)


# -- the shared schema source -------------------------------------------------------------
def test_tools_are_generated_from_the_declared_operations() -> None:
    """Each tool's description and schema are its operation's (memdb.core.ops.catalog); the memory
    tool's actions are the same operations, so both doors take the same parameters with the
    same ranges and help."""
    by_action = {t.action: t for t in TOOLS if t.action}
    assert set(by_action) == {"add", "search", "update", "remove"}
    for spec in TOOLS:
        assert spec.description == spec.operation.summary
        assert spec.operation.door("mcp") == spec.name
        assert input_schema(spec, confined=True) == spec.operation.schema(spec.params)
    for action, spec in by_action.items():
        declared = tool_operations[action]
        for name, schema in spec.schema["properties"].items():
            if declared.has(name):
                assert schema == declared.param(name).schema(), (spec.name, name)
                assert schema["description"] in PROPERTIES[name]["description"]
    assert set(by_action["add"].schema["properties"]) >= {"content", "category", "kind",
                                                          "importance", "tags", "source"}
    # every tool takes only what it lists; no tool anywhere takes a tenant
    for spec in TOOLS:
        for confined in (True, False):
            schema = input_schema(spec, confined=confined)
            assert schema["additionalProperties"] is False
            assert "tenant" not in schema["properties"]
            assert ("subject" in schema["properties"]) is (spec.subject and not confined)


# -- stdio --------------------------------------------------------------------------------
def test_stdio_round_trip_in_chinese_and_english(module_db: str) -> None:
    tenant = f"mcp_{uuid.uuid4().hex[:8]}"

    async def scenario() -> None:
        async with stdio_session(module_db, "--tenant", tenant, "--subject", "alice") as s:
            listed = (await s.list_tools()).tools
            assert [t.name for t in listed] == [t.name for t in TOOLS]
            for tool, spec in zip(listed, TOOLS, strict=True):
                assert tool.input_schema == input_schema(spec, confined=True)
                assert tool.description == spec.description

            tea = await call(s, "remember", content="Alice prefers green tea in the morning",
                             category="preferences")
            zh = await call(s, "remember", content="爱丽丝对花生过敏，不能吃花生酱",
                            importance=0.9)
            assert tea["outcome"] == "created" and zh["outcome"] == "created"

            hits = (await call(s, "search", query="what does Alice drink?", k=3))["results"]
            assert hits[0]["id"] == tea["id"]
            hits = (await call(s, "search", query="花生过敏", k=3))["results"]
            assert hits[0]["id"] == zh["id"]
            recalled = await call(s, "recall", query="Alice 喜欢喝什么茶?",
                                  categories=["preferences"])
            assert recalled["status"] == "ok" and recalled["results"][0]["id"] == tea["id"]

            memory = (await call(s, "get", memory=tea["id"]))["memory"]
            assert memory["subject"] == "alice" and memory["tenant"] == tenant
            by_uri = (await call(s, "get", memory=memory["uri"]))["memory"]
            assert by_uri["id"] == tea["id"]

            updated = await call(s, "update", id=tea["id"],
                                 content="Alice prefers oolong tea in the morning",
                                 reason="she said so")
            assert updated["version"] == 2
            assert "oolong" in (await call(s, "get", memory=tea["id"]))["memory"]["content"]

            built = await call(s, "context", query="what should I serve Alice?",
                               budget_tokens=300)
            assert built["tokens"] <= 300 and tea["id"] in built["memory_ids"]

            # resources: the profile and a memory by its URI
            templates = (await s.list_resource_templates()).resource_templates
            assert {t.uri_template for t in templates} == {
                "memdb://profile/{subject}", "mem://{subject}/{category}/{id}"}
            listed_resources = (await s.list_resources()).resources
            assert [str(r.uri) for r in listed_resources] == ["memdb://profile/alice"]
            profile = json.loads((await s.read_resource("memdb://profile/alice"))
                                 .contents[0].text)
            assert any("oolong" in item["content"] for item in profile["preferences"])
            read = json.loads((await s.read_resource(memory["uri"])).contents[0].text)
            assert read["id"] == tea["id"]
            with pytest.raises(Exception, match="confined to subject"):
                await s.read_resource("memdb://profile/bob")

            removed = await call(s, "forget", id=zh["id"], reason="user asked")
            assert removed == {"id": zh["id"], "removed": True}
            assert (await error(s, "get", {"memory": zh["id"]}))["type"] == "NotFound"
            left = (await call(s, "search", query="花生过敏"))["results"]
            assert zh["id"] not in [r["id"] for r in left]

    run(scenario)


def test_stdio_bad_calls_are_tool_errors_and_the_server_keeps_serving(module_db: str) -> None:
    tenant = f"mcp_{uuid.uuid4().hex[:8]}"

    async def scenario() -> None:
        async with stdio_session(module_db, "--tenant", tenant, "--subject", "carol") as s:
            bad = [
                ("search", {"query": "tea", "k": "five"}, "k"),
                ("search", {"query": "tea", "k": 5000}, "5000"),
                ("remember", {}, "content"),
                ("remember", {"content": "x", "tenant": "other"}, "tenant"),
                ("remember", {"content": "x", "subject": "mallory"}, "subject"),
                ("update", {"id": "not-a-uuid", "content": "y"}, "UUID"),
                ("forget", {"erase_subject": True, "confirm": "someone-else"}, "confirm"),
                ("recall", {"query": "q", "uri_prefix": "http://x"}, "mem://"),
                ("no_such_tool", {}, "unknown tool"),
            ]
            for tool, arguments, mentioned in bad:
                err = await error(s, tool, arguments)
                assert err["type"] == "InvalidInput", (tool, err)
                assert mentioned in err["message"], (tool, err)
            missing = str(uuid.uuid4())
            assert (await error(s, "get", {"memory": missing}))["type"] == "NotFound"
            assert (await error(s, "update", {"id": missing, "content": "z"}))["type"] == \
                "NotFound"
            # after all that, the same session still works
            ok = await call(s, "remember", content="Carol writes her notes in Markdown")
            assert ok["outcome"] == "created"

    run(scenario)


def test_stdio_tenant_wide_server_takes_a_subject_and_erases_one_only_when_confirmed(
        module_db: str) -> None:
    tenant = f"mcp_{uuid.uuid4().hex[:8]}"

    async def scenario() -> None:
        async with stdio_session(module_db, "--tenant", tenant) as s:
            listed = {t.name: t for t in (await s.list_tools()).tools}
            assert "subject" in listed["remember"].input_schema["properties"]
            assert (await s.list_resources()).resources == []
            bob = await call(s, "remember", subject="bob", content="Bob runs every Sunday",
                             kind="episodic")
            await call(s, "remember", subject="dave", content="Dave plays the cello")
            found = (await call(s, "search", subject="dave", query="running"))["results"]
            assert bob["id"] not in [r["id"] for r in found]  # subjects do not mix
            # a memory of bob's is not dave's to update or forget
            err = await error(s, "forget", {"subject": "dave", "id": bob["id"]})
            assert err["type"] == "NotFound"
            err = await error(s, "forget", {"subject": "bob", "erase_subject": True})
            assert "confirm" in err["message"]
            erased = await call(s, "forget", subject="bob", erase_subject=True, confirm="bob")
            assert erased["erased_subject"] == "bob" and erased["counts"]["memories"] == 1
            assert not (await call(s, "search", subject="bob", query="Sunday"))["results"]
            assert (await call(s, "search", subject="dave", query="cello"))["results"]

            doc = await call(s, "add_document", subject="dave", document_id="cello-care.md",
                             text="# Cello care\n\nLoosen the bow hair after playing. "
                                  "琴弓用完后要放松弓毛。")
            assert doc["counts"] == {"created": 1}
            answer = await call(s, "ask", subject="dave", question="What to do with the bow?",
                                k=2)
            assert answer["passages"] and "bow" in answer["passages"][0]["text"].lower()

    run(scenario)


def test_stdio_two_servers_of_two_tenants_at_once(module_db: str) -> None:
    tenants = [f"mcp_{uuid.uuid4().hex[:8]}" for _ in range(2)]
    stored: dict[str, str] = {}

    async def client(tenant: str, fact: str, done: anyio.Event, other: anyio.Event) -> None:
        async with stdio_session(module_db, "--tenant", tenant, "--subject", "sam") as s:
            stored[tenant] = (await call(s, "remember", content=fact))["id"]
            done.set()
            await other.wait()  # both servers have written before either reads
            other_id = next(i for t, i in stored.items() if t != tenant)
            found = (await call(s, "search", query="Sam", k=10))["results"]
            assert [r["id"] for r in found] == [stored[tenant]]
            assert (await error(s, "get", {"memory": other_id}))["type"] == "NotFound"
            assert (await error(s, "update", {"id": other_id, "content": "mine now"}))[
                "type"] == "NotFound"

    async def scenario() -> None:
        events = [anyio.Event(), anyio.Event()]
        async with anyio.create_task_group() as tg:
            tg.start_soon(client, tenants[0], "Sam parks on level 3", events[0], events[1])
            tg.start_soon(client, tenants[1], "Sam 的生日是五月一日", events[1], events[0])

    run(scenario)


# -- streamable HTTP ----------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Served:
    """An ASGI app served by uvicorn on a loopback port, in a thread of this process."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                    log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "no server"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)


KEYS = {"key-acme": Scope("acme_mcp"), "key-globex": Scope("globex_mcp"),
        "key-acme-erin": Scope("acme_mcp", "erin")}


@pytest.fixture(scope="module")
def served(module_db: str, embedder: Any) -> Iterator[Served]:
    app = streamable_http_app(dsn=module_db, authenticate=KEYS.get, embedder=embedder)
    with Served(app) as served:
        yield served


def test_http_two_tenants_at_once_each_sees_only_its_own(served: Served) -> None:
    async def tenant(key: str, fact: str, other: str) -> dict[str, Any]:
        async with http_session(served.url, key) as s:
            mine = await call(s, "remember", subject="zoe", content=fact)
            await anyio.sleep(0.2)  # both written before either searches
            found = (await call(s, "search", subject="zoe", query=other, k=5))["results"]
            assert all(other.split()[-1] not in r["content"] for r in found)
            assert [r["id"] for r in (await call(s, "search", subject="zoe",
                                                 query=fact, k=5))["results"]] == [mine["id"]]
            return mine

    async def scenario() -> None:
        results: dict[str, Any] = {}

        async def one(key: str, fact: str, other: str) -> None:
            results[key] = await tenant(key, fact, other)

        async with anyio.create_task_group() as tg:
            tg.start_soon(one, "key-acme", "Zoe's locker code is in the acme wiki",
                          "Zoe's favourite city is Lisbon")
            tg.start_soon(one, "key-globex", "Zoe's favourite city is Lisbon",
                          "Zoe's locker code is in the acme wiki")
        # neither key reaches the other tenant's memory, by id or by URI
        async with http_session(served.url, "key-globex") as s:
            err = await error(s, "get", {"memory": results["key-acme"]["id"]})
            assert err["type"] == "NotFound"
            err = await error(s, "forget", {"subject": "zoe", "id": results["key-acme"]["id"]})
            assert err["type"] == "NotFound"
            with pytest.raises(Exception, match="NotFound"):
                await s.read_resource(f"mem://zoe/general/{results['key-acme']['id']}")
        # a key bound to a subject: no subject argument, only its own rows
        async with http_session(served.url, "key-acme-erin") as s:
            listed = {t.name: t for t in (await s.list_tools()).tools}
            assert "subject" not in listed["search"].input_schema["properties"]
            assert (await error(s, "search", {"query": "locker", "subject": "zoe"}))[
                "type"] == "InvalidInput"
            assert not (await call(s, "search", query="locker code"))["results"]
            assert (await error(s, "get", {"memory": results["key-acme"]["id"]}))[
                "type"] == "NotFound"

    run(scenario)


def test_http_a_key_bound_to_a_subject_reads_only_its_subjects_jobs(
        served: Served, module_db: str) -> None:
    """The MCP `job` tool through a real client: a key bound to subject erin reads erin's
    jobs (the job's subject says so) and not zoe's, whose payload holds what zoe said."""
    with MemoryStore(module_db, tenant="acme_mcp") as acme:
        zoe = str(acme.jobs.enqueue("test.vault", {"subject": "zoe", "text": "佐伊的密码 4417"}).id)

    async def scenario() -> None:
        async with http_session(served.url, "key-acme-erin") as s:
            turn = await call(s, "remember_turn", text="我喜欢喝乌龙茶。I like oolong tea.",
                              wait=False)
            own = (await call(s, "job", id=turn["job_id"]))["job"]
            assert (own["subject"], own["kind"]) == ("erin", "remember")
            err = await error(s, "job", {"id": zoe})
            assert err["type"] == "NotFound" and "4417" not in str(err)
        async with http_session(served.url, "key-acme") as s:
            assert (await call(s, "job", id=zoe))["job"]["subject"] == "zoe"

    run(scenario)


def test_http_a_key_of_one_tenant_reaches_nothing_of_another_through_any_tool(
        served: Served, module_db: str) -> None:
    marker = "Ulla's vault combination is 4417"
    with MemoryStore(module_db, tenant="acme") as acme:  # a job of acme's holding the marker
        job = str(acme.jobs.enqueue("test.vault", {"text": marker}).id)

    async def scenario() -> None:
        async with http_session(served.url, "key-acme") as a:
            mine = await call(a, "remember", subject="ulla", content=marker)
            await call(a, "add_document", subject="ulla", document_id="vault.md",
                       text=f"# Vault\n\n{marker}.")
        other = mine["id"]
        calls = {  # every tool, as tenant globex's key, aimed at acme's memory and document
            "remember": {"subject": "ulla", "content": "Ulla likes chess"},
            "search": {"subject": "ulla", "query": "vault combination", "k": 20},
            "recall": {"subject": "ulla", "query": "vault combination", "k": 20},
            "get": {"memory": other},
            "update": {"subject": "ulla", "id": other, "content": "overwritten"},
            "forget": {"subject": "ulla", "id": other},
            "context": {"subject": "ulla", "query": "vault combination"},
            "add_document": {"subject": "ulla", "document_id": "vault.md", "text": "# Mine"},
            "ask": {"subject": "ulla", "question": "What is the vault combination?"},
            "remember_file": {"subject": "ulla", "file_base64": base64.b64encode(
                text_image("Ulla's chess club", size=24)).decode()},
            "job": {"id": job},
            "remember_turn": {"subject": "ulla", "text": "Ulla's vault combination?",
                              "wait": False},
        }
        assert set(calls) == {t.name for t in TOOLS}
        async with http_session(served.url, "key-globex") as b:
            for tool, arguments in calls.items():
                result = await b.call_tool(tool, arguments)
                assert "4417" not in result.content[0].text, tool
            profile = await b.read_resource("memdb://profile/ulla")
            assert "4417" not in profile.contents[0].text
            erased = await call(b, "forget", subject="ulla", erase_subject=True, confirm="ulla")
            assert erased["counts"]["memories"] >= 1  # globex's own ulla, not acme's
        async with http_session(served.url, "key-acme") as a:  # acme's rows are untouched
            memory = (await call(a, "get", memory=other))["memory"]
            assert (memory["content"], memory["version"]) == (marker, 1)
            answer = await call(a, "ask", subject="ulla", question="vault combination?")
            assert "4417" in answer["passages"][0]["text"]

    run(scenario)


def test_http_wrong_or_missing_key_is_401_and_never_echoed(served: Served) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    for headers in ({}, {"Authorization": "Bearer key-nobody"},
                    {"Authorization": "Basic a2V5LWFjbWU="}):
        response = httpx2.post(served.url, json=body, headers={
            **headers, "Accept": "application/json, text/event-stream"}, timeout=30)
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert response.json()["error"]["type"] == "Unauthorized"
        assert "key-nobody" not in response.text

    async def scenario() -> None:
        with pytest.raises(Exception):  # noqa: B017 (the SDK's error for a 401 is its own)
            with anyio.fail_after(30):
                async with http_session(served.url, "key-nobody") as s:
                    await s.list_tools()
        async with http_session(served.url, "key-acme") as s:  # the server still serves
            assert (await s.list_tools()).tools

    run(scenario)


def test_http_with_memdb_api_keys(module_db: str, embedder: Any) -> None:
    from memdb.families import keys
    live = keys.create_key(module_db, tenant="keyed_mcp", subject="yuki", name="mcp test")
    revoked = keys.create_key(module_db, tenant="keyed_mcp")
    keys.revoke_key(module_db, revoked.info.key_id)
    admin = keys.create_key(module_db, is_admin=True)
    app = streamable_http_app(dsn=module_db, embedder=embedder)  # authenticate: memdb's keys
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    with Served(app) as served:
        for key, status in ((revoked.key, 401), ("mdb_nosuchkey1_" + "x" * 43, 401),
                            (admin.key, 403)):
            response = httpx2.post(served.url, json=body, timeout=30, headers={
                **accept, "Authorization": f"Bearer {key}"})
            assert response.status_code == status
            assert key not in response.text

        async def scenario() -> None:
            async with http_session(served.url, live.key) as s:
                stored = await call(s, "remember", content="Yuki 每天早上喝抹茶")
                memory = (await call(s, "get", memory=stored["id"]))["memory"]
                assert (memory["tenant"], memory["subject"]) == ("keyed_mcp", "yuki")
                hits = (await call(s, "search", query="抹茶"))["results"]
                assert hits[0]["id"] == stored["id"]

        run(scenario)


class SlowQueries:
    """The fixture embedder, taking ``delay`` seconds over a query that says "slowly"."""

    def __init__(self, inner: Any, delay: float) -> None:
        self.inner, self.delay, self.model, self.dims = inner, delay, inner.model, inner.dims

    def embed_passages(self, texts: list[str]) -> Any:
        return self.inner.embed_passages(texts)

    def embed_queries(self, texts: list[str]) -> Any:
        if any("slowly" in t for t in texts):
            time.sleep(self.delay)
        return self.inner.embed_queries(texts)


def test_http_a_store_in_use_is_never_closed_under_its_call(module_db: str,
                                                            embedder: Any) -> None:
    """One open store at most (max_open=1) and two tenants: a slow call of the first tenant
    while the second tenant's store opens. The first store is not closed under its call (the
    old cache closed it, and the call reopened a pool nobody would close); every connection
    of the door ends when the server stops."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    from memdb.mcp import create_server
    from memdb.mcp._http import build_app

    label = f"memdb_evict_{uuid.uuid4().hex[:6]}"
    dsn = make_conninfo(module_db, application_name=label)
    server = create_server(dsn=dsn, tenant=None, embedder=SlowQueries(embedder, 1.5),
                           pool_size=1, require_request_scope=True)
    server.stores.max_open = 1
    found: dict[str, Any] = {}

    async def scenario() -> None:
        async with http_session(served.url, "key-acme") as a, \
                http_session(served.url, "key-globex") as b:
            await call(a, "remember", subject="ines", content="Ines parks her bike at gate 4")

            async def slow() -> None:
                found["a"] = await call(a, "search", subject="ines",
                                        query="slowly: where does Ines park her bike?")

            async with anyio.create_task_group() as tg:
                tg.start_soon(slow)
                await anyio.sleep(0.5)  # the first call waits for its embedding
                await call(b, "remember", subject="ines", content="Ines takes the 7:40 train")
                assert len(server.stores) == 2  # over the bound while the first is in use
            found["b"] = await call(b, "search", subject="ines", query="train")
            assert len(server.stores) == 1  # back to the bound once it was released

    with Served(build_app(server, authenticate=KEYS.get)) as served:
        run(scenario)
    assert "gate 4" in found["a"]["results"][0]["content"]
    assert "7:40" in found["b"]["results"][0]["content"]
    with psycopg.connect(module_db, autocommit=True) as conn:
        left = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                            (label,)).fetchone()[0]
    assert left == 0


def test_memdb_mcp_http_command_serves_streamable_http(module_db: str) -> None:
    """`memdb mcp --http` as a real process: the configured tenant (--no-keys) and agent;
    --port 0 --json: a free port, and where it listens as a JSON line first."""
    import subprocess

    tenant = f"mcp_{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "MEMDB_DSN": module_db, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([SCRIPT, "mcp", "--http", "--port", "0", "--json", "--no-keys",
                             "--tenant", tenant, "--subject", "kim", "--agent", "helper"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        where = json.loads(proc.stdout.readline() or proc.stderr.read())
        assert where == {"url": where["url"], "transport": "streamable-http", "keys": False}
        assert where["url"].startswith("http://127.0.0.1:") and where["url"].endswith("/mcp")
        port = int(where["url"].rsplit(":", 1)[1].split("/")[0])
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read()
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "memdb mcp --http did not listen"
            time.sleep(0.1)

        async def scenario() -> None:
            async with http_session(where["url"], None) as s:
                stored = await call(s, "remember", content="Kim reviews pull requests daily")
                memory = (await call(s, "get", memory=stored["id"]))["memory"]
                assert (memory["tenant"], memory["subject"], memory["agent"]) == (
                    tenant, "kim", "helper")

        run(scenario)
    finally:
        proc.terminate()
        proc.wait(30)


def test_memdb_mcp_http_says_where_it_listens_on_stderr(module_db: str) -> None:
    """Without --json, `memdb mcp --http` prints one line on stderr when it starts (like
    `memdb serve`): the address it listens on, which answers."""
    import select
    import subprocess

    env = {**os.environ, "MEMDB_DSN": module_db, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([SCRIPT, "mcp", "--http", "--port", "0", "--tenant", "t"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stderr], [], [], 60)
        assert ready, "memdb mcp --http printed nothing on stderr"
        line = proc.stderr.readline()
        assert line.startswith("memdb mcp: http://127.0.0.1:"), line + proc.stderr.read()
        assert "(streamable HTTP; API keys" in line
        url = line.split()[2]
        assert url.endswith("/mcp")
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read()
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "memdb mcp --http did not listen"
            time.sleep(0.1)
        answer = httpx2.post(url, json={}, timeout=30)  # no key: refused, but it answers
        assert answer.status_code == 401
    finally:
        proc.terminate()
        proc.wait(30)
    assert proc.stdout.read() == ""  # stdout stays free


def test_memdb_mcp_json_without_http_is_a_usage_error() -> None:
    """Over stdio, stdout is the protocol channel: --json has nothing to print there."""
    from click.testing import CliRunner

    from memdb.cli import cli

    result = CliRunner().invoke(cli, ["mcp", "--json"])
    assert result.exit_code == 2
    assert "--json needs --http" in result.stderr
    assert result.stdout == ""


def test_database_down_is_a_tool_error_without_the_password() -> None:
    async def scenario() -> None:
        dsn = "postgresql://memdb:s3cretpw@127.0.0.1:1/memdb"
        async with stdio_session(dsn, "--tenant", "t") as s:
            for _ in range(2):  # and the server is still there to answer again
                err = await error(s, "search", {"query": "tea"})
                assert err["type"] == "DatabaseUnavailable"
                assert "s3cretpw" not in json.dumps(err)

    run(scenario)
