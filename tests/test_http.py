"""The HTTP door (`memdb serve`) from a real HTTP client (httpx) against uvicorn on a loopback
port, with the data path logged in as an application login (like production): API keys,
every endpoint of both tenants, limits, errors, concurrency, Chinese and English, OpenAPI."""

from __future__ import annotations

import asyncio
import logging

import pytest

from memdb import MemoryAdmin
from memdb.families.keys import create_key, revoke_key
from memdb.http import ServerSettings
from memdb.http._limits import RateLimiter
from tests.app_login import app_login
from tests.http_server import door_process, make_keys, running_door, served_door

pytest.importorskip("fastapi")

B_SECRET = "Globex keeps the launch codes in the blue binder"
B_DOC = "The globex handbook says: the blue binder sits in vault seven."


@pytest.fixture(scope="module")
def keys(module_db, embedder):
    return make_keys(module_db, embedder)


@pytest.fixture(scope="module")
def door(module_db, embedder, keys):
    with served_door(module_db, embedder) as running:
        yield running


@pytest.fixture(scope="module")
def globex(door, keys):
    """Tenant B's things: a memory, a session with state, a document."""
    with door.client(keys["globex"]) as b:
        added = b.post("/v1/memories", json={"source_id": "t1", "content": B_SECRET,
                                             "subject": "bob", "category": "entities"})
        assert added.status_code == 201, added.text
        mid = added.json()["id"]
        memory = b.get(f"/v1/memories/{mid}").json()
        assert b.post("/v1/sessions/gx-session/messages",
                      json={"role": "user", "content": B_SECRET, "subject": "bob"}
                      ).status_code == 201
        state = b.put("/v1/sessions/gx-session/state",
                      json={"state": {"goal": B_SECRET}, "expected_version": 0,
                            "subject": "bob"})
        assert state.status_code == 200, state.text
        doc = b.post("/v1/documents", json={"documents": [{"id": "doc://globex/handbook",
                                                             "text": B_DOC}],
                                            "subject": "bob"})
        assert doc.status_code == 201, doc.text
    return {"id": mid, "uri": memory["uri"], "version": memory["version"]}


# -- authentication -------------------------------------------------------------------------
@pytest.mark.parametrize("headers", [
    {},
    {"Authorization": "Bearer"},
    {"Authorization": "Basic dXNlcjpwYXNz"},
    {"Authorization": "Bearer not-a-key"},
    {"Authorization": "Bearer mdb_aaaaaaaaaaaa_" + "b" * 43},
    {"X-API-Key": "mdb_aaaaaaaaaaaa_" + "b" * 43},
])
def test_requests_without_a_live_key_get_401(door, headers):
    with door.client() as c:
        r = c.get("/v1/memories", headers=headers)
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == "Bearer"
    assert r.json()["error"]["type"] == "Unauthorized"


def test_revoked_key_and_a_key_with_one_wrong_character(door, keys):
    good = keys["acme"]
    wrong = good[:-1] + ("x" if good[-1] != "x" else "y")
    with door.client() as c:
        for key in (keys["revoked"], wrong):
            r = c.get("/v1/whoami", headers={"Authorization": f"Bearer {key}"})
            assert r.status_code == 401
            assert key not in r.text
        ok = c.get("/v1/whoami", headers={"X-API-Key": good})
    assert ok.status_code == 200
    assert ok.json()["tenant"] == "acme" and good not in ok.text


def test_a_key_revoked_while_the_server_runs_stops_at_once(door, module_db):
    with MemoryAdmin(module_db) as admin:
        made = create_key(admin, tenant="acme", name="short-lived")
        with door.client(made.key) as c:
            assert c.get("/v1/whoami").status_code == 200
            revoke_key(admin, made.info.key_id)
            assert c.get("/v1/whoami").status_code == 401


def test_admin_key_reaches_only_admin_routes(door, keys):
    with door.client(keys["admin"]) as c:
        r = c.get("/v1/memories")
        assert r.status_code == 403 and r.json()["error"]["type"] == "Forbidden"
        m = c.post("/v1/admin/maintenance", json={"dry_run": True, "tenant": "acme"})
        assert m.status_code == 200, m.text
        assert "steps" in m.json()
    with door.client(keys["acme"]) as c:
        r = c.post("/v1/admin/maintenance", json={"dry_run": True})
        assert r.status_code == 403


