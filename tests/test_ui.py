"""The memory browser (memdb.ui) from a real HTTP client (httpx) against uvicorn on a loopback
port, the data path logged in as an application login: login/logout with the cookie, a wrong
key, every page in Chinese and English, escaping, cross-tenant 404, review by form (CSRF)."""

from __future__ import annotations

import contextlib
import re
import time
from urllib.parse import quote

import psycopg
import pytest

from tests.app_login import app_login
from tests.http_server import door_process, make_keys, served_door

pytest.importorskip("fastapi")

XSS = "Alice's note <script>alert(1)</script> & more"
ZH = "爱丽丝喜欢喝乌龙茶"
EN = "Alice prefers green tea in the morning"
B_SECRET = "Globex keeps the launch codes in the blue binder"
GRAPH = "Hank works with Gunter on the launch codes."
RULE = "Always answer Alice in Chinese 总是用中文回答"


@pytest.fixture(scope="module")
def keys(module_db, embedder):
    return make_keys(module_db, embedder)


@pytest.fixture(scope="module")
def door(module_db, embedder, keys):
    with served_door(module_db, embedder, ui=True) as running:
        yield running


def _propose(dsn: str, tenant: str, subject: str, content: str) -> str:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return str(conn.execute(
            "INSERT INTO memdb.review_queue (tenant, subject, content, content_hash, reason)"
            " VALUES (%s, %s, %s, memdb.content_hash(%s), 'rule') RETURNING id",
            (tenant, subject, content, content)).fetchone()[0])


@pytest.fixture(scope="module")
def data(door, keys, module_db):
    ids = {}
    with door.client(keys["acme"]) as a:
        for name, content, extra in (("zh", ZH, {"category": "preferences"}),
                                     ("en", EN, {"category": "preferences", "tags": ["tea"]}),
                                     ("xss", XSS, {})):
            r = a.post("/v1/memories", json={"content": content, "subject": "alice",
                                             "source_id": "t1", **extra})
            assert r.status_code == 201, r.text
            ids[name] = r.json()["id"]
        r = a.post("/v1/memories", json={"content": GRAPH, "subject": "alice",
                                         "source_id": "t1"})
        assert r.status_code == 201, r.text
        ids["graph"] = r.json()["id"]
        linked = a.post("/v1/graph/link", json={"memory_ids": [ids["en"], ids["graph"]]})
        assert linked.status_code == 200, linked.text
    with door.client(keys["globex"]) as b:
        r = b.post("/v1/memories", json={"content": B_SECRET, "subject": "bob",
                                         "source_id": "t1"})
        assert r.status_code == 201, r.text
        ids["globex"] = r.json()["id"]
    ids["review"] = _propose(module_db, "acme", "alice", RULE)
    return ids


@contextlib.contextmanager
def _browser(door, key):
    """An httpx client logged in through the form (the cookie jar keeps the key)."""
    with door.client(follow_redirects=True) as c:
        r = c.post("/ui/login", data={"key": key})
        assert r.status_code in (200, 403), r.text
        assert str(r.url).endswith("/ui/")
        yield c


def test_login_sets_an_httponly_strict_cookie_and_logout_clears_it(door, keys, data):
    with door.client() as c:
        assert c.get("/ui/").status_code == 303  # not logged in: to the login form
        r = c.post("/ui/login", data={"key": keys["acme"]})
        assert r.status_code == 303 and r.headers["location"] == "/ui/"
        cookie = r.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
        assert keys["acme"] not in r.headers["location"]
        page = c.get("/ui/")
        assert page.status_code == 200 and "alice" in page.text
        token = re.search(r'name="csrf" value="([0-9a-f]+)"', page.text).group(1)
        assert c.post("/ui/logout", data={"csrf": "0" * 40}).status_code == 403
        out = c.post("/ui/logout", data={"csrf": token})
        assert out.status_code == 303 and 'memdb_ui=""' in out.headers["set-cookie"]
        c.cookies.clear()
        assert c.get("/ui/").status_code == 303


