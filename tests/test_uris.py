"""mem:// URIs are usable (issue 15, gaps): get/update/delete/history take a memory's URI in
place of its id (the URI must name the row's subject and category; another tenant's or
subject's row is NotFound; a malformed URI is InvalidInput), and list/search/recall filter by
URI prefix, evaluated in SQL (memdb.matches), also from psql."""

from __future__ import annotations

import uuid

import pytest
from cli_helpers import ok_json, run
from psycopg.types.json import Jsonb

from memdb import Filter, InvalidInput, MemoryStore, NotFound


def _seed(store: MemoryStore) -> dict[str, object]:
    ids = {}
    for key, text, subject, category in [
            ("tea", "Alice prefers green tea", "alice", "preferences"),
            ("nuts", "我对花生过敏", "alice", "general"),
            ("bob_tea", "Bob prefers black tea", "bob", "preferences"),
            ("coffee", "爱丽丝每天早上喝咖啡", "alice", "patterns")]:
        ids[key] = store.add(text, subject=subject, category=category).id
    return ids


def test_get_update_delete_history_by_uri(store: MemoryStore) -> None:
    from memdb.core.uris import MemoryUri

    ids = _seed(store)
    memory = store.get(ids["tea"])
    assert memory.uri == f"mem://alice/preferences/{ids['tea']}"
    assert store.get(memory.uri).id == ids["tea"]
    assert store.get(str(MemoryUri("alice", "general", ids["nuts"]))).content == "我对花生过敏"
    updated = store.update(memory.uri, content="Alice prefers jasmine tea")
    assert (updated.id, updated.version) == (ids["tea"], 2)
    assert [e.op for e in store.history(memory.uri)] == ["insert", "update"]
    store.delete(memory.uri, reason="测试删除")
    with pytest.raises(NotFound):
        store.get(memory.uri)
    # the history outlives the memory, and is still found by its URI
    assert [e.op for e in store.history(memory.uri)] == ["insert", "update", "delete"]
    with pytest.raises(NotFound):
        store.delete(memory.uri)


def test_uri_must_name_the_rows_subject_and_category(store: MemoryStore) -> None:
    ids = _seed(store)
    wrong = [f"mem://bob/preferences/{ids['tea']}",         # another subject
             f"mem://alice/general/{ids['tea']}",           # another category
             f"mem://alice/preferences/{uuid.uuid4()}",     # no such id
             f"mem://alice/preferences/{ids['bob_tea']}"]   # bob's row under alice's name
    for uri in wrong:
        for call in (store.get, store.delete, store.history,
                     lambda u: store.update(u, importance=0.9)):
            with pytest.raises(NotFound):
                call(uri)
    assert store.get(ids["tea"]).version == 1 and store.count() == 4  # nothing changed


def test_malformed_uri_is_invalid_input(store: MemoryStore) -> None:
    ids = _seed(store)
    for bad in ("mem://alice/preferences", "mem://alice/preferences/not-a-uuid",
                f"mem:///preferences/{ids['tea']}", f"mem://alice//{ids['tea']}",
                f"mem://alice/preferences/{ids['tea']}/extra", "mem://", "mem://a/b/c\x00",
                "not a uri or an id"):
        with pytest.raises(InvalidInput):
            store.get(bad)
        with pytest.raises(InvalidInput):
            store.delete(bad)
    assert store.count() == 4


def test_another_tenant_or_subject_is_not_found(store: MemoryStore, fresh_db, embedder) -> None:
    ids = _seed(store)
    uri = store.get(ids["tea"]).uri
    with MemoryStore(fresh_db, tenant="acme", embedder=embedder, gate=None) as other:
        with pytest.raises(NotFound):
            other.get(uri)
        with pytest.raises(NotFound):
            other.delete(uri)
    with MemoryStore(fresh_db, subject="bob", embedder=embedder, gate=None) as bob:
        with pytest.raises(NotFound):
            bob.get(uri)
        with pytest.raises(NotFound):
            bob.history(uri)
        assert bob.get(f"mem://bob/preferences/{ids['bob_tea']}").subject == "bob"
    assert store.get(uri).version == 1


def test_subject_with_spaces_and_slashes_is_encoded(store: MemoryStore) -> None:
    from memdb.core.uris import MemoryUri

    mid = store.add("用户 A/B 喜欢乌龙茶", subject="user a/b", category="preferences").id
    uri = store.get(mid).uri
    assert uri == f"mem://user%20a%2Fb/preferences/{mid}"
    assert store.get(uri).subject == "user a/b"
    assert MemoryUri.parse(uri) == MemoryUri("user a/b", "preferences", mid)
    assert [m.id for m in store.list(uri_prefix="mem://user%20a%2Fb/")] == [mid]


def test_custom_uri_is_filtered_but_names_no_other_row(store: MemoryStore) -> None:
    """A uri given on add is stored as is: prefix filters see it, but a URI resolves only to
    the row with the URI's own id."""
    other = uuid.uuid4()
    custom = f"mem://docs/handbook/{other}"
    store.add("The handbook says: ship on Fridays", subject="alice", category="general",
              uri=custom)
    found = store.list(uri_prefix="mem://docs/")
    assert [m.uri for m in found] == [custom] and found[0].id != other
    with pytest.raises(NotFound):
        store.get(custom)
    assert store.get(f"mem://alice/general/{found[0].id}").uri == custom


