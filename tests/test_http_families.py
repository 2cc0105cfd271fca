"""The HTTP door's family endpoints (graph, review, traces, subjects, meta) and its LLM paths
(remember, documents ask), from a real HTTP client (httpx) against uvicorn on a loopback port,
the data path an application login (like production): each family in Chinese and English,
and a key of tenant A aimed at tenant B's rows through every one of them (nothing seen,
nothing changed)."""

from __future__ import annotations

import json
import time

import psycopg
import pytest

from tests.canned_openai import CannedOpenAI, Delay, Reply
from tests.http_server import make_keys, served_door

pytest.importorskip("fastapi")

B_GRAPH = "Hank works with Gunter on the launch codes."
B_RULE = "Always lock the launch codes in the blue binder."
B_META = "I am Globex's vault keeper and never reveal the launch codes."
B_WORDS = ("Gunter", "launch codes", "blue binder", "vault keeper")


@pytest.fixture(scope="module")
def keys(module_db, embedder):
    return make_keys(module_db, embedder)


@pytest.fixture(scope="module")
def door(module_db, embedder, keys):
    with served_door(module_db, embedder) as running:
        yield running


def _propose(dsn: str, tenant: str, subject: str, content: str) -> str:
    """A pending review entry, as sedimentation or task_end would propose it."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        return str(conn.execute(
            "INSERT INTO memdb.review_queue (tenant, subject, content, content_hash, reason)"
            " VALUES (%s, %s, %s, memdb.content_hash(%s), 'rule') RETURNING id",
            (tenant, subject, content, content)).fetchone()[0])


def _counts(dsn: str, tenant: str) -> dict[str, int]:
    """Rows of a tenant per table (as the admin), to show nothing of it changed."""
    tables = ("memories", "memory_history", "review_queue", "retrieval_traces", "entities",
              "entity_mentions", "entity_relations")
    with psycopg.connect(dsn) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM memdb.{t} WHERE tenant = %s",
                                (tenant,)).fetchone()[0] for t in tables}


@pytest.fixture(scope="module")
def globex(door, keys, module_db):
    """Tenant B's rows in every family: a linked memory (graph), a pending review entry, a
    recall trace, an agent's meta memory, all of subject bob (the meta of agent:vault)."""
    with door.client(keys["globex"]) as b:
        added = b.post("/v1/memories", json={"content": B_GRAPH, "subject": "bob",
                                             "source_id": "t1"})
        assert added.status_code == 201, added.text
        mid = added.json()["id"]
        linked = b.post("/v1/graph/link", json={"memory_ids": [mid]})
        assert linked.status_code == 200 and linked.json()["linked"] == 1, linked.text
        recalled = b.post("/v1/recall", json={"query": "who works with Gunter?",
                                              "filter": {"subject": "bob"}, "explain": True})
        assert recalled.status_code == 200, recalled.text
        trace_id = recalled.json()["trace_id"]
        assert trace_id
        meta = b.post("/v1/meta", json={"content": B_META, "agent": "vault"})
        assert meta.status_code == 201, meta.text
    review_id = _propose(module_db, "globex", "bob", B_RULE)
    return {"memory": mid, "trace": trace_id, "review": review_id,
            "counts": _counts(module_db, "globex")}