def test_wrong_or_revoked_key_is_refused(door, keys):
    good = keys["acme"]
    with door.client() as c:
        for key in (good[:-1] + ("x" if good[-1] != "x" else "y"), keys["revoked"], ""):
            r = c.post("/ui/login", data={"key": key})
            assert r.status_code == 401 and "not valid" in r.text
            assert "set-cookie" not in r.headers
        c.cookies.set("memdb_ui", keys["revoked"], path="/ui")
        r = c.get("/ui/memories")
        assert r.status_code == 401 and "log in again" in r.text


def test_every_page_renders_in_chinese_and_english(door, keys, data):
    timings = {}
    with _browser(door, keys["acme"]) as c:
        pages = {
            "/ui/": ["alice", "preferences"],
            "/ui/subjects/alice": ["Profile", ZH, EN],
            "/ui/memories?category=preferences": [ZH, EN],
            "/ui/memories?tags=tea": [EN],
            "/ui/search?q=green+tea": [EN, "Score", "Plan", "vector rank"],
            "/ui/search?q=乌龙茶": [ZH],
            f"/ui/memories/{data['zh']}": [ZH, "History", "insert"],
            "/ui/review": [RULE, "Approve"],
            "/ui/maintenance": ["dry run"],
            "/ui/graph?entity=Alice": ["Entity graph", "is in the entity graph", EN],
        }
        for url, expected in pages.items():
            t0 = time.perf_counter()
            r = c.get(url)
            timings[url] = (time.perf_counter() - t0) * 1000
            assert r.status_code == 200, (url, r.text)
            assert r.headers["content-type"].startswith("text/html; charset=utf-8")
            assert '<html lang="en">' in r.text and "<script" not in r.text.replace(
                "&lt;script", "")
            for want in expected:
                assert want in r.text, (url, want)
        assert "lang=\"zh\"" in c.get(f"/ui/memories/{data['zh']}").text
        assert "Alice" not in c.get("/ui/memories?tags=nosuchtag").text.split("Filter")[-1]
    print("page render ms:", {k: round(v, 1) for k, v in timings.items()})


def test_memory_text_is_escaped(door, keys, data):
    with _browser(door, keys["acme"]) as c:
        for url in ("/ui/memories", f"/ui/memories/{data['xss']}", "/ui/subjects/alice"):
            r = c.get(url)
            assert "<script>alert(1)</script>" not in r.text, url
            assert "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text, url
        assert "script-src" not in c.get("/ui/").headers["content-security-policy"]


def test_memory_page_shows_the_supersede_chain_and_history(door, keys):
    texts = ["我喜欢喝咖啡", "I drink green tea now", "我现在喜欢喝乌龙茶"]
    ids = []
    with door.client(keys["acme"]) as a:
        for i, content in enumerate(texts):
            r = a.post("/v1/memories", json={"content": content, "subject": "carol",
                                             "category": "preferences", "norm_key": "drink",
                                             "source_id": f"c{i}"})
            assert r.status_code == 201 and r.json()["outcome"] == (
                "superseded" if i else "created"), r.text
            ids.append(r.json()["id"])
        assert a.patch(f"/v1/memories/{ids[2]}", json={"tags": ["tea"], "reason": "标签"}
                       ).status_code == 200
    with _browser(door, keys["acme"]) as c:
        for mid in ids:  # each version's page shows the whole chain, oldest first
            page = c.get(f"/ui/memories/{mid}").text
            chain = page[page.index("Versions"):page.index("History")]
            assert [chain.index(t) for t in texts] == sorted(chain.index(t) for t in texts)
            assert f'href="/ui/memories/{mid}"' not in chain  # itself: not a link
        newest = c.get(f"/ui/memories/{ids[2]}").text
        history = newest[newest.index("History"):]
        assert "insert" in history and "update" in history and "标签" in history