# -- tenant isolation through every endpoint ------------------------------------------------
def _attempts(g: dict) -> list[tuple[str, str, dict | None]]:
    mid, uri = g["id"], g["uri"]
    return [
        ("GET", f"/v1/memories/{mid}", None),
        ("GET", f"/v1/memories/{uri}", None),
        ("GET", "/v1/memories?subject=bob", None),
        ("GET", "/v1/memories?uri_prefix=mem://bob/", None),
        ("GET", f"/v1/history/{mid}", None),
        ("GET", f"/v1/history/{uri}", None),
        ("POST", "/v1/search", {"query": B_SECRET, "k": 10}),
        ("POST", "/v1/search", {"query": B_SECRET, "filter": {"subject": "bob"}}),
        ("POST", "/v1/recall", {"query": "where are the launch codes?", "explain": True}),
        ("POST", "/v1/context", {"query": "launch codes", "subject": "bob"}),
        ("GET", "/v1/profile?subject=bob", None),
        ("GET", "/v1/sessions?subject=bob", None),
        ("GET", "/v1/sessions/gx-session?subject=bob", None),
        ("GET", "/v1/sessions/gx-session/state?subject=bob", None),
        ("GET", "/v1/documents", None),
        ("GET", "/v1/documents?subject=bob", None),
        ("POST", "/v1/documents/search", {"query": "blue binder vault"}),
        ("POST", "/v1/documents/ask", {"question": "where is the blue binder?",
                                       "answer": False}),
        # writes aimed at B's rows
        ("PATCH", f"/v1/memories/{mid}", {"content": "acme was here"}),
        ("PATCH", f"/v1/memories/{uri}", {"importance": 0.1}),
        ("DELETE", f"/v1/memories/{mid}", None),
        ("DELETE", f"/v1/memories/{uri}", None),
        ("PUT", "/v1/sessions/gx-session/state",
         {"state": {"goal": "acme"}, "expected_version": 1, "subject": "bob"}),
        ("DELETE", "/v1/sessions/gx-session?subject=bob", None),
        ("POST", "/v1/documents/remove", {"uris": ["doc://globex/handbook"]}),
        ("POST", "/v1/admin/maintenance", {"tenant": "globex"}),
    ]


@pytest.mark.parametrize("who", ["acme", "alice"])
def test_tenant_a_cannot_read_or_change_tenant_b_through_any_endpoint(door, keys, globex, who):
    """Each request of tenant A (a tenant-wide key and a subject key) aimed at tenant B's
    memory, session, state and document is refused or sees nothing of B; B's rows are
    unchanged afterwards."""
    with door.client(keys[who]) as a:
        for method, path, body in _attempts(globex):
            r = a.request(method, path, json=body)
            assert r.status_code in (200, 201, 204, 400, 403, 404, 409), (method, path, r.text)
            # B's words that no request names (a query, id or URI the request itself names
            # may be echoed: a recall's plan, a 404's message)
            for secret in (B_SECRET, "Globex keeps", "sits in vault", "handbook says",
                           "doc://globex"):
                assert secret not in r.text, (method, path, r.status_code, r.text)
            if method in ("PATCH", "DELETE") and "/memories/" in path:
                assert r.status_code == 404, (method, path, r.text)
            if path == "/v1/documents/remove":
                assert r.json() == {"removed": 0}
    with door.client(keys["globex"]) as b:
        memory = b.get(f"/v1/memories/{globex['id']}")
        assert memory.status_code == 200
        assert memory.json()["content"] == B_SECRET
        assert memory.json()["version"] == globex["version"]
        assert len(b.get(f"/v1/history/{globex['id']}").json()["history"]) == 1
        session = b.get("/v1/sessions/gx-session?subject=bob").json()
        assert B_SECRET in str(session)
        state = b.get("/v1/sessions/gx-session/state?subject=bob").json()
        assert state["goal"] == B_SECRET and state["version"] == 1
        docs = b.get("/v1/documents").json()["documents"]
        assert [d["uri"] for d in docs] == ["doc://globex/handbook"]