def test_list_search_recall_by_uri_prefix(store: MemoryStore) -> None:
    ids = _seed(store)
    prefs = store.list(uri_prefix="mem://alice/preferences/")
    assert [m.id for m in prefs] == [ids["tea"]]
    alice = {m.id for m in store.list(uri_prefix="mem://alice/")}
    assert alice == {ids["tea"], ids["nuts"], ids["coffee"]}
    both = {m.id for m in store.list(Filter(uri_prefix=["mem://alice/preferences/",
                                                        "mem://bob/"]))}
    assert both == {ids["tea"], ids["bob_tea"]}
    assert {m.id for m in store.list({"uri_prefix": "mem://bob/"})} == {ids["bob_tea"]}
    hits = store.search("tea", uri_prefix="mem://bob/")
    assert [h.memory.id for h in hits] == [ids["bob_tea"]]
    hits = store.search("花生", uri_prefix="mem://alice/general/")
    assert [h.memory.id for h in hits] == [ids["nuts"]]
    assert all(h.memory.subject == "bob" for h in store.search("tea", uri_prefix="mem://bob/"))
    recalled = store.recall("what tea does Alice like?", uri_prefix="mem://alice/preferences/")
    assert [h.memory.id for h in recalled] == [ids["tea"]]


def test_prefix_is_text_not_a_pattern(store: MemoryStore) -> None:
    """%, _ and quotes in a prefix are plain characters (escaped before LIKE)."""
    a = store.add("note one", subject="a_b", category="general").id
    store.add("note two", subject="axb", category="general")
    pct = store.add("note three", subject="50%off", category="general").id
    store.add("note four", subject="50xoff", category="general")
    quote = store.add("note five", subject="o'brien", category="general").id
    store.add("note six", subject="o", category="general")
    assert [m.id for m in store.list(uri_prefix="mem://a_b/")] == [a]
    assert [m.id for m in store.list(uri_prefix="mem://50%25off/")] == [pct]
    assert [m.id for m in store.list(uri_prefix="mem://50%")] == [pct]
    assert store.list(uri_prefix="mem://%") == []
    assert store.list(uri_prefix="mem://_") == []
    assert [m.id for m in store.list(uri_prefix="mem://o'brien/")] == [quote]
    assert store.list(uri_prefix="mem://o'; DROP TABLE memdb.memories; --") == []
    assert store.list(uri_prefix="mem://a\\") == []
    assert store.count() == 6


def test_bad_prefix_is_invalid_input(store: MemoryStore) -> None:
    for bad in ("", 42, ["mem://a/", ""], [], "x" * 3000, "mem://a\x00"):
        with pytest.raises(InvalidInput):
            store.list(uri_prefix=bad)


def test_uri_prefix_from_sql(store: MemoryStore, raw) -> None:
    """psql users pass the same key in the filter JSON of the SQL functions."""
    ids = _seed(store)
    rows = raw.execute("SELECT id FROM memdb.list_memories('default', %s, 100, 0)",
                       (Jsonb({"uri_prefix": "mem://alice/preferences/"}),)).fetchall()
    assert [r[0] for r in rows] == [ids["tea"]]
    rows = raw.execute(
        "SELECT id FROM memdb.search_hybrid('default', '花生', NULL, 5, %s, "
        "'{\"routes\": [\"bm25\", \"exact\"]}')",
        (Jsonb({"uri_prefix": ["mem://alice/general/"]}),)).fetchall()
    assert [r[0] for r in rows] == [ids["nuts"]]
    rows = raw.execute("SELECT id FROM memdb.search_hybrid('default', '花生', NULL, 5, %s, "
                       "'{\"routes\": [\"bm25\", \"exact\"]}')",
                       (Jsonb({"uri_prefix": "mem://bob/"}),)).fetchall()
    assert rows == []
    for bad in ({"uri_prefix": 1}, {"uri_prefix": []}, {"uri_prefix": ""}):
        with pytest.raises(Exception, match="uri_prefix|empty list"):
            raw.execute("SELECT memdb.check_filter(%s)", (Jsonb(bad),))


def test_cli_uri_and_prefix(fresh_db: str) -> None:
    mid = ok_json(fresh_db, "add", "--no-gate", "Alice prefers green tea", "--subject", "alice",
                  "--category", "preferences")["id"]
    ok_json(fresh_db, "add", "--no-gate", "I am allergic to peanuts", "--subject", "alice",
            "--category", "general")
    uri = f"mem://alice/preferences/{mid}"
    assert ok_json(fresh_db, "get", uri)["id"] == mid
    assert [m["id"] for m in ok_json(fresh_db, "list", "--uri-prefix",
                                     "mem://alice/preferences/")] == [mid]
    hits = ok_json(fresh_db, "search", "tea", "--uri-prefix", "mem://alice/preferences/")
    assert [h["memory"]["id"] for h in hits["hits"]] == [mid]
    recalled = ok_json(fresh_db, "recall", "tea", "--uri-prefix", "mem://alice/preferences/")
    assert [h["memory"]["id"] for h in recalled["hits"]] == [mid]
    assert ok_json(fresh_db, "update", uri, "--importance", "0.9")["version"] == 2
    assert len(ok_json(fresh_db, "history", uri)) == 2
    result = run(fresh_db, "get", f"mem://bob/preferences/{mid}")
    assert result.exit_code == 1 and "no memory" in result.stderr
    result = run(fresh_db, "get", "mem://alice/preferences/nope")
    assert result.exit_code == 1 and "UUID" in result.stderr
    assert ok_json(fresh_db, "delete", uri)["deleted"] is True
    assert run(fresh_db, "get", uri).exit_code == 1