# -- graph ----------------------------------------------------------------------------------
def test_graph_link_neighbors_and_search_in_chinese_and_english(door, keys):
    with door.client(keys["acme"]) as c:
        zh = c.post("/v1/memories", json={"content": "张三和李四是同事。", "subject": "zhang",
                                          "source_id": "t1"}).json()["id"]
        en = c.post("/v1/memories", json={"content": "Carol works with Dave at Initech.",
                                          "subject": "carol", "source_id": "t1"}).json()["id"]
        linked = c.post("/v1/graph/link", json={"memory_ids": [zh, en]})
        assert linked.status_code == 200, linked.text
        assert linked.json()["linked"] == 2 and linked.json()["paths"] == {"heuristic": 2}
        assert linked.json()["relations"] == 2
        around = c.get("/v1/graph/neighbors", params={"entity": "李四"})
        assert around.status_code == 200, around.text
        assert {(r["from"], r["type"], r["to"]) for r in around.json()["relations"]} == {
            ("张三", "works_with", "李四")}
        dave = c.get("/v1/graph/neighbors", params={"entity": "Dave", "hops": 2}).json()
        assert dave["entities"][0]["subject"] == "carol"
        assert dave["relations"][0]["from"] == "Carol"
        hits = c.post("/v1/graph/search", json={"query": "谁和李四一起工作？",
                                                "filter": {"subject": "zhang"},
                                                "explain": True})
        assert hits.status_code == 200, hits.text
        assert hits.json()["hits"][0]["memory"]["id"] == zh
        assert "李四" in hits.json()["hits"][0]["details"]["graph_entities"]
        assert "sql" in hits.json()["explain"]
        only_graph = c.post("/v1/graph/search", json={"query": "who works with Dave?",
                                                      "routes": ["graph"]}).json()
        assert [h["memory"]["id"] for h in only_graph["hits"]] == [en]
        # errors: an unknown entity, hops out of range, an unknown route, k over the cap
        missing = c.get("/v1/graph/neighbors", params={"entity": "Nobody Atall"})
        assert missing.status_code == 404 and missing.json()["error"]["type"] == "NotFound"
        # out of the declared range (memdb.core.ops.families): 400 InvalidInput, as at every door
        far = c.get("/v1/graph/neighbors", params={"entity": "李四", "hops": 9})
        assert far.status_code == 400 and "hops must be within 1–4" in far.json()["error"][
            "message"]
        bad = c.post("/v1/graph/search", json={"query": "x", "routes": ["telepathy"]})
        assert bad.status_code == 400 and "routes must be one of vector, bm25" in bad.text
        assert c.post("/v1/graph/search", json={"query": "x", "k": 51}).status_code == 400
        assert c.post("/v1/graph/link", json={"memory_ids": ["not-a-uuid"]}
                      ).status_code == 400
        # the CLI's options are the route's too (memdb.core.ops.families: GRAPH_LINK, GRAPH_SEARCH)
        relinked = c.post("/v1/graph/link", json={"heuristic": True, "subject": "nobody"})
        assert relinked.status_code == 200 and relinked.json()["linked"] == 0, relinked.text
        assert c.post("/v1/graph/link", json={"timeout": 0}).status_code == 400
        by_subject = c.post("/v1/graph/search", json={"query": "张三的同事是谁？",
                                                      "subject": "nobody"})
        assert by_subject.status_code == 200 and by_subject.json()["hits"] == []
        clash = c.post("/v1/graph/search", json={"query": "x", "subject": "a",
                                                 "filter": {"subject": "b"}})
        assert clash.status_code == 400 and "disagree" in clash.text


def test_subject_key_links_and_sees_only_its_subject_in_the_graph(door, keys):
    with door.client(keys["acme"]) as team:
        other = team.post("/v1/memories", json={"content": "Erin works with Frank.",
                                                "subject": "erin", "source_id": "t1"})
        assert team.post("/v1/graph/link", json={"memory_ids": [other.json()["id"]]}
                         ).json()["linked"] == 1
    with door.client(keys["alice"]) as alice:
        mine = alice.post("/v1/memories", json={"content": "王五在环球公司工作。",
                                                "source_id": "t1"}).json()["id"]
        # erin's memory is not alice's: skipped, not linked
        out = alice.post("/v1/graph/link", json={"memory_ids": [mine, other.json()["id"]]})
        assert out.status_code == 200, out.text
        assert (out.json()["linked"], out.json()["skipped"]) == (1, 1)
        assert alice.get("/v1/graph/neighbors", params={"entity": "环球公司"}
                         ).json()["relations"][0]["from"] == "王五"
        assert alice.get("/v1/graph/neighbors", params={"entity": "Frank"}).status_code == 404