def test_subject_key_cannot_write_or_read_another_subject(door, keys):
    with door.client(keys["acme"]) as team:
        bob = team.post("/v1/memories", json={
            "source_id": "t1", "content": "Bob's locker code is 4711, keep it", "subject": "bob"})
        assert bob.status_code == 201, bob.text
        bob_id = bob.json()["id"]
    with door.client(keys["alice"]) as alice:
        assert alice.get(f"/v1/memories/{bob_id}").status_code == 404
        w = alice.post("/v1/memories", json={
            "source_id": "t1", "content": "I am Bob now, says Alice", "subject": "bob"})
        assert w.status_code == 403, w.text
        assert w.json()["error"]["type"] == "Forbidden"
        hits = alice.post("/v1/search", json={"query": "locker code"}).json()["hits"]
        assert all(h["memory"]["subject"] == "alice" for h in hits) if hits else True
        assert "4711" not in alice.post("/v1/search", json={"query": "locker code"}).text


def test_request_fields_cannot_choose_the_tenant(door, keys):
    with door.client(keys["acme"]) as a:
        r = a.post("/v1/memories", json={
            "source_id": "t1", "content": "Sneaky write into globex tenant", "tenant": "globex"})
        assert r.status_code == 422
        assert r.json()["error"]["type"] == "InvalidInput" and "tenant" in r.text


# -- the verbs, in Chinese and English ------------------------------------------------------
def test_memory_lifecycle_in_chinese_and_english(door, keys):
    with door.client(keys["acme"]) as c:
        zh = c.post("/v1/memories", json={
            "source_id": "t1", "content": "张伟喜欢喝乌龙茶，不加糖。", "subject": "zhangwei",
            "category": "preferences"})
        en = c.post("/v1/memories", json={
            "source_id": "t1", "content": "Carol prefers oat milk in her coffee.",
            "subject": "carol", "category": "preferences"})
        assert zh.status_code == 201 and en.status_code == 201, (zh.text, en.text)
        zh_id = zh.json()["id"]
        got = c.get(f"/v1/memories/{zh_id}").json()
        assert got["content"] == "张伟喜欢喝乌龙茶，不加糖。"
        by_uri = c.get(f"/v1/memories/{got['uri']}")
        assert by_uri.status_code == 200 and by_uri.json()["id"] == zh_id
        hits = c.post("/v1/search", json={"query": "张伟喝什么茶", "explain": True}).json()
        assert hits["hits"][0]["memory"]["id"] == zh_id
        assert "explain" in hits
        en_hits = c.post("/v1/search", json={"query": "what milk does Carol like?"}).json()
        assert en_hits["hits"][0]["memory"]["id"] == en.json()["id"]
        patched = c.patch(f"/v1/memories/{zh_id}",
                          json={"source_id": "t1", "content": "张伟喜欢喝绿茶。", "reason": "更正"})
        assert patched.status_code == 200, patched.text
        assert patched.json()["content"] == "张伟喜欢喝绿茶。"
        history = c.get(f"/v1/history/{zh_id}").json()["history"]
        assert len(history) == 2
        listed = c.get("/v1/memories", params={"subject": "zhangwei"}).json()["memories"]
        assert [m["content"] for m in listed] == ["张伟喜欢喝绿茶。"]
        recall = c.post("/v1/recall", json={"query": "Carol coffee milk"})
        assert recall.status_code == 200 and recall.json()["hits"]
        ctx = c.post("/v1/context", json={"query": "Carol coffee", "subject": "carol"})
        assert ctx.status_code == 200 and "oat milk" in ctx.text
        prof = c.get("/v1/profile", params={"subject": "carol"})
        assert prof.status_code == 200 and "oat milk" in prof.text
        batch = c.post("/v1/memories/batch", json={"items": [
            {"source_id": "t1", "content": "Dan works at the Berlin office.", "subject": "dan"},
            {"source_id": "t1", "content": "丹在柏林办公室工作。", "subject": "dan"}]})
        assert batch.status_code == 201 and len(batch.json()) == 2
        assert c.delete(f"/v1/memories/{zh_id}").status_code == 204
        gone = c.get(f"/v1/memories/{zh_id}")
        assert gone.status_code == 404 and gone.json()["error"]["type"] == "NotFound"