def test_maintenance_dry_run_says_what_would_go_and_why(door, keys, module_db):
    faint, brief = "一条几乎不重要的笔记 faint note", "The parking ticket expires soon"
    with door.client(keys["acme"]) as a:
        r = a.post("/v1/memories", json={"content": faint, "subject": "dora",
                                         "importance": 0.05, "source_id": "m1"})
        assert r.status_code == 201, r.text
        r = a.post("/v1/memories", json={"content": brief, "subject": "dora",
                                         "ttl": 3 * 86400, "source_id": "m2"})
        assert r.status_code == 201, r.text
    with _browser(door, keys["acme"]) as c:
        page = c.get("/ui/maintenance").text
    gone = page[page.index("Would be forgotten"):page.index("Expiring")]
    assert faint in gone and "importance below 0.1" in gone and brief not in gone
    assert brief in page[page.index("Expiring"):page.index("The pass")]
    with door.client(keys["acme"]) as a:  # a dry run: still there
        assert faint in a.get("/v1/memories", params={"subject": "dora"}).text


def test_entity_graph_is_drawn_as_svg(door, keys, data):
    with _browser(door, keys["acme"]) as c:
        r = c.get("/ui/graph", params={"entity": "Hank"})
        assert r.status_code == 200
        svg = r.text[r.text.index("<svg"):r.text.index("</svg>")]
        assert ">Hank</text>" in svg and ">Gunter</text>" in svg and "<line" in svg
        memory = c.get(f"/ui/memories/{data['graph']}").text
        assert 'href="/ui/graph?entity=Hank"' in memory  # its entity links
        assert c.get("/ui/graph", params={"entity": "Hank", "hops": "x"}).status_code == 400


def _visible(page: str) -> str:
    """The page without its collapsed <details> blocks (the raw JSON)."""
    return re.sub(r"<details>.*?</details>", "", page, flags=re.S)


def test_search_details_are_a_table_with_rounded_numbers(door, keys, data):
    """Each hit's details: a labelled table (vector rank, BM25 score, fused, multiplier),
    numbers to 4 significant digits, not raw JSON (``1.3333333333333333``); the raw details
    and the plan stay available, collapsed."""
    with _browser(door, keys["acme"]) as c:
        for query, want in (("green tea morning", EN), ("乌龙茶", ZH)):
            page = c.get("/ui/search", params={"q": query}).text
            shown = _visible(page)
            assert want in shown
            for label in ("<th>vector rank</th>", "<th>vector score</th>", "<th>fused</th>",
                          "<th>multiplier</th>"):
                assert label in shown, (query, label)
            assert "<th>BM25 rank</th>" in shown and "<th>BM25 score</th>" in shown
            assert not re.search(r"\d\.\d{6,}", shown), query  # no 16-digit floats shown
            assert "&quot;fused&quot;" not in shown and "{" not in shown.split("<main>")[1]
            raw = page[page.index("<details>"):]
            assert "<summary>raw</summary>" in raw and "&quot;multiplier&quot;" in raw
            assert "<summary>the plan as JSON" in page and "&quot;sql&quot;" in page
            score = re.search(r"<th>multiplier</th><td>([^<]*)</td>", shown).group(1)
            assert len(score.replace(".", "").lstrip("0")) <= 4, score


def _field(page: str, name: str) -> str:
    return re.search(rf"<tr><td>{name}</td><td>(.*?)</td></tr>", page).group(1)


def test_memory_page_says_who_created_it(door, keys, data, module_db):
    """"Created by": the memory's created_by, which a write over HTTP now sets to the actor
    history records; a memory whose created_by is empty (written before) shows its first
    history entry's actor, saying so."""
    with door.client(keys["acme"]) as a:
        actor = a.get(f"/v1/history/{data['en']}").json()["history"][0]["actor"]
        assert actor and a.get(f"/v1/memories/{data['en']}").json()["created_by"] == actor
        r = a.post("/v1/memories", json={"content": "老照片：张伟在 2019 年去过柏林",
                                         "subject": "erin", "source_id": "t9"})
        old = r.json()["id"]
    with psycopg.connect(module_db, autocommit=True) as conn:  # as rows written before
        conn.execute("UPDATE memdb.memories SET created_by = NULL WHERE id = %s", (old,))
    with _browser(door, keys["acme"]) as c:
        assert _field(c.get(f"/ui/memories/{data['en']}").text, "Created by") == actor
        assert _field(c.get(f"/ui/memories/{old}").text, "Created by") == (
            f"{actor} (from history)")