# -- review ---------------------------------------------------------------------------------
def test_review_list_approve_and_reject(door, keys, module_db):
    zh = _propose(module_db, "acme", "alice", "部署前必须先跑完集成测试。")
    en = _propose(module_db, "acme", "alice", "Never deploy on a Friday afternoon.")
    with door.client(keys["alice"]) as c:
        pending = c.get("/v1/review").json()["items"]
        assert {i["id"] for i in pending} >= {zh, en}
        assert {i["content"] for i in pending if i["id"] == zh} == {"部署前必须先跑完集成测试。"}
        approved = c.post(f"/v1/review/{zh}/approve", json={"decided_by": "张经理"})
        assert approved.status_code == 200, approved.text
        memory = c.get(f"/v1/memories/{approved.json()['memory_id']}").json()
        assert memory["content"] == "部署前必须先跑完集成测试。" and memory["category"] == "system"
        rejected = c.post(f"/v1/review/{en}/reject", json={})
        assert rejected.status_code == 200 and rejected.json()["status"] == "rejected"
        decided = {i["id"]: i for i in c.get("/v1/review", params={"status": "all"}
                                             ).json()["items"]}
        assert decided[zh]["status"] == "approved" and decided[zh]["decided_by"] == "张经理"
        assert decided[en]["status"] == "rejected"
        assert zh not in str(c.get("/v1/review").json())
        # deciding twice, an unknown id, a malformed id, an unknown status or field
        twice = c.post(f"/v1/review/{en}/approve", json={})
        assert twice.status_code == 400 and "already rejected" in twice.text
        assert c.post("/v1/review/00000000-0000-0000-0000-000000000000/reject",
                      json={}).status_code == 404
        assert c.post("/v1/review/nope/reject", json={}).status_code == 400
        assert c.get("/v1/review", params={"status": "maybe"}).status_code == 400
        assert c.post(f"/v1/review/{en}/reject", json={"tenant": "x"}).status_code == 422


# -- traces ---------------------------------------------------------------------------------
def test_traces_list_get_stats_purge_and_erase(door, keys):
    with door.client(keys["acme"]) as c:
        c.post("/v1/memories", json={"content": "Grace prefers jasmine tea.",
                                     "subject": "grace", "source_id": "t1"})
        c.post("/v1/memories", json={"content": "格蕾丝住在上海。", "subject": "grace",
                                     "source_id": "t1"})
        ids = []
        for query in ("what tea does Grace like?", "格蕾丝住在哪里？"):
            r = c.post("/v1/recall", json={"query": query, "filter": {"subject": "grace"},
                                           "explain": True})
            assert r.status_code == 200, r.text
            ids.append(r.json()["trace_id"])
        listed = c.get("/v1/traces", params={"limit": 10}).json()["traces"]
        assert [t["id"] for t in listed[:2]] == ids[::-1]
        one = c.get(f"/v1/traces/{ids[1]}")
        assert one.status_code == 200 and one.json()["query"] == "格蕾丝住在哪里？"
        assert one.json()["subject"] == "grace" and one.json()["chosen_ids"]
        stats = c.get("/v1/traces/stats", params={"since_hours": 1}).json()
        assert stats["searches"] >= 2 and stats["p50_ms"] > 0, stats
        # since_hours > 0 (an exclusive minimum, declared once): 400 InvalidInput, as in the CLI
        zero = c.get("/v1/traces/stats", params={"since_hours": 0})
        assert zero.status_code == 400 and "since_hours must be within > 0" in zero.text
        assert c.post("/v1/traces/purge", json={"older_than_days": 30}).json() == {"purged": 0}
        assert c.post("/v1/traces/purge", json={"older_than_days": -1}).status_code == 400
        assert c.post("/v1/traces/erase", json={"subject": "grace"}).json()["erased"] >= 2
        gone = c.get(f"/v1/traces/{ids[0]}")
        assert gone.status_code == 404 and gone.json()["error"]["type"] == "NotFound"
        assert c.get("/v1/traces/not-a-uuid").status_code == 400
        assert c.get("/v1/traces", params={"limit": 201}).status_code == 400
        c.post("/v1/recall", json={"query": "Grace tea", "filter": {"subject": "grace"}})
        assert c.post("/v1/traces/purge", json={"older_than_days": 0}).json()["purged"] >= 1
    with door.client(keys["alice"]) as alice:
        r = alice.post("/v1/traces/erase", json={"subject": "grace"})
        assert r.status_code == 403 and r.json()["error"]["type"] == "Forbidden"