def test_sessions_and_documents(door, keys):
    with door.client(keys["alice"]) as c:
        turns = (("user", "我们下周去杭州开会"), ("assistant", "Noted: Hangzhou next week"))
        for role, text in turns:
            r = c.post("/v1/sessions/trip/messages", json={"role": role, "content": text})
            assert r.status_code == 201, r.text
        view = c.get("/v1/sessions/trip").json()
        assert "杭州" in str(view)
        assert "trip" in str(c.get("/v1/sessions").json())
        s1 = c.put("/v1/sessions/trip/state", json={"state": {"goal": "杭州"},
                                                    "expected_version": 0})
        assert s1.status_code == 200, s1.text
        assert s1.json()["version"] == 1
        stale = c.put("/v1/sessions/trip/state", json={"state": {"goal": "x"},
                                                       "expected_version": 0})
        assert stale.status_code == 409, stale.text
        assert c.get("/v1/sessions/trip/state").json()["goal"] == "杭州"
        # declared once with the CLI's `session state` (memdb.core.ops.families.SESSION_STATE)
        unversioned = c.put("/v1/sessions/trip/state", json={"state": {"goal": "x"}})
        assert unversioned.status_code == 400 and "expected_version" in unversioned.text
        negative = c.put("/v1/sessions/trip/state", json={"state": {"goal": "西湖"},
                                                          "expected_version": -1})
        assert negative.status_code == 400 and "expected_version must be within ≥ 0" in (
            negative.text)
        assert c.delete("/v1/sessions/trip").status_code == 204
        doc = c.post("/v1/documents", json={"documents": [
            {"id": "notes/tea.md",
             "text": "# Tea\n\nOolong is partly oxidised tea. 乌龙茶是半发酵茶。"}]})
        assert doc.status_code == 201, doc.text
        assert [d["uri"] for d in c.get("/v1/documents").json()["documents"]] == ["notes/tea.md"]
        found = c.post("/v1/documents/search", json={"query": "乌龙茶 发酵"}).json()["hits"]
        assert found and "乌龙茶" in str(found[0])
        asked = c.post("/v1/documents/ask", json={"question": "what is oolong?", "answer": False})
        assert asked.status_code == 200 and "Oolong" in asked.text
        assert c.post("/v1/documents/remove", json={"uris": ["notes/tea.md"]}).json() == {
            "removed": 1}


def test_ingest_takes_text_never_a_server_path(door, keys):
    with door.client(keys["acme"]) as c:
        r = c.post("/v1/documents", json={"documents": ["/etc/passwd"]})
        assert r.status_code == 422
        r = c.post("/v1/documents", json={"documents": [{"id": "/etc/passwd"}]})
        assert r.status_code == 422
        assert "root:" not in r.text


# -- limits and errors ----------------------------------------------------------------------
def test_oversized_body_is_413_by_length_and_when_streamed(door, keys):
    big = b'{"content": "' + b"x" * 70_000 + b'"}'
    with door.client(keys["acme"]) as c:
        r = c.post("/v1/memories", content=big, headers={"Content-Type": "application/json"})
        assert r.status_code == 413 and r.json()["error"]["type"] == "PayloadTooLarge"

        def chunks():
            for i in range(0, len(big), 8192):
                yield big[i:i + 8192]

        r = c.post("/v1/memories", content=chunks(), headers={"Content-Type": "application/json"})
        assert r.status_code == 413
        assert c.get("/v1/memories", params={"limit": 200}).status_code == 200