def test_graph_page_without_a_graph_says_how_to_link_one(door, keys, data):
    """A tenant with no entity graph (globex: nothing linked): the page says none is linked
    and how to link one, not a bare "no entity named"; it is no error."""
    with _browser(door, keys["globex"]) as c:
        for entity in ("张伟", "Alice"):
            r = c.get("/ui/graph", params={"entity": entity})
            assert r.status_code == 200, r.text
            assert "No entity named" in r.text and f">{entity}</b>" in r.text
            assert "No entity graph has been linked in this tenant yet" in r.text
            for how in ("memdb graph link", "store.graph.link()", "POST /v1/graph/link"):
                assert how in r.text, how
        assert "memdb graph link" in c.get("/ui/graph").text


def test_graph_page_lists_entities_when_the_name_is_unknown(door, keys, data):
    """A tenant with a graph: an unknown name (Chinese or English) lists entities that
    exist, as links; a Chinese relation is drawn."""
    with door.client(keys["acme"]) as a:
        r = a.post("/v1/memories", json={"content": "李娜和王强是同事。", "subject": "alice",
                                         "source_id": "t2"})
        assert a.post("/v1/graph/link", json={"memory_ids": [r.json()["id"]]}
                      ).status_code == 200
    with _browser(door, keys["acme"]) as c:
        for entity in ("张伟", "Nobody Here"):
            r = c.get("/ui/graph", params={"entity": entity})
            assert r.status_code == 200 and "No entity named" in r.text
            assert "has been linked" not in r.text
            for name in ("Hank", "Gunter", "李娜"):
                assert f'href="/ui/graph?entity={quote(name)}"' in r.text, name
        drawn = c.get("/ui/graph", params={"entity": "李娜"}).text
        assert ">王强</text>" in drawn and "<svg" in drawn
        assert f'href="/ui/graph?entity={quote("Hank")}"' in c.get("/ui/graph").text


def test_graph_page_works_on_the_demo_data(door, module_db, embedder):
    """`memdb demo` links its memories into the entity graph (heuristic, no LLM), so the
    Graph page shows 张伟 and Alice on the demo data, with the memories that name them."""
    from memdb import MemoryAdmin, MemoryStore, demo
    from memdb.families.keys import create_key

    with MemoryStore(module_db, tenant="demo", embedder=embedder) as store:
        report = demo.run(store)
    assert report["graph"]["linked"] == len(demo.MEMORIES) and report["graph"]["mentions"]
    with MemoryAdmin(module_db) as admin:
        key = create_key(admin, tenant="demo", name="demo browser").key
    with _browser(door, key) as c:
        zh = c.get("/ui/graph", params={"entity": "张伟"})
        assert zh.status_code == 200 and "No entity named" not in zh.text
        assert "is in the entity graph" in zh.text and "金融科技公司" in zh.text
        en = c.get("/ui/graph", params={"entity": "Alice"}).text
        assert "is in the entity graph" in en and "Alice prefers green tea" in en


def test_cross_tenant_memory_is_404(door, keys, data):
    with _browser(door, keys["acme"]) as c:
        r = c.get(f"/ui/memories/{data['globex']}")
        assert r.status_code == 404 and B_SECRET not in r.text
        assert B_SECRET not in c.get("/ui/memories").text
        assert "bob" not in c.get("/ui/").text  # globex's subject
        assert c.get("/ui/subjects/bob").text.count("0 current memories") == 1
        assert B_SECRET not in c.get("/ui/search?q=launch+codes+blue+binder").text
    with _browser(door, keys["globex"]) as b:
        assert B_SECRET in b.get(f"/ui/memories/{data['globex']}").text
        assert b.get(f"/ui/memories/{data['zh']}").status_code == 404