# -- subjects -------------------------------------------------------------------------------
def test_subject_summary_export_and_forget_with_confirmation(door, keys):
    with door.client(keys["acme"]) as c:
        for text, category in (("Heidi is allergic to peanuts.", "entities"),
                               ("海蒂喜欢爬山。", "preferences")):
            assert c.post("/v1/memories", json={"content": text, "subject": "heidi",
                                                "category": category, "source_id": "t1"}
                          ).status_code == 201
        summary = c.get("/v1/subjects/summary", params={"subject": "heidi"}).json()
        assert summary["total"] == 2 and summary["by_category"] == {"entities": 1,
                                                                    "preferences": 1}
        exported = c.get("/v1/subjects/heidi/export")
        assert exported.status_code == 200, exported.text
        body = exported.json()
        assert body["subject"] == "heidi" and body["counts"]["memories"] == 2
        contents = {m["content"] for m in body["export"]["tables"]["memories"]}
        assert contents == {"Heidi is allergic to peanuts.", "海蒂喜欢爬山。"}
        # no confirmation, a wrong one, one in another case: 422/400 and nothing erased
        assert c.post("/v1/subjects/heidi/forget", json={}).status_code == 422
        for wrong in ("alice", "Heidi", "heidi "):
            r = c.post("/v1/subjects/heidi/forget", json={"confirm": wrong})
            assert r.status_code == 400 and "confirm" in r.json()["error"]["message"]
        assert c.get("/v1/subjects/summary", params={"subject": "heidi"}).json()["total"] == 2
        dry = c.post("/v1/subjects/heidi/forget", json={"confirm": "heidi", "dry_run": True})
        assert dry.status_code == 200 and dry.json()["counts"]["memories"] == 2
        assert dry.json()["dry_run"] is True
        assert c.get("/v1/subjects/summary", params={"subject": "heidi"}).json()["total"] == 2
        done = c.post("/v1/subjects/heidi/forget", json={"confirm": "heidi"})
        assert done.status_code == 200 and done.json()["counts"]["memories"] == 2
        assert done.json()["exported_to"] is None
        assert c.get("/v1/memories", params={"subject": "heidi"}).json()["memories"] == []
        assert c.get("/v1/subjects/heidi/export").json()["counts"]["memories"] == 0
        # Chinese subject names travel in the path
        c.post("/v1/memories", json={"content": "小明是工程师。", "subject": "小明",
                                     "source_id": "t1"})
        assert c.get("/v1/subjects/小明/export").json()["counts"]["memories"] == 1
        assert c.post("/v1/subjects/小明/forget", json={"confirm": "小明"}
                      ).json()["counts"]["memories"] == 1


def test_subject_key_exports_and_forgets_only_itself(door, keys):
    with door.client(keys["acme"]) as team:
        team.post("/v1/memories", json={"content": "Ivan keeps bees.", "subject": "ivan",
                                        "source_id": "t1"})
    with door.client(keys["alice"]) as alice:
        alice.post("/v1/memories", json={"content": "Alice keeps a cat.", "source_id": "t1"})
        for r in (alice.get("/v1/subjects/ivan/export"),
                  alice.post("/v1/subjects/ivan/forget", json={"confirm": "ivan"})):
            assert r.status_code == 403 and "bees" not in r.text, r.text
        assert alice.get("/v1/subjects/summary", params={"subject": "ivan"}).json()["total"] == 0
        mine = alice.get("/v1/subjects/alice/export").json()
        assert "Alice keeps a cat." in json.dumps(mine, ensure_ascii=False)
        assert "bees" not in json.dumps(mine)
    with door.client(keys["acme"]) as team:
        assert team.get("/v1/subjects/summary", params={"subject": "ivan"}).json()["total"] == 1


