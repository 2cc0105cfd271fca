"""MemoryStore CRUD, filters, TTL, dedup and history against the real PostgreSQL and the real
local embedder (fixtures in conftest.py: ``store``, ``raw``, ``fresh_db``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import pytest
from conftest import template_copy

from memdb import (
    Category,
    Conflict,
    Filter,
    InvalidInput,
    Kind,
    Memory,
    MemoryInput,
    MemoryStore,
    NotFound,
    Scope,
    SourceType,
)

NOW = datetime.now(UTC)


def ids(memories: list[Memory]) -> set[UUID]:
    return {m.id for m in memories}


def hit_ids(hits) -> list[UUID]:
    return [h.memory.id for h in hits]


# -- add / get --------------------------------------------------------------------------------
def test_add_returns_id_and_created(store):
    r = store.add("Alice prefers green tea", subject="alice")
    assert isinstance(r.id, UUID) and r.created is True
    assert store.count() == 1


def test_get_returns_every_field(store):
    expires = NOW + timedelta(days=30)
    r = store.add(
        "王五喜欢在周末去爬山",
        subject="wangwu",
        kind="episodic",
        category=Category.PREFERENCES,
        scope="project",
        project_id="proj-9",
        agent="planner",
        importance=0.8,
        confidence=0.6,
        source_type=SourceType.TOOL_OBSERVATION,
        source_id="chat:42#7",
        created_by="ingest-bot",
        metadata={"lang": "zh", "nested": {"n": 1, "list": [1, "二"]}},
        tags=["hobby", "户外", "hobby"],
        expires_at=expires,
        norm_key="wangwu.hobby",
        search_context="weekend plans",
    )
    m = store.get(r.id)
    assert m.id == r.id
    assert m.tenant == "default"
    assert m.content == "王五喜欢在周末去爬山"
    assert m.subject == "wangwu"
    assert m.kind is Kind.EPISODIC
    assert m.category is Category.PREFERENCES
    assert m.scope is Scope.PROJECT and m.project_id == "proj-9" and m.session_id is None
    assert m.agent == "planner"
    assert m.importance == pytest.approx(0.8) and m.confidence == pytest.approx(0.6)
    assert m.source_type is SourceType.TOOL_OBSERVATION
    assert m.source_id == "chat:42#7" and m.created_by == "ingest-bot"
    assert m.metadata == {"lang": "zh", "nested": {"n": 1, "list": [1, "二"]}}
    assert m.tags == ("hobby", "户外")
    assert m.uri == f"mem://wangwu/preferences/{r.id}"
    assert m.norm_key == "wangwu.hobby" and m.search_context == "weekend plans"
    assert abs((m.expires_at - expires).total_seconds()) < 0.001
    assert m.version == 1 and m.access_count == 0 and m.last_accessed_at is None
    assert m.valid_to is None and m.superseded_by is None
    assert m.has_embedding is True
    assert m.created_at == m.valid_from
    assert abs((m.created_at - datetime.now(UTC)).total_seconds()) < 60
    # the dict form is JSON-ready
    d = m.to_dict()
    assert d["kind"] == "episodic" and d["id"] == str(r.id) and d["tags"] == ["hobby", "户外"]


def test_get_defaults_and_uri_encoding(store):
    r = store.add("plain memory")
    m = store.get(r.id)
    assert (m.subject, m.kind, m.category, m.scope) == (
        "default", Kind.SEMANTIC, Category.GENERAL, Scope.USER)
    assert m.source_type is SourceType.USER_STATEMENT
    assert m.metadata == {} and m.tags == ()
    assert m.uri == f"mem://default/general/{r.id}"
    r2 = store.add("x", subject="team a/b", category="tools")
    assert store.get(r2.id).uri == f"mem://team%20a%2Fb/tools/{r2.id}"


def test_get_accepts_string_id_and_unknown_is_not_found(store):
    r = store.add("string ids work")
    assert store.get(str(r.id)).id == r.id
    with pytest.raises(NotFound):
        store.get(uuid4())
    with pytest.raises(InvalidInput):
        store.get("not-a-uuid")


def test_other_tenant_cannot_see(store, fresh_db, embedder):
    r = store.add("tenant A secret")
    with MemoryStore(fresh_db, tenant="tenant-b", embedder=embedder, gate=None) as other:
        with pytest.raises(NotFound):
            other.get(r.id)
        assert other.list() == []
        assert other.search("secret") == []
        with pytest.raises(NotFound):
            other.delete(r.id)
        with pytest.raises(NotFound):
            other.update(r.id, importance=0.9)
    assert store.get(r.id).importance == pytest.approx(0.5)


# -- update --------------------------------------------------------------------------------------
def test_update_content_reembeds_bumps_version_and_writes_history(store):
    r = store.add("Alice lives in London", subject="alice")
    store.add("Bob enjoys playing the violin", subject="bob")
    store.add("The office printer is on the third floor")
    m = store.update(r.id, content="Alice moved to Tokyo and lives there now", reason="moved")
    assert m.content == "Alice moved to Tokyo and lives there now"
    assert m.version == 2
    assert m.has_embedding is True
    assert m.updated_at >= m.created_at
    hits = store.search("Which city does Alice live in now? Tokyo", k=3)
    assert hits[0].memory.id == r.id
    assert hits[0].memory.content == m.content
    # the stored embedding is the new text's
    vector_only = store.search("Alice moved to Tokyo and lives there now", k=1, routes=["vector"])
    assert vector_only[0].memory.id == r.id and vector_only[0].details["vector_score"] > 0.9
    old_text = store.search("Alice lives in London", k=3, routes=["vector"])
    assert old_text[0].details["vector_score"] < vector_only[0].details["vector_score"]
    history = store.history(r.id)
    assert [h.op for h in history] == ["insert", "update"]
    upd = history[-1]
    assert upd.before["content"] == "Alice lives in London"
    assert upd.after["content"] == "Alice moved to Tokyo and lives there now"
    assert upd.before["version"] == 1 and upd.after["version"] == 2
    assert upd.after["has_embedding"] is True
    assert upd.reason == "moved"
    # re-adding the old text makes a new memory; the new text dedups onto the updated row
    assert store.add("Alice lives in London", subject="alice").created is True
    again = store.add("alice moved to tokyo and lives there now", subject="alice")
    assert again.id == r.id and again.created is False


def test_update_importance_only(store):
    r = store.add("Carol is allergic to peanuts", importance=0.4)
    before = store.get(r.id)
    m = store.update(r.id, importance=0.95)
    assert m.importance == pytest.approx(0.95)
    assert m.content == before.content and m.has_embedding is True
    assert m.version == 2
    history = store.history(r.id)
    assert history[-1].op == "update"
    assert history[-1].before["importance"] == pytest.approx(0.4)
    assert history[-1].after["importance"] == pytest.approx(0.95)
    assert history[-1].before["content"] == history[-1].after["content"]


def test_update_other_fields(store):
    r = store.add("Dan uses vim", tags=["editor"], metadata={"a": 1})
    m = store.update(r.id, tags=["tools", "editor"], metadata={"b": 2}, category="tools",
                     kind="procedural", expires_at=NOW + timedelta(days=1))
    assert m.tags == ("editor", "tools") and m.metadata == {"b": 2}
    assert m.category is Category.TOOLS and m.kind is Kind.PROCEDURAL
    assert m.uri == f"mem://default/tools/{r.id}"
    assert m.expires_at is not None
    m = store.update(r.id, expires_at=None)
    assert m.expires_at is None
    assert m.version == 3


def test_update_unknown_id_not_found(store):
    with pytest.raises(NotFound):
        store.update(uuid4(), importance=0.9)
    with pytest.raises(NotFound):
        store.update(uuid4(), content="new content")
    r = store.add("to be deleted")
    store.delete(r.id)
    with pytest.raises(NotFound):
        store.update(r.id, importance=0.1)


def test_update_to_content_of_another_memory_is_a_conflict(store, raw):
    one = store.add("Ian drinks oolong")
    two = store.add("Ian drinks sencha")
    with pytest.raises(Conflict):
        store.update(two.id, content="ian DRINKS oolong")
    assert store.get(two.id).content == "Ian drinks sencha" and store.get(two.id).version == 1
    assert [h.op for h in store.history(two.id)] == ["insert"]
    assert store.get(one.id).version == 1
    # in another subject the same text is fine
    other = store.add("Ian drinks sencha", subject="ian2")
    assert store.update(other.id, content="Ian drinks oolong").version == 2


def test_update_rejects_bad_changes(store):
    r = store.add("Eve likes jazz")
    with pytest.raises(InvalidInput):
        store.update(r.id)
    with pytest.raises(InvalidInput):
        store.update(r.id, subject="someone else")
    with pytest.raises(InvalidInput):
        store.update(r.id, importance=2)
    assert store.get(r.id).version == 1


# -- delete ---------------------------------------------------------------------------------------
def test_delete(store):
    r = store.add("Frank's locker code is 1234")
    keep = store.add("Frank's desk is near the window")
    store.delete(r.id, reason="user asked to forget")
    with pytest.raises(NotFound):
        store.get(r.id)
    with pytest.raises(NotFound):
        store.delete(r.id)
    assert ids(store.list()) == {keep.id}
    assert r.id not in hit_ids(store.search("locker code", k=5))
    history = store.history(r.id)
    assert [h.op for h in history] == ["insert", "delete"]
    assert history[-1].before["content"] == "Frank's locker code is 1234"
    assert history[-1].after is None
    assert history[-1].reason == "user asked to forget"
    with pytest.raises(NotFound):
        store.history(uuid4())


# -- list and its filters -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def list_store(server_dsn, template_dsn, embedder) -> Iterator[MemoryStore]:
    """One database for the read-only list tests below (seeded once, never written after)."""
    with template_copy(server_dsn, "memdb_list") as dsn, MemoryStore(dsn, embedder=embedder,
                                                                     gate=None) as st:
        yield st


@pytest.fixture(scope="module")
def seeded(list_store):
    """A small, varied set of memories; returns name -> id."""
    day = timedelta(days=1)
    made = list_store.add_many([
        MemoryInput("u1 likes tea", subject="user_1", kind="semantic", category="preferences",
                    tags=["drink", "tea"], importance=0.9, metadata={"lang": "en", "src": {"k": 1}},
                    created_at=NOW - 10 * day),
        MemoryInput("u10 likes coffee", subject="user_10", kind="semantic", category="preferences",
                    tags=["drink"], importance=0.3, metadata={"lang": "en"},
                    created_at=NOW - 5 * day),
        MemoryInput("u1 met Bob yesterday", subject="user_1", kind="episodic", category="events",
                    tags=["social"], importance=0.5, metadata={"lang": "zh"},
                    created_at=NOW - 2 * day),
        MemoryInput("张三会用 Python 写爬虫", subject="user_1", kind="procedural",
                    category="skills", tags=["code", "python"], importance=0.7,
                    created_at=NOW - 1 * day),
        MemoryInput("user_1 in another session", subject="user_1", scope="session",
                    session_id="s-1", kind="working", tags=["tea"], importance=0.1),
    ])
    names = ["tea", "coffee", "bob", "python", "session"]
    assert all(r.created for r in made)
    return dict(zip(names, (r.id for r in made), strict=True))


def test_list_all_newest_first(list_store, seeded):
    listed = list_store.list()
    newest_first = ("session", "python", "bob", "coffee", "tea")
    assert [m.id for m in listed] == [seeded[n] for n in newest_first]
    assert len(list_store.list(limit=2)) == 2
    assert [m.id for m in list_store.list(limit=2, offset=3)] == [seeded["coffee"], seeded["tea"]]


def test_list_subject_exact_never_prefix(list_store, seeded):
    assert ids(list_store.list(subject="user_10")) == {seeded["coffee"]}
    assert ids(list_store.list(subject="user_1")) == {
        seeded["tea"], seeded["bob"], seeded["python"], seeded["session"]}
    assert list_store.list(subject="user_") == []
    assert list_store.list(subject="user%") == []
    assert list_store.list(subject="USER_1") == []
    assert ids(list_store.list(subject=["user_10", "nobody"])) == {seeded["coffee"]}


def test_list_kind_and_category_lists(list_store, seeded):
    assert ids(list_store.list(kind="episodic")) == {seeded["bob"]}
    both = list_store.list(kind=["episodic", Kind.PROCEDURAL])
    assert ids(both) == {seeded["bob"], seeded["python"]}
    assert ids(list_store.list(category=["preferences"])) == {seeded["tea"], seeded["coffee"]}
    assert ids(list_store.list(category=["events", "skills"], kind="episodic")) == {seeded["bob"]}
    assert list_store.list(category="system") == []


def test_list_tags_all_and_any(list_store, seeded):
    assert ids(list_store.list(tags=["drink"])) == {seeded["tea"], seeded["coffee"]}
    assert ids(list_store.list(tags=["drink", "tea"])) == {seeded["tea"]}
    assert list_store.list(tags=["drink", "code"]) == []
    assert ids(list_store.list(tags_any=["tea", "code"])) == {
        seeded["tea"], seeded["python"], seeded["session"]}
    assert ids(list_store.list(tags_any=["social"], tags=["social"])) == {seeded["bob"]}


def test_list_created_after_before(list_store, seeded):
    assert ids(list_store.list(created_after=NOW - timedelta(days=3))) == {
        seeded["bob"], seeded["python"], seeded["session"]}
    assert ids(list_store.list(created_before=NOW - timedelta(days=3))) == {
        seeded["tea"], seeded["coffee"]}
    window = list_store.list(created_after=(NOW - timedelta(days=6)).isoformat(),
                        created_before=NOW - timedelta(days=1, hours=12))
    assert ids(window) == {seeded["coffee"], seeded["bob"]}


def test_list_min_importance_and_metadata(list_store, seeded):
    assert ids(list_store.list(min_importance=0.7)) == {seeded["tea"], seeded["python"]}
    assert ids(list_store.list(min_importance=0.0)) == set(seeded.values())
    assert ids(list_store.list(metadata={"lang": "en"})) == {seeded["tea"], seeded["coffee"]}
    assert ids(list_store.list(metadata={"src": {"k": 1}})) == {seeded["tea"]}
    assert list_store.list(metadata={"lang": "fr"}) == []
    assert ids(list_store.list(metadata={})) == set(seeded.values())


def test_list_scope_and_session(list_store, seeded):
    assert ids(list_store.list(scope="session")) == {seeded["session"]}
    assert ids(list_store.list(session_id="s-1")) == {seeded["session"]}
    assert list_store.list(session_id="s-2") == []


def test_list_with_filter_object_and_dict(list_store, seeded):
    f = Filter(subject="user_1", kind=["episodic", "procedural"], min_importance=0.6)
    assert ids(list_store.list(f)) == {seeded["python"]}
    assert ids(list_store.list({"subject": "user_1", "category": "events"})) == {seeded["bob"]}
    # keyword conditions are combined with the filter
    assert ids(list_store.list(Filter(subject="user_1"), kind="episodic")) == {seeded["bob"]}


def test_list_as_of_sees_superseded_row(store, raw):
    old = store.add("Grace works at Initech", subject="grace",
                    created_at=NOW - timedelta(days=10))
    new = store.add("Grace works at Globex", subject="grace", created_at=NOW - timedelta(days=3))
    raw.execute(
        "UPDATE memdb.memories SET valid_to = %s, superseded_by = %s WHERE id = %s",
        (NOW - timedelta(days=3), new.id, old.id),
    )
    assert ids(store.list(subject="grace")) == {new.id}
    assert ids(store.list(subject="grace", as_of=NOW - timedelta(days=5))) == {old.id}
    assert ids(store.list(subject="grace", as_of=NOW)) == {new.id}
    assert store.list(subject="grace", as_of=NOW - timedelta(days=20)) == []
    assert old.id not in hit_ids(store.search("Where does Grace work?", k=5))
    assert hit_ids(store.search("Where does Grace work?", as_of=NOW - timedelta(days=5))) == [
        old.id]
    # get still returns the superseded version, with its link
    m = store.get(old.id)
    assert m.valid_to is not None and m.superseded_by == new.id
    assert [h.op for h in store.history(old.id)] == ["insert", "supersede"]
    # once superseded, its text may be stored again as a new current memory
    again = store.add("Grace works at Initech", subject="grace")
    assert again.created and again.id != old.id


# -- TTL ------------------------------------------------------------------------------------------
def test_ttl_and_expires_at(store, raw):
    short = store.add("temporary one-time code 556677", ttl=1)
    past = store.add("meeting room booked until yesterday", expires_at=NOW - timedelta(hours=1))
    keep = store.add("a permanent fact about the meeting room")
    later = store.add("the meeting room code changes next month", ttl=timedelta(days=30))
    with pytest.raises(NotFound):
        store.get(past.id)
    assert store.get(short.id).expires_at is not None
    time.sleep(1.1)
    for gone in (short.id, past.id):
        with pytest.raises(NotFound):
            store.get(gone)
    assert ids(store.list()) == {keep.id, later.id}
    found = hit_ids(store.search("meeting room code", k=10))
    assert set(found) == {keep.id, later.id}
    assert store.list(include_expired=True) and short.id in ids(store.list(include_expired=True))
    with pytest.raises(NotFound):
        store.update(short.id, importance=0.9)
    before = store.count()
    assert store.maintenance.purge_expired() == 2
    assert store.count() == before - 2
    assert raw.execute("SELECT count(*) FROM memdb.memories WHERE id = ANY(%s)",
                       ([short.id, past.id],)).fetchone()[0] == 0
    for gone in (short.id, past.id):
        last = store.history(gone)[-1]
        assert last.op == "delete" and last.reason == "expired"
    assert store.maintenance.purge_expired() == 0
    assert ids(store.list()) == {keep.id, later.id}


def test_ttl_and_expires_at_together_rejected(store):
    with pytest.raises(InvalidInput):
        store.add("x", ttl=10, expires_at=NOW + timedelta(days=1))
    assert store.count() == 0


# -- dedup ----------------------------------------------------------------------------------------
def test_readd_identical_content_bumps_existing(store):
    first = store.add("Helen speaks Japanese", importance=0.3, confidence=0.9, tags=["lang"])
    variants = ["Helen speaks Japanese", "  helen   SPEAKS japanese ",
                "Ｈｅｌｅｎ ｓｐｅａｋｓ Ｊａｐａｎｅｓｅ", "Helen\tspeaks\nJapanese"]
    for n, text in enumerate(variants, start=1):
        r = store.add(text, importance=0.7 if n == 2 else 0.1, confidence=0.5,
                      tags=["skill"] if n == 3 else None)
        assert r.id == first.id and r.created is False
    assert store.count() == 1
    m = store.get(first.id)
    assert m.content == "Helen speaks Japanese"
    assert m.access_count == len(variants)
    assert m.last_accessed_at is not None
    assert m.importance == pytest.approx(0.7)
    assert m.confidence == pytest.approx(0.9)
    assert m.tags == ("lang", "skill")


def test_readd_chinese_full_width_dedups(store):
    a = store.add("李四擅长React和Vue.js开发", subject="lisi")
    b = store.add("李四擅长Ｒｅａｃｔ和Ｖｕｅ．ｊｓ开发", subject="lisi")
    assert b.id == a.id and not b.created


def test_same_content_other_subject_or_session_is_new(store):
    base = store.add("likes spicy food", subject="ivan")
    other_subject = store.add("likes spicy food", subject="ivan2")
    session1 = store.add("likes spicy food", subject="ivan", scope="session", session_id="s1")
    session2 = store.add("likes spicy food", subject="ivan", scope="session", session_id="s2")
    again = store.add("likes spicy food", subject="ivan", scope="session", session_id="s1")
    project = store.add("likes spicy food", subject="ivan", scope="project", project_id="p")
    made = [base, other_subject, session1, session2, project]
    assert all(r.created for r in made)
    assert len({r.id for r in made}) == 5
    assert again.id == session1.id and not again.created
    assert store.count() == 5


def test_add_many_keeps_order_and_collapses_duplicates(store):
    existing = store.add("Judy plays the cello")
    results = store.add_many([
        "Judy lives in Oslo",
        {"content": "Judy plays the CELLO", "importance": 0.9},
        MemoryInput(content="Judy has two cats"),
        "judy lives in oslo",
        "朱迪喜欢滑雪",
        "Judy has two   cats",
    ])
    assert len(results) == 6
    assert [r.created for r in results] == [True, False, True, False, True, False]
    assert results[1].id == existing.id
    assert results[3].id == results[0].id
    assert results[5].id == results[2].id
    assert len({r.id for r in results}) == 4
    assert store.count() == 4
    contents = {m.id: m.content for m in store.list()}
    assert contents[results[0].id] == "Judy lives in Oslo"
    assert contents[results[4].id] == "朱迪喜欢滑雪"
    assert store.get(existing.id).importance == pytest.approx(0.9)
    assert store.add_many([]) == []


def test_add_many_across_batches(store):
    texts = [f"fact number {i}" for i in range(7)] + ["fact number 3"]
    results = store.add_many(texts, batch_size=3)
    assert [r.created for r in results] == [True] * 7 + [False]
    assert results[7].id == results[3].id
    assert store.count() == 7


def test_add_with_precomputed_embedding(store, embedder):
    vector = embedder.embed_passages(["Ken collects stamps"])[0]
    r = store.add("Ken collects stamps", embedding=vector.tolist())
    assert store.get(r.id).has_embedding
    hits = store.search_by_vector(vector, k=1)
    assert hits[0].memory.id == r.id
    assert hits[0].details["vector_score"] == pytest.approx(1.0, abs=1e-4)


# -- search ---------------------------------------------------------------------------------------
def test_search_ranks_meaning_in_chinese_and_english(store):
    lisi = store.add("李四是前端工程师，擅长React和Vue.js开发", subject="lisi")
    tea = store.add("Alice prefers green tea over coffee", subject="alice")
    store.add("The quarterly report is due on Friday", subject="work")
    hits = store.search("前端工程师", k=3)
    assert hits[0].memory.id == lisi.id
    assert [h.rank for h in hits] == [1, 2, 3]
    assert hits[0].score >= hits[1].score >= hits[2].score
    assert hits[0].details["vector_rank"] == 1
    vector_only = store.search("前端工程师", k=3, routes=["vector"])
    assert vector_only[0].memory.id == lisi.id
    scores = [h.details["vector_score"] for h in vector_only]
    assert scores == sorted(scores, reverse=True) and -1 <= scores[-1] <= scores[0] <= 1
    assert store.search("What drink does Alice like?", k=1)[0].memory.id == tea.id
    assert store.search("   ") == []


def test_search_with_filters_only_returns_matching(store):
    store.add_many([
        MemoryInput("Leo likes hiking in the Alps", subject="leo", category="preferences",
                    tags=["outdoor"], importance=0.9),
        MemoryInput("Leo likes hiking in Norway", subject="leo_2", category="preferences",
                    tags=["outdoor"], importance=0.9),
        MemoryInput("Leo went hiking last weekend", subject="leo", kind="episodic",
                    category="events", tags=["outdoor"], importance=0.2),
        MemoryInput("Leo's favourite hiking boots are brown", subject="leo",
                    category="entities", metadata={"brand": "x"}, importance=0.5),
        MemoryInput("Mia likes hiking too", subject="mia", category="preferences",
                    tags=["outdoor"]),
    ])
    q = "Leo hiking"
    for flt, expected in [
        ({"subject": "leo"}, {"Leo likes hiking in the Alps", "Leo went hiking last weekend",
                              "Leo's favourite hiking boots are brown"}),
        ({"subject": "leo", "category": "preferences"}, {"Leo likes hiking in the Alps"}),
        ({"kind": "episodic"}, {"Leo went hiking last weekend"}),
        ({"tags": ["outdoor"], "min_importance": 0.8},
         {"Leo likes hiking in the Alps", "Leo likes hiking in Norway"}),
        ({"metadata": {"brand": "x"}}, {"Leo's favourite hiking boots are brown"}),
        ({"subject": "nobody"}, set()),
    ]:
        hits = store.search(q, k=10, filter=flt)
        assert {h.memory.content for h in hits} == expected, flt
    assert len(store.search(q, k=2)) == 2
    assert {h.memory.subject for h in store.search(q, k=10, subject=["mia", "leo_2"])} == {
        "mia", "leo_2"}


# -- history actor / reason -----------------------------------------------------------------------
def test_history_actor_and_reason(store, fresh_db, embedder, raw):
    default_actor = raw.execute("SELECT current_user").fetchone()[0]
    r = store.add("Nina's birthday is May 3", reason="told in chat")
    with MemoryStore(fresh_db, embedder=embedder, actor="agent:scheduler", gate=None) as agent:
        agent.update(r.id, importance=0.9, reason="birthdays matter")
        dup = agent.add("nina's birthday is may 3", tags=["date"])
        assert dup.id == r.id
        agent.delete(r.id)
    history = store.history(r.id)
    assert [h.op for h in history] == ["insert", "update", "update", "delete"]
    assert history[0].actor == default_actor and history[0].reason == "told in chat"
    assert history[1].actor == "agent:scheduler" and history[1].reason == "birthdays matter"
    assert history[2].actor == "agent:scheduler" and history[2].reason == "duplicate write"
    assert history[3].actor == "agent:scheduler" and history[3].reason is None
    assert all(h.memory_id == r.id for h in history)
    assert [h.at for h in history] == sorted(h.at for h in history)
    # the settings are transaction-local: a later plain write is not attributed to the agent
    r2 = store.add("Omar drives a blue car")
    assert store.history(r2.id)[0].actor == default_actor
    assert store.history(r2.id)[0].reason is None


def test_update_ttl_uses_the_server_clock(store, raw):
    """update(ttl=...) expires the memory that long after the server's now(), as add does."""
    r = store.add("王芳下周去杭州出差 (Wang Fang goes to Hangzhou)", subject="wangfang")
    store.update(r.id, ttl=3600)
    gap = raw.execute("SELECT extract(epoch FROM expires_at - now()) FROM memdb.memories "
                      "WHERE id = %s", (r.id,)).fetchone()[0]
    assert 3590 < gap <= 3600
    with pytest.raises(InvalidInput):
        store.update(r.id, ttl=60, expires_at="2030-01-01T00:00:00Z")
    assert store.update(r.id, ttl=None).expires_at is None
