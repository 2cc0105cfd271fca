"""Ids are no oracle through a confined store (docs/isolation.md, "Ids").

A store confined to subject alice of tenant acme is handed three kinds of id on every path
that takes one: an id that exists in acme under subject bob, one that exists in tenant globex,
and one that exists nowhere. It must not be able to tell them apart: the same outcome, the
same error type and the same message (up to the id itself) for all three, and nothing of bob
or globex changes. Paths: get, update (fields, content), delete, history, the memory's URI,
mark_used, review approve/reject, trace get, graph link, document citations, session reads,
state and deletion by session id. Content is English and Chinese.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from memdb import MemoryStore

ALICE_TEXT = "爱丽丝喜欢绿茶 Alice likes green tea"
BOB_TEXT = "鲍勃的银行卡密码藏在抽屉里 Bob hides his card PIN in the drawer"
GLOBEX_TEXT = "环球公司的发布代码在蓝色文件夹里 Globex launch codes are in the blue binder"


def _outcome(call: Callable[[], Any], ident: str) -> tuple[str, str]:
    try:
        result = call()
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return type(exc).__name__, str(exc).replace(ident, "<id>")
    return "ok", repr(result).replace(ident, "<id>")


def _review_item(fresh_db: str, tenant: str, subject: str, text: str) -> str:
    import psycopg

    with psycopg.connect(fresh_db, autocommit=True) as conn:
        return str(conn.execute(
            "INSERT INTO memdb.review_queue (tenant, subject, content, content_hash)"
            " VALUES (%s, %s, %s, sha256(convert_to(%s, 'UTF8'))) RETURNING id",
            (tenant, subject, text, text)).fetchone()[0])


@pytest.fixture
def world(fresh_db, embedder):
    """acme/bob's and globex's memory, review item, trace and session; alice's own memory."""
    acme = MemoryStore(fresh_db, tenant="acme", embedder=embedder, gate=None)
    globex = MemoryStore(fresh_db, tenant="globex", embedder=embedder, gate=None)
    ids: dict[str, dict[str, str]] = {}
    for name, store, subject, text in (("bob", acme, "bob", BOB_TEXT),
                                        ("globex", globex, "alice", GLOBEX_TEXT)):
        memory = store.add(text, subject=subject)
        trace = store.recall(text, k=2, filter={"subject": subject}).trace_id
        store.sessions.append(f"会话-{name}", "user", text, subject=subject)
        ids[name] = {"memory": str(memory.id), "trace": str(trace),
                     "review": _review_item(fresh_db, store.tenant, subject, text),
                     "session": f"会话-{name}"}
    ids["nowhere"] = {"memory": str(uuid.uuid4()), "trace": str(uuid.uuid4()),
                      "review": str(uuid.uuid4()), "session": "会话-nowhere"}
    alice = MemoryStore(fresh_db, tenant="acme", subject="alice", embedder=embedder, gate=None)
    alice.add(ALICE_TEXT)
    yield alice, ids, acme, globex
    for store in (alice, acme, globex):
        store.close()


PATHS: dict[str, Callable[[MemoryStore, dict[str, str]], Any]] = {
    "get": lambda s, i: s.get(i["memory"]),
    "update": lambda s, i: s.update(i["memory"], importance=0.9),
    "update content": lambda s, i: s.update(i["memory"], content="改写 rewritten"),
    "delete": lambda s, i: s.delete(i["memory"]),
    "history": lambda s, i: s.history(i["memory"]),
    "get by uri": lambda s, i: s.get(f"mem://bob/general/{i['memory']}"),
    "mark_used": lambda s, i: s.mark_used([i["memory"]]),
    "review approve": lambda s, i: s.review.approve(i["review"]),
    "review reject": lambda s, i: s.review.reject(i["review"]),
    "trace get": lambda s, i: s.traces.get(i["trace"]),
    "graph link": lambda s, i: s.graph.link([i["memory"]], llm=None).linked,
    "citations": lambda s, i: s.documents.citations([i["memory"]]),
    "session get": lambda s, i: [m.content for m in s.sessions.get(i["session"]).messages],
    "session state": lambda s, i: s.sessions.get_state(i["session"]).version,
    "session delete": lambda s, i: s.sessions.delete(i["session"]),
}


@pytest.mark.parametrize("path", list(PATHS))
def test_another_subjects_or_tenants_id_looks_like_no_id(world, path):
    alice, ids, acme, globex = world
    call = PATHS[path]

    def state() -> tuple:
        bob, other = acme.get(ids["bob"]["memory"]), globex.get(ids["globex"]["memory"])
        return (bob.content, bob.importance, bob.version, bob.valid_to, other.content,
                other.importance, other.version,
                [m.content for m in acme.sessions.get("会话-bob", subject="bob").messages],
                sorted(r.status for r in acme.review.list(None)))

    before = state()
    seen = {}
    for name in ("bob", "globex", "nowhere"):
        key = "session" if path.startswith("session") else (
            "review" if path.startswith("review") else
            "trace" if path.startswith("trace") else "memory")
        seen[name] = _outcome(lambda n=name: call(alice, ids[n]), ids[name][key])
    assert seen["bob"] == seen["nowhere"] == seen["globex"], seen
    assert state() == before  # and nothing of bob's or globex's changed
    assert before[0] == BOB_TEXT and before[4] == GLOBEX_TEXT and before[-1] == ["pending"]