# -- meta -----------------------------------------------------------------------------------
def test_meta_add_and_read_in_chinese_and_english(door, keys):
    with door.client(keys["acme"]) as c:
        persona = c.post("/v1/meta", json={"content": "我是小助手，回答简洁。", "agent": "helper"})
        assert persona.status_code == 201, persona.text
        assert persona.json()["created"] is True
        limit = c.post("/v1/meta", json={"content": "Never give legal advice.",
                                         "aspect": "limits", "agent": "helper",
                                         "importance": 0.9})
        assert limit.status_code == 201, limit.text
        # the aspect is checked by the declaration (memdb.core.ops.families.META_ADD), as in the CLI
        mood = c.post("/v1/meta", json={"content": "心情不错。", "aspect": "mood"})
        assert mood.status_code == 400 and "aspect must be one of persona" in mood.text
        doc = c.get("/v1/meta", params={"agent": "helper"}).json()
        assert [i["content"] for i in doc["persona"]] == ["我是小助手，回答简洁。"]
        assert [i["content"] for i in doc["limits"]] == ["Never give legal advice."]
        memory = c.get(f"/v1/memories/{persona.json()['id']}").json()
        assert memory["subject"] == "agent:helper" and "meta:persona" in memory["tags"]
        assert c.get("/v1/meta", params={"agent": "nobody"}).json()["persona"] == []
        bad = c.post("/v1/meta", json={"content": "x", "aspect": "mood"})
        assert bad.status_code == 400 and "aspect" in bad.text
        assert c.post("/v1/meta", json={"content": "x", "subject": "bob"}).status_code == 422
    with door.client(keys["alice"]) as alice:  # a subject key: agents' rows are not alice's
        r = alice.post("/v1/meta", json={"content": "I am alice's helper.", "agent": "helper"})
        assert r.status_code == 403 and r.json()["error"]["type"] == "Forbidden"
        assert alice.get("/v1/meta", params={"agent": "helper"}).json()["persona"] == []


# -- tenant isolation through every family endpoint -----------------------------------------
def _attempts(g: dict) -> list[tuple[str, str, dict | None, dict | None]]:
    """(method, path, query, body): each new endpoint aimed at tenant B's rows."""
    return [
        ("POST", "/v1/graph/link", None, {"memory_ids": [g["memory"]]}),
        ("POST", "/v1/graph/link", None, {"subject": "bob"}),
        ("GET", "/v1/graph/neighbors", {"entity": "Gunter"}, None),
        ("GET", "/v1/graph/neighbors", {"entity": "Hank", "hops": 4}, None),
        ("POST", "/v1/graph/search", None, {"query": "who works with Gunter?",
                                            "entities": ["Gunter", "Hank"]}),
        ("POST", "/v1/graph/search", None, {"query": "Hank", "routes": ["graph"],
                                            "filter": {"subject": "bob"}}),
        ("GET", "/v1/review", {"status": "all"}, None),
        ("GET", "/v1/review", {"subject": "bob"}, None),
        ("POST", f"/v1/review/{g['review']}/approve", None, {"decided_by": "acme"}),
        ("POST", f"/v1/review/{g['review']}/reject", None, {}),
        ("GET", "/v1/traces", {"limit": 200}, None),
        ("GET", f"/v1/traces/{g['trace']}", None, None),
        ("GET", "/v1/traces/stats", None, None),
        ("POST", "/v1/traces/erase", None, {"subject": "bob"}),
        ("POST", "/v1/traces/purge", None, {"older_than_days": 0}),
        ("GET", "/v1/subjects/summary", {"subject": "bob"}, None),
        ("GET", "/v1/subjects/summary", None, None),
        ("GET", "/v1/subjects/bob/export", None, None),
        ("GET", "/v1/subjects/agent:vault/export", None, None),
        ("POST", "/v1/subjects/bob/forget", None, {"confirm": "bob"}),
        ("POST", "/v1/subjects/agent:vault/forget", None, {"confirm": "agent:vault"}),
        ("GET", "/v1/meta", {"agent": "vault"}, None),
    ]