def test_admin_key_chooses_the_tenant_it_browses(door, keys, data):
    with _browser(door, keys["admin"]) as c:
        first = c.get("/ui/memories")  # no tenant chosen yet: the selector
        assert first.status_code == 200 and "Choose a tenant" in first.text
        assert '<option value="acme">' in first.text and '<option value="globex">' in first.text
        token = re.search(r'name="csrf" value="([0-9a-f]+)"', first.text).group(1)
        assert c.post("/ui/tenant", data={"tenant": "globex", "csrf": "0" * 40}
                      ).status_code == 403
        chosen = c.post("/ui/tenant", data={"tenant": "globex", "csrf": token})
        assert chosen.status_code == 200 and "bob" in chosen.text and "alice" not in chosen.text
        assert B_SECRET in c.get(f"/ui/memories/{data['globex']}").text
        assert c.get(f"/ui/memories/{data['zh']}").status_code == 404
        c.post("/ui/tenant", data={"tenant": "acme", "csrf": token})
        assert ZH in c.get(f"/ui/memories/{data['zh']}").text
        assert c.post("/ui/tenant", data={"tenant": " ", "csrf": token}).status_code == 400
    with _browser(door, keys["acme"]) as c:  # a tenant key may not switch
        page = c.get("/ui/").text
        token = re.search(r'name="csrf" value="([0-9a-f]+)"', page).group(1)
        assert "switch tenant" not in page
        assert c.post("/ui/tenant", data={"tenant": "globex", "csrf": token}
                      ).status_code == 403
        c.cookies.set("memdb_ui_tenant", "globex", path="/ui")  # a forged cookie: ignored
        assert B_SECRET not in c.get("/ui/memories").text
        assert c.get(f"/ui/memories/{data['globex']}").status_code == 404


def test_approve_through_the_form_changes_the_review_item(door, keys, data, module_db):
    with _browser(door, keys["acme"]) as c:
        page = c.get("/ui/review").text
        token = re.search(r'name="csrf" value="([0-9a-f]+)"', page).group(1)
        action = f"/ui/review/{data['review']}/approve"
        assert action in page
        forged = c.post(action, data={"csrf": "f" * 40})
        assert forged.status_code == 403
        with door.client() as stranger:  # no cookie: nothing happens
            assert stranger.post(action, data={"csrf": token}).status_code == 401
        with psycopg.connect(module_db) as conn:
            assert conn.execute("SELECT status FROM memdb.review_queue WHERE id = %s",
                                (data["review"],)).fetchone()[0] == "pending"
        done = c.post(action, data={"csrf": token})
        assert done.status_code == 200 and str(done.url).endswith("/ui/review")
        assert RULE not in done.text
        assert RULE in c.get("/ui/review?status=approved").text
    with psycopg.connect(module_db) as conn:
        assert conn.execute("SELECT status FROM memdb.review_queue WHERE id = %s",
                            (data["review"],)).fetchone()[0] == "approved"


def test_ui_is_off_unless_asked(module_db, embedder, keys):
    with served_door(module_db, embedder) as plain:
        with plain.client() as c:
            assert c.get("/ui/login").status_code == 404


def test_memdb_ui_command_serves_the_pages(module_db, keys, data):
    """`memdb ui --port 0 --json` in a process of its own: says where the pages are, serves
    them, logs in with a key, and prints the key nowhere."""
    import httpx

    with app_login(module_db) as app_dsn, door_process(module_db, app_dsn, "ui") as running:
        where = running.where
        assert where["ui"] == where["url"] + "/ui/"
        with httpx.Client(base_url=where["url"], follow_redirects=True) as c:
            assert c.post("/ui/login", data={"key": keys["acme"]}).status_code == 200
            assert ZH in c.get("/ui/memories").text
    assert keys["acme"] not in running.output
    assert "POST /ui/login" in running.output