def test_malformed_json_unknown_fields_and_caps(door, keys):
    with door.client(keys["acme"]) as c:
        r = c.post("/v1/search", content=b'{"query": "tea",', headers={
            "Content-Type": "application/json"})
        assert r.status_code == 400
        assert r.json() == {"error": {"type": "InvalidInput",
                                      "message": "the request body is not valid JSON"}}
        r = c.post("/v1/search", json={"query": "tea", "k": 51})
        assert r.status_code == 400 and "limit of this server is 50" in r.text
        r = c.get("/v1/memories", params={"limit": 201})
        assert r.status_code == 400
        r = c.post("/v1/search", json={"query": "tea", "k": 0})  # as at every door
        assert r.status_code == 400 and r.json()["error"]["type"] == "InvalidInput"
        r = c.post("/v1/search", json={"query": "tea", "filter": {"colour": "red"}})
        assert r.status_code == 400 and r.json()["error"]["type"] == "InvalidInput"
        r = c.post("/v1/memories", json={"source_id": "t1", "content": ""})
        assert r.status_code == 400
        r = c.get("/v1/memories/not-a-uuid")
        assert r.status_code in (400, 404)
        assert set(r.json()) == {"error"} and set(r.json()["error"]) == {"type", "message"}


def test_search_takes_search_options_by_name(door, keys):
    """POST /v1/search's ``options``: any SearchOptions field, over the server's defaults
    (neighbour expansion on); unknown names and out-of-range values are 400, nothing runs."""
    with door.client(keys["acme"]) as c:
        for sid, turns in (("s-zh", ["周六我们去湖边露营", "梅兰妮带了她的吉他",
                                     "晚上下了一场大雨"]),
                           ("s-en", ["We went camping by the lake on Saturday",
                                     "Melanie brought her guitar", "It rained hard at night"])):
            for text in turns:  # one by one: a session's turns are ordered by created_at
                r = c.post("/v1/memories", json={"source_id": "t1", "content": text,
                                                 "subject": "mel", "session_id": sid})
                assert r.status_code == 201, r.text
        for query, session in (("吉他", "s-zh"), ("guitar", "s-en")):
            body = {"query": query, "filter": {"subject": "mel", "session_id": session},
                    "routes": ["bm25"]}
            default = c.post("/v1/search", json=body).json()["hits"]
            alone = c.post("/v1/search", json={**body, "options": {"neighbors": 0}}).json()
            assert len(alone["hits"]) == 1 and len(default) == 3  # the turns before and after
            assert alone["hits"][0]["memory"]["id"] == default[0]["memory"]["id"]
        for bad, status in (({"no_such_option": 1}, 400), ({"neighbors": 11}, 400),
                            ({"rrf_k": "5; DROP TABLE memdb.memories"}, 400),
                            ({"routes": ["vector", "nope"]}, 400), ("neighbors=0", 422)):
            r = c.post("/v1/search", json={"query": "guitar", "options": bad})
            assert r.status_code == status, (bad, r.text)
            assert r.json()["error"]["type"] == "InvalidInput"
        r = c.post("/v1/search", json={"query": "guitar", "options": {"no_such_option": 1}})
        assert "no_such_option" in r.json()["error"]["message"]
        listed = c.get("/v1/memories", params={"subject": "mel"}).json()["memories"]
        assert len(listed) == 6


def test_rate_limit_answers_429_with_retry_after(door, keys):
    state = door.app.state.door
    saved = state.limiter
    state.limiter = RateLimiter(rate=0.5, burst=3)
    try:
        with door.client(keys["acme"]) as c:
            codes = [c.get("/v1/whoami") for _ in range(5)]
        assert [r.status_code for r in codes] == [200, 200, 200, 429, 429]
        assert codes[3].headers["retry-after"] == "2"
        assert codes[3].json()["error"]["type"] == "TooManyRequests"
        with door.client(keys["globex"]) as other:  # buckets are per key
            assert other.get("/v1/whoami").status_code == 200
    finally:
        state.limiter = saved


def test_failed_authentications_are_limited_per_address(door, keys):
    state = door.app.state.door
    saved = state.failures
    state.failures = RateLimiter(rate=0.2, burst=3)
    try:
        with door.client() as c:
            bad = {"Authorization": "Bearer mdb_aaaaaaaaaaaa_" + "b" * 43}
            codes = [c.get("/v1/whoami", headers=bad).status_code for _ in range(4)]
            assert codes == [401, 401, 401, 429]
            # the address is held back, even with a good key, until its bucket refills
            r = c.get("/v1/whoami", headers={"Authorization": f"Bearer {keys['acme']}"})
            assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
    finally:
        state.failures = saved