@pytest.mark.parametrize("who", ["acme", "alice"])
def test_tenant_a_cannot_read_or_change_tenant_b_through_any_family(door, keys, globex,
                                                                      module_db, who):
    """Each request of tenant A (a tenant-wide key and a subject key) aimed at tenant B's
    graph, review entry, trace, subject and meta memory sees nothing of B (refused, not
    found, or empty) and B's rows are the same afterwards, row for row."""
    with door.client(keys[who]) as a:
        for method, path, params, body in _attempts(globex):
            r = a.request(method, path, params=params, json=body)
            assert r.status_code in (200, 400, 403, 404), (method, path, r.text)
            # B's words the request itself does not name (a 404 may echo the name asked for)
            named = json.dumps([path, params, body], ensure_ascii=False)
            for word in B_WORDS + ("Hank", "vault keeper"):
                if word not in named:
                    assert word not in r.text, (method, path, r.status_code, r.text)
            if "/neighbors" in path:
                assert r.status_code == 404, (method, path, r.text)
            if path.startswith(("/v1/review/", "/v1/traces/" + globex["trace"])):
                assert r.status_code == 404, (method, path, r.text)
            if r.status_code == 200 and path.endswith("/export"):
                assert set(r.json()["counts"].values()) == {0}, r.text
            if r.status_code == 200 and path.endswith("/forget"):
                assert set(r.json()["counts"].values()) == {0}, r.text
            if r.status_code == 200 and path == "/v1/graph/link":
                assert r.json()["linked"] == 0, r.text
            if r.status_code == 200 and path == "/v1/traces/erase":
                assert r.json() == {"erased": 0}
        # a write of A's own under B's agent name stays in A
        r = a.post("/v1/meta", json={"content": "I am acme's vault keeper.", "agent": "vault"})
        assert r.status_code in (201, 403), r.text
    assert _counts(module_db, "globex") == globex["counts"]
    with door.client(keys["globex"]) as b:
        assert b.get(f"/v1/memories/{globex['memory']}").json()["content"] == B_GRAPH
        assert b.get("/v1/graph/neighbors", params={"entity": "Gunter"}
                     ).json()["relations"][0]["from"] == "Hank"
        pending = b.get("/v1/review").json()["items"]
        assert [(i["id"], i["status"]) for i in pending] == [(globex["review"], "pending")]
        assert b.get(f"/v1/traces/{globex['trace']}").status_code == 200
        meta = b.get("/v1/meta", params={"agent": "vault"}).json()
        assert [i["content"] for i in meta["persona"]] == [B_META]
        assert b.get("/v1/subjects/summary", params={"subject": "bob"}).json()["total"] == 1


def test_openapi_lists_the_family_endpoints(door):
    with door.client() as c:
        doc = c.get("/openapi.json").json()
    for path in ("/v1/graph/link", "/v1/graph/neighbors", "/v1/graph/search", "/v1/review",
                 "/v1/review/{review_id}/approve", "/v1/review/{review_id}/reject",
                 "/v1/traces", "/v1/traces/{trace_id}", "/v1/traces/stats", "/v1/traces/purge",
                 "/v1/traces/erase", "/v1/subjects/summary", "/v1/subjects/{subject}/export",
                 "/v1/subjects/{subject}/forget", "/v1/meta"):
        assert path in doc["paths"], path
    schemas = doc["components"]["schemas"]
    for name in ("GraphLinkIn", "GraphSearchIn", "ReviewDecision", "TracesPurgeIn",
                 "TracesEraseIn", "ForgetSubjectIn", "MetaIn"):
        assert schemas[name]["additionalProperties"] is False, name
    assert "confirm" in schemas["ForgetSubjectIn"]["required"]


def test_admin_key_reaches_no_family(door, keys):
    with door.client(keys["admin"]) as c:
        for path in ("/v1/review", "/v1/traces", "/v1/subjects/summary", "/v1/meta"):
            r = c.get(path)
            assert r.status_code == 403 and r.json()["error"]["type"] == "Forbidden", path