def test_twenty_concurrent_adds_of_one_text_create_one_memory(door, keys):
    text = "The staging database is rebuilt every Sunday night. 测试环境每周日重建。"

    async def run() -> list:
        async with door.async_client(keys["globex"]) as c:
            return await asyncio.gather(*[
                c.post("/v1/memories", json={"source_id": "t1", "content": text, "subject": "ops"})
                for _ in range(20)])

    responses = asyncio.run(run())
    assert [r.status_code for r in responses] == [201] * 20, [r.text for r in responses]
    bodies = [r.json() for r in responses]
    assert sum(b["created"] for b in bodies) == 1
    assert len({b["id"] for b in bodies}) == 1
    with door.client(keys["globex"]) as c:
        listed = c.get("/v1/memories", params={"subject": "ops"}).json()["memories"]
    assert [m["content"] for m in listed] == [text]


def test_openapi_document_and_health(door):
    with door.client() as c:
        assert c.get("/v1/health").json() == {"ok": True}
        doc = c.get("/openapi.json").json()
    paths = doc["paths"]
    for path in ("/v1/memories", "/v1/memories/{ref}", "/v1/search", "/v1/recall",
                 "/v1/sessions/{session_id}/messages", "/v1/documents/ask",
                 "/v1/admin/maintenance"):
        assert path in paths
    schema = doc["components"]["schemas"]["SearchIn"]
    assert schema["properties"]["k"]["minimum"] == 1
    assert schema["additionalProperties"] is False
    search = paths["/v1/search"]["post"]["responses"]
    assert search["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/SearchOut")
    assert search["429"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorOut")
    memory = doc["components"]["schemas"]["MemoryOut"]
    assert {"id", "content", "uri", "subject", "version"} <= set(memory["required"])


def test_no_cors_headers_unless_configured(door, keys):
    with door.client(keys["acme"]) as c:
        r = c.options("/v1/search", headers={"Origin": "https://evil.example",
                                             "Access-Control-Request-Method": "POST"})
        assert "access-control-allow-origin" not in r.headers
        r = c.get("/v1/whoami", headers={"Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in r.headers


def test_keys_never_appear_in_logs_or_error_bodies(door, keys, caplog):
    caplog.set_level(logging.DEBUG)
    secrets = [keys[name] for name in keys] + [keys[n].split("_", 2)[2] for n in keys]
    bodies = []
    with door.client() as c:
        for name in keys:
            key = keys[name]
            h = {"Authorization": f"Bearer {key}"}
            bodies.append(c.get("/v1/whoami", headers=h).text)
            bodies.append(c.post("/v1/search", headers=h, content=b"{bad").text)
            bodies.append(c.post("/v1/memories", headers=h,
                                 json={"source_id": "t1", "content": "x", "api_key": key}).text)
            bodies.append(c.post("/v1/memories", headers=h,
                                 json={"source_id": "t1", "content": key}).text)
            bodies.append(c.get(f"/v1/memories/{key}", headers=h).text)
            bodies.append(c.get("/v1/whoami", headers={"Authorization": f"Bearer {key}x"}).text)
    server_side = [r for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))]
    logged = "\n".join(f"{r.name} {r.getMessage()}" for r in server_side)
    assert "uvicorn.access" in logged, "the server logged nothing: the check would be empty"
    for secret in secrets:
        assert secret not in logged
        for body in bodies:
            assert secret not in body, body


def test_remember_extracts_memories_without_an_llm(door, keys):
    with door.client(keys["alice"]) as c:
        r = c.post("/v1/remember", json={"messages": [
            {"role": "user", "content": "I prefer window seats on long flights."},
            {"role": "user", "content": "记住：我每天早上六点跑步。"}], "turn_id": "turn-9"})
        assert r.status_code == 200, r.text
        listed = c.get("/v1/memories", params={"limit": 200}).text
    assert "window seats" in listed and "跑步" in listed


def test_open_stores_are_bounded(door, keys):
    state = door.app.state.door
    saved = state.stores.max_open
    state.stores.max_open = 2
    try:
        for name in ("acme", "alice", "globex", "acme", "globex", "alice"):
            with door.client(keys[name]) as c:
                assert c.get("/v1/memories", params={"limit": 1}).status_code == 200
            assert state.open_stores <= 2
    finally:
        state.stores.max_open = saved


def test_cors_only_for_the_configured_origin(module_db, embedder, keys):
    with app_login(module_db) as app_dsn:
        settings = ServerSettings(dsn=app_dsn, embedder=embedder,
                                  cors_origins=("https://app.example",))
        with running_door(settings) as cors_door, cors_door.client(keys["acme"]) as c:
            ok = c.options("/v1/search", headers={"Origin": "https://app.example",
                                                  "Access-Control-Request-Method": "POST"})
            assert ok.headers["access-control-allow-origin"] == "https://app.example"
            other = c.options("/v1/search", headers={"Origin": "https://evil.example",
                                                     "Access-Control-Request-Method": "POST"})
            assert "access-control-allow-origin" not in other.headers


def test_without_fastapi_the_error_names_the_extra(monkeypatch):
    import sys

    from memdb.core.errors import MissingDependency
    from memdb.http import create_app

    monkeypatch.setitem(sys.modules, "fastapi", None)
    with pytest.raises(MissingDependency, match=r"memdb\[http\]"):
        create_app(ServerSettings())


def test_memdb_serve_command_prints_where_it_listens_and_serves(module_db, keys):
    """`memdb serve --port 0 --json` in a process of its own (the console command), the data
    path an application login from $MEMDB_DSN."""
    import httpx

    with app_login(module_db) as app_dsn, door_process(module_db, app_dsn) as running:
        where = running.where
        assert where["url"].startswith("http://127.0.0.1:") and where["mcp"] is None
        me = httpx.get(where["url"] + "/v1/whoami",
                       headers={"Authorization": f"Bearer {keys['alice']}"})
        assert me.json()["subject"] == "alice"
    assert keys["alice"] not in running.output
    assert "GET /v1/whoami" in running.output  # (uvicorn's access log)


def test_key_checks_survive_dropped_connections(door, keys, module_db):
    """The server ends every connection of the door (a restart, an idle timeout): the next
    requests still authenticate and work (the pools replace dead connections)."""
    import psycopg

    with door.client(keys["globex"]) as c:
        assert c.get("/v1/whoami").status_code == 200
        # the 5 s timeout waits for the backends to exit (pg_terminate_backend only signals)
        with psycopg.connect(module_db, autocommit=True) as admin:
            ended = admin.execute("SELECT count(pg_terminate_backend(pid, 5000))"
                                  " FROM pg_stat_activity WHERE datname = current_database()"
                                  " AND pid <> pg_backend_pid() AND application_name LIKE 'memdb%'"
                                  ).fetchone()[0]
        assert ended >= 1
        assert c.get("/v1/whoami").status_code == 200
        assert c.get("/v1/memories", params={"limit": 1}).status_code == 200


def test_api_docs_work_offline_and_declare_the_bearer_scheme(door):
    """/docs and /redoc load their scripts and styles from this server (the fastapi-offline
    package), not from a CDN, and never call Swagger's online validator; the OpenAPI document
    declares the bearer scheme every /v1 route needs."""
    import re

    with door.client() as c:
        for page in ("/docs", "/redoc"):
            html = c.get(page)
            assert html.status_code == 200
            sources = re.findall(r'(?:src|href)="([^"]+)"', html.text)
            assert sources and all(s.startswith("/docs/static/") for s in sources), sources
            assert "cdn.jsdelivr" not in html.text and "unpkg" not in html.text
            for source in sources:
                asset = c.get(source)
                assert asset.status_code == 200 and len(asset.content) > 1000, source
        assert '"validatorUrl": null' in c.get("/docs").text
        spec = c.get("/openapi.json").json()
    schemes = spec["components"]["securitySchemes"]
    assert schemes["apiKey"] == {**schemes["apiKey"], "type": "http", "scheme": "bearer"}
    search = spec["paths"]["/v1/search"]["post"]
    assert search["security"] == [{"apiKey": []}]
    assert "security" not in spec["paths"]["/v1/health"]["get"]
    body = spec["components"]["schemas"]["SearchIn"]["properties"]
    assert body["k"]["maximum"] == 1000 and body["subject"]["maxLength"] == 256