# -- the LLM paths --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def llm_door(module_db, embedder, keys):
    """A second door whose stores have an LLM: $MEMDB_LLM_* pointing at the canned
    OpenAI-compatible server (its script set by each test)."""
    with CannedOpenAI([Reply("{}")]) as api, pytest.MonkeyPatch.context() as env:
        env.setenv("MEMDB_LLM_BASE_URL", api.base_url)
        env.setenv("MEMDB_LLM_MODEL", "canned")
        env.setenv("MEMDB_LLM_API_KEY", "sk-canned-test")
        env.setenv("MEMDB_LLM_TIMEOUT", "20")
        env.setenv("MEMDB_REMEMBER_TIMEOUT", "20")
        with served_door(module_db, embedder) as running:
            yield running, api


def _facts(*facts: dict) -> str:
    return json.dumps({"facts": list(facts)}, ensure_ascii=False)


def test_remember_over_http_takes_the_llm_path(llm_door, keys):
    running, api = llm_door
    api.script = [Reply(_facts(
        {"content": "用户对花生过敏", "category": "entities", "importance": 0.95,
         "source": "user_statement", "action": "add", "reason": "health fact"},
        {"content": "The user lives in Hangzhou", "category": "entities",
         "source": "user_statement", "action": "add", "reason": "home town"}))]
    with running.client(keys["alice"]) as c:
        r = c.post("/v1/remember", json={"messages": [
            {"role": "user", "content": "我对花生过敏。I live in Hangzhou."}],
            "turn_id": "turn-llm"})
        assert r.status_code == 200, r.text
        out = r.json()
        assert (out["path"], out["fallback_reason"]) == ("llm", None), out
        assert [d["outcome"] for d in out["decisions"]] == ["created", "created"]
        listed = c.get("/v1/memories", params={"subject": "alice", "limit": 200}).text
    chat = [q for q in api.requests if q["path"].endswith("/chat/completions")]
    assert chat and "我对花生过敏" in chat[-1]["body"]["messages"][-1]["content"]
    assert chat[-1]["authorization"] == "Bearer sk-canned-test"
    assert "用户对花生过敏" in listed and "The user lives in Hangzhou" in listed


def test_remember_over_http_falls_back_when_the_llm_is_too_slow(llm_door, keys, monkeypatch):
    running, api = llm_door
    monkeypatch.setenv("MEMDB_REMEMBER_TIMEOUT", "0.5")
    api.script = [Delay(3.0, _facts({"content": "too late", "category": "preferences"}))]
    with running.client(keys["alice"]) as c:
        started = time.perf_counter()
        r = c.post("/v1/remember", json={"messages": "I prefer aisle seats on long flights."})
        elapsed = time.perf_counter() - started
        assert r.status_code == 200, r.text
        out = r.json()
        assert out["path"] == "heuristic" and out["fallback_reason"].startswith("timeout"), out
        assert elapsed < 2.5, elapsed
        assert [d["content"] for d in out["decisions"]] == [
            "I prefer aisle seats on long flights."]
        assert "too late" not in c.get("/v1/memories", params={"limit": 200}).text


def test_documents_ask_over_http_answers_from_the_llm(llm_door, keys):
    running, api = llm_door
    api.script = [Reply("API keys are rotated every 90 days [1]. 密钥每九十天轮换一次。")]
    with running.client(keys["acme"]) as c:
        doc = c.post("/v1/documents", json={"documents": [
            {"id": "handbook/keys.md",
             "text": "# Keys\n\nAPI keys are rotated every 90 days by the platform team.\n\n"
                     "# 密钥\n\n密钥每九十天轮换一次。"}]})
        assert doc.status_code == 201, doc.text
        asked = c.post("/v1/documents/ask", json={"question": "How often are API keys rotated?",
                                                  "k": 3})
        assert asked.status_code == 200, asked.text
        out = asked.json()
        assert out["mode"] == "llm", out
        assert out["answer"] == "API keys are rotated every 90 days [1]. 密钥每九十天轮换一次。"
        assert [c_["number"] for c_ in out["citations"]] == [1]
        assert "90 days" in str(out["passages"]) and "90 days" in str(out["citations"])
    asked_llm = [q for q in api.requests if q["path"].endswith("/chat/completions")]
    assert "How often are API keys rotated?" in json.dumps(asked_llm[-1]["body"])
