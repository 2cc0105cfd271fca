"""The write path against the real server: gate outcomes per item, dry runs, dedup by source
strength, hypotheses, near-duplicate merges, slot and correction supersession, the system-rule
boost and TTL defaults - in Chinese and English."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from memdb import MemoryInput, MemoryStore, Rejected, WritePolicy
from memdb.write.gate import DAY, HOUR

SRC = {"source_id": "turn-1"}


def rows(dsn: str, where: str = "true") -> int:
    with psycopg.connect(dsn) as conn:
        return conn.execute(f"SELECT count(*) FROM memdb.memories WHERE {where}").fetchone()[0]


def history_rows(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT count(*) FROM memdb.memory_history").fetchone()[0]


# -- gate outcomes ---------------------------------------------------------------------------
def test_mixed_batch_returns_per_item_outcomes(gated_store: MemoryStore, fresh_db: str):
    results = gated_store.add_many([
        MemoryInput("张伟在上海一家金融科技公司工作", subject="zw", **SRC),
        "好的",
        MemoryInput("张伟可能是素食者", subject="zw", source_type="model_inference", **SRC),
        MemoryInput("Alice works at a climate start-up", subject="alice"),  # no source
        MemoryInput("我猜张伟三十岁", subject="zw", **SRC),
        MemoryInput("张伟在上海一家金融科技公司工作", subject="zw", source_id="turn-9"),
        MemoryInput("Alice 回答时必须使用英文", subject="alice", kind="procedural", **SRC),
    ])
    assert [r.outcome for r in results] == [
        "created", "rejected", "hypothesis", "rejected", "rejected", "duplicate", "created"]
    assert [r.created for r in results] == [True, False, True, False, False, False, True]
    assert results[5].id == results[0].id
    for r in (results[1], results[3], results[4]):
        assert r.id is None and r.reasons
    assert results[1].reasons[0].startswith("filler")
    assert results[3].reasons[0].startswith("no_source")
    assert results[4].reasons[0].startswith("hedged")
    assert rows(fresh_db) == 3
    hypothesis = gated_store.get(results[2].id)
    assert hypothesis.status == "hypothesis" and hypothesis.confidence == pytest.approx(0.3)


def test_single_rejected_add_raises_with_reasons(gated_store: MemoryStore, fresh_db: str):
    with pytest.raises(Rejected) as caught:
        gated_store.add("Bob maybe lives in Paris", source_id="t1")
    assert caught.value.reasons[0].startswith("hedged")
    with pytest.raises(Rejected):
        gated_store.add("李四住在北京")  # no source
    assert rows(fresh_db) == 0


def test_bypass_and_no_gate_write_what_the_gate_refuses(gated_store: MemoryStore):
    r = gated_store.add("李四住在北京", bypass_gate=True)
    assert r.outcome == "created" and r.reasons[0].startswith("bypassed")
    r = gated_store.add("ok", gate=None)
    assert r.outcome == "created" and r.reasons == ()
    with pytest.raises(Rejected):  # a stricter policy per call
        gated_store.add("李四在字节跳动工作", source_id="t", source_type="model_inference",
                        gate=WritePolicy(model_inference="reject"))


def test_dry_run_writes_nothing_and_reports_real_outcomes(gated_store: MemoryStore,
                                                          fresh_db: str):
    first = gated_store.add("Alice prefers green tea", subject="alice",
                            category="preferences", **SRC)
    before = (rows(fresh_db), history_rows(fresh_db))
    results = gated_store.add_many([
        MemoryInput("Alice prefers green tea", subject="alice", category="preferences", **SRC),
        MemoryInput("Alice 住在柏林", subject="alice", **SRC),
        MemoryInput("嗯嗯", subject="alice", **SRC),
    ], dry_run=True)
    assert [r.outcome for r in results] == ["duplicate", "created", "rejected"]
    assert all(r.dry_run for r in results)
    assert results[0].id == first.id and results[1].id is None
    assert (rows(fresh_db), history_rows(fresh_db)) == before
    assert gated_store.get(first.id).access_count == 0


# -- exact duplicates and source strength --------------------------------------------------
def test_duplicate_from_stronger_source_raises_confidence(gated_store: MemoryStore):
    tool = gated_store.add("订单服务运行在 PostgreSQL 17 上", subject="ops", confidence=0.6,
                           source_type="tool_observation", source_id="log-1")
    user = gated_store.add("订单服务运行在 PostgreSQL 17 上", subject="ops", confidence=0.9,
                           source_type="user_statement", source_id="chat-7")
    assert user.outcome == "duplicate" and user.id == tool.id
    m = gated_store.get(tool.id)
    assert (m.confidence, m.source_type, m.source_id) == (pytest.approx(0.9), "user_statement",
                                                          "chat-7")
    assert m.access_count == 1
    weaker = gated_store.add("订单服务运行在 PostgreSQL 17 上", subject="ops", confidence=1.0,
                             source_type="document", source_id="wiki")
    assert weaker.outcome == "duplicate"
    m = gated_store.get(tool.id)
    assert (m.confidence, m.source_type, m.access_count) == (pytest.approx(0.9),
                                                             "user_statement", 2)
    assert [h.op for h in gated_store.history(tool.id)][:2] == ["insert", "update"]


def test_hypothesis_confirmed_by_a_trusted_source_becomes_active(gated_store: MemoryStore):
    for text in ("Bob is a vegetarian", "张伟是素食者"):
        guess = gated_store.add(text, subject="s", source_type="model_inference",
                                confidence=0.9, **SRC)
        m = gated_store.get(guess.id)
        assert guess.outcome == "hypothesis" and m.status == "hypothesis"
        assert m.expires_at - datetime.now(UTC) == pytest.approx(timedelta(days=7),
                                                                 abs=timedelta(minutes=5))
        again = gated_store.add(text, subject="s", source_type="model_inference", **SRC)
        assert again.outcome == "duplicate" and gated_store.get(guess.id).status == "hypothesis"
        confirmed = gated_store.add(text, subject="s", source_id="chat-3")
        m = gated_store.get(guess.id)
        assert confirmed.id == guess.id and confirmed.outcome == "duplicate"
        assert (m.status, m.source_type, m.confidence, m.expires_at) == (
            "active", "user_statement", pytest.approx(1.0), None)


# -- near duplicates -------------------------------------------------------------------------
@pytest.mark.parametrize(("old", "new"), [
    ("我喜欢喝绿茶", "我很喜欢喝绿茶"),
    ("李四是前端工程师", "李四是一名前端工程师"),
    ("Alice prefers green tea", "Alice really prefers green tea"),
])
def test_near_duplicate_is_merged_and_recorded(gated_store: MemoryStore, fresh_db: str,
                                               old: str, new: str):
    first = gated_store.add(old, subject="u", category="preferences", **SRC)
    merged = gated_store.add(new, subject="u", category="preferences", source_id="turn-2")
    assert merged.outcome == "merged" and not merged.created
    assert merged.id == merged.merged_into == first.id
    assert merged.similarity >= 0.95
    assert rows(fresh_db) == 1
    m = gated_store.get(first.id)
    assert m.content == old and m.access_count == 1
    last = gated_store.history(first.id)[-1]
    assert last.op == "update" and "merged near-duplicate" in last.reason and new in last.reason


@pytest.mark.parametrize(("old", "new"), [
    ("李四是前端工程师", "李四是后端工程师"),       # cosine 0.99, different words
    ("我喜欢喝绿茶", "我喜欢喝红茶"),
    ("I like strong coffee", "I don't like strong coffee"),  # negation
    ("我喜欢喝咖啡", "我不喜欢喝咖啡"),
])
def test_similar_but_different_facts_are_not_merged(gated_store: MemoryStore, old: str,
                                                    new: str):
    gated_store.add(old, subject="u", **SRC)
    assert gated_store.add(new, subject="u", **SRC).outcome == "created"


def test_near_duplicates_merge_only_within_subject_and_category(gated_store: MemoryStore):
    gated_store.add("我喜欢喝绿茶", subject="u", category="preferences", **SRC)
    assert gated_store.add("我很喜欢喝绿茶", subject="u", category="general",
                           **SRC).outcome == "created"
    assert gated_store.add("我很喜欢喝绿茶", subject="v", category="preferences",
                           **SRC).outcome == "created"
    off = WritePolicy(near_dup_threshold=None)
    assert gated_store.add("我真的很喜欢喝绿茶", subject="u", category="preferences", gate=off,
                           **SRC).outcome == "created"


def test_concurrent_near_duplicates_leave_one_current_row(fresh_db: str, embedder):
    variants = ["我喜欢喝绿茶。", "我喜欢喝绿茶！", "我 喜欢 喝 绿茶", "我喜欢喝绿茶～",
                "Alice prefers green tea.", "Alice prefers green tea!", "alice  prefers green tea",
                "Alice prefers green tea~"]
    vectors = embedder.embed_passages(variants)
    stores = [MemoryStore(fresh_db, embedder=embedder, pool_size=1) for _ in variants]
    try:
        for s in stores:
            s.space_id()
        barrier = threading.Barrier(len(variants))
        outcomes: list[str] = []
        errors: list[BaseException] = []

        def write(n: int) -> None:
            try:
                barrier.wait()
                subject = "zh" if n < 4 else "en"
                r = stores[n].add(variants[n], subject=subject, category="preferences",
                                  embedding=vectors[n], source_id=f"turn-{n}")
                outcomes.append(r.outcome)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(n,)) for n in range(len(variants))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert sorted(outcomes).count("created") == 2
        assert set(outcomes) <= {"created", "merged", "duplicate"}
        assert rows(fresh_db, "valid_to IS NULL AND subject = 'zh'") == 1
        assert rows(fresh_db, "valid_to IS NULL AND subject = 'en'") == 1
    finally:
        for s in stores:
            s.close()


def test_concurrent_slot_writes_leave_one_current_version(fresh_db: str, embedder):
    values = ["咖啡", "乌龙茶", "绿茶", "oat milk latte", "jasmine tea", "espresso"]
    texts = [f"张伟最喜欢的饮料是{v}" for v in values]
    vectors = embedder.embed_passages(texts)
    stores = [MemoryStore(fresh_db, embedder=embedder, pool_size=1) for _ in texts]
    try:
        for s in stores:
            s.space_id()
        barrier = threading.Barrier(len(texts))
        outcomes: list[str] = []

        def write(n: int) -> None:
            barrier.wait()
            outcomes.append(stores[n].add(texts[n], subject="zw", category="preferences",
                                          norm_key="favourite_drink", embedding=vectors[n],
                                          source_id=f"turn-{n}").outcome)

        threads = [threading.Thread(target=write, args=(n,)) for n in range(len(texts))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcomes) == ["created"] + ["superseded"] * (len(texts) - 1)
        assert rows(fresh_db, "valid_to IS NULL") == 1
        assert rows(fresh_db, "valid_to IS NOT NULL AND superseded_by IS NOT NULL") == 5
    finally:
        for s in stores:
            s.close()


# -- supersession ----------------------------------------------------------------------------
@pytest.mark.parametrize(("old", "new", "query"), [
    ("我喜欢喝咖啡", "我现在喜欢喝乌龙茶", "喜欢喝什么"),
    ("Alice's favourite drink is coffee", "Alice's favourite drink is oolong tea",
     "favourite drink"),
])
def test_slot_supersession(gated_store: MemoryStore, old: str, new: str, query: str):
    first = gated_store.add(old, subject="u", category="preferences", norm_key="drink", **SRC)
    time.sleep(0.05)
    between = datetime.now(UTC)
    time.sleep(0.05)
    second = gated_store.add(new, subject="u", category="preferences", norm_key=" Drink ",
                             source_id="turn-2")
    assert second.outcome == "superseded" and second.created
    assert second.superseded_id == first.id
    old_row = gated_store.get(first.id)
    assert old_row.valid_to is not None and old_row.superseded_by == second.id
    assert [h.memory.id for h in gated_store.search(query, subject="u")] == [second.id]
    assert [m.id for m in gated_store.list(subject="u")] == [second.id]
    assert [m.id for m in gated_store.list(subject="u", as_of=between)] == [first.id]
    assert first.id in {h.memory.id for h in gated_store.search(query, subject="u",
                                                                 as_of=between)}
    entries = gated_store.history(first.id)
    assert [e.op for e in entries] == ["insert", "supersede"]
    assert "superseded by a new version of drink" in entries[-1].reason
    assert str(second.id) in entries[-1].reason


def test_slot_versions_in_one_batch_follow_input_order(gated_store: MemoryStore):
    a, b, c = gated_store.add_many([
        MemoryInput("张伟住在杭州", subject="zw", category="entities", norm_key="city", **SRC),
        MemoryInput("张伟住在上海", subject="zw", category="entities", norm_key="city", **SRC),
        MemoryInput("张伟住在北京", subject="zw", category="entities", norm_key="city", **SRC),
    ])
    assert [a.outcome, b.outcome, c.outcome] == ["created", "superseded", "superseded"]
    assert [m.content for m in gated_store.list(subject="zw")] == ["张伟住在北京"]
    assert gated_store.get(a.id).superseded_by == b.id
    assert gated_store.get(b.id).superseded_by == c.id


def test_a_hypothesis_never_supersedes(gated_store: MemoryStore):
    fact = gated_store.add("Alice prefers green tea", subject="alice", category="preferences",
                           norm_key="drink", **SRC)
    guess = gated_store.add("Alice prefers black coffee now", subject="alice",
                            category="preferences", norm_key="drink",
                            source_type="model_inference", **SRC)
    assert guess.outcome == "hypothesis"
    assert gated_store.get(fact.id).valid_to is None
    confirmed = gated_store.add("Alice prefers jasmine tea", subject="alice",
                                category="preferences", norm_key="drink", source_id="t-3")
    assert confirmed.outcome == "superseded"
    assert {m.id for m in gated_store.list(subject="alice")} == {confirmed.id}


@pytest.mark.parametrize(("old", "correction"), [
    ("张伟住在上海浦东", "张伟不是住在上海，是住在北京"),
    ("张伟是后端工程师", "张伟不是后端工程师而是前端工程师"),
    ("The team meeting is on Tuesday", "Actually the team meeting is on Wednesday, not Tuesday"),
    ("Bob's sister is called Anna", "Bob's sister is not called Anna, but Hannah"),
])
def test_correction_supersedes_what_it_corrects(gated_store: MemoryStore, old: str,
                                                correction: str):
    other = gated_store.add("张伟喜欢打羽毛球 and plays badminton", subject="zw",
                            category="entities", **SRC)
    first = gated_store.add(old, subject="zw", category="entities", **SRC)
    fixed = gated_store.add(correction, subject="zw", category="entities", source_id="turn-2")
    assert fixed.outcome == "superseded" and fixed.superseded_id == first.id
    assert any(r.startswith("correction") for r in fixed.reasons)
    assert {m.id for m in gated_store.list(subject="zw")} == {other.id, fixed.id}
    assert gated_store.history(first.id)[-1].reason.startswith("corrected (not ")


def test_correction_with_nothing_to_correct_is_a_new_memory(gated_store: MemoryStore):
    gated_store.add("张伟喜欢打羽毛球", subject="zw", category="entities", **SRC)
    r = gated_store.add("会议不是在周二，是在周三", subject="zw", category="events", **SRC)
    assert r.outcome == "created"


# -- system rules in retrieval --------------------------------------------------------------
@pytest.mark.parametrize(("pref", "rule", "query"), [
    ("用户喜欢很长、很详细的回答", "回答必须简洁，不超过三句话", "用户喜欢什么样的回答"),
    ("The user likes long, detailed answers", "Answers must always be short: three sentences "
     "at most", "what kind of answers does the user like"),
])
def test_system_rule_boost_stops_below_a_memory_better_on_every_route(
        gated_store: MemoryStore, pref: str, rule: str, query: str):
    """The preference ranks first on both routes: the boost lifts the rule up to its score,
    not past it (tests/test_search_edges.py has the mixed-evidence case, where it wins)."""
    p = gated_store.add(pref, subject="u", category="preferences", **SRC).id
    r = gated_store.add(rule, subject="u", kind="procedural", category="system",
                        source_type="system", source_id="prompt-v1").id
    hits = gated_store.search(query, subject="u")
    assert [h.memory.id for h in hits][:2] == [p, r]
    assert hits[1].score == pytest.approx(hits[0].score)
    mult = {h.memory.id: h.details["multiplier"] for h in hits}
    assert 1.0 < mult[r] < 2.0 and mult[p] == 1.0
    flat = gated_store.search(query, subject="u", decay={"system_boost": 0})
    assert {h.memory.id: h.details["multiplier"] for h in flat}[r] == 1.0


def test_hypothetical_rules_get_no_boost(gated_store: MemoryStore):
    r = gated_store.add("Always answer Bob in French", subject="u", category="system",
                        source_type="model_inference", **SRC)
    assert r.outcome == "hypothesis"
    hits = gated_store.search("answer Bob in French", subject="u")
    assert hits[0].details["multiplier"] == 1.0


# -- TTL defaults ----------------------------------------------------------------------------
@pytest.mark.parametrize(("fields", "ttl"), [
    ({"kind": "working"}, 24 * HOUR),
    ({"kind": "episodic", "category": "events"}, 365 * DAY),
    ({"category": "patterns", "tags": ["reflection"]}, 180 * DAY),
    ({"category": "patterns", "metadata": {"reflection": True}}, 180 * DAY),
    ({"source_type": "model_inference"}, 7 * DAY),
    ({"category": "preferences"}, None),
    ({"kind": "semantic", "category": "entities"}, None),
    ({"kind": "procedural", "category": "skills", "rule": True}, None),
    ({"kind": "working", "ttl": 60}, 60),
    ({"category": "preferences", "ttl": 3600}, 3600),
])
def test_ttl_defaults_on_write(gated_store: MemoryStore, fields: dict, ttl: float | None):
    r = gated_store.add("周五下午三点和张伟复盘 weekly review with Zhang Wei", subject="u",
                        **SRC, **fields)
    expires = gated_store.get(r.id).expires_at
    if ttl is None:
        assert expires is None
    else:
        assert (expires - datetime.now(UTC)).total_seconds() == pytest.approx(ttl, abs=120)


def test_no_gate_means_no_ttl_defaults(gated_store: MemoryStore):
    r = gated_store.add("正在排查慢查询", kind="working", gate=None)
    assert gated_store.get(r.id).expires_at is None


# -- SQL ---------------------------------------------------------------------------------------
def test_sql_helpers(raw):
    same = "SELECT memdb.same_words(%s, %s)"
    assert raw.execute(same, ("我喜欢喝绿茶", "我很喜欢喝绿茶")).fetchone()[0] is True
    assert raw.execute(same, ("李四是前端工程师", "李四是后端工程师")).fetchone()[0] is False
    assert raw.execute(same, ("I like tea", "I don't like tea")).fetchone()[0] is False
    assert raw.execute(same, ("Alice likes tea.", "alice LIKES tea!")).fetchone()[0] is True
    strength = [raw.execute("SELECT memdb.source_strength(%s)", (s,)).fetchone()[0]
                for s in ("system", "user_statement", "document", "tool_observation",
                          "model_inference")]
    assert strength == [4, 3, 2, 1, 0]


# The reference definitions memdb.same_words and memdb.history_row were first written as
# (plain SQL functions, slower); the faster ones must give the same answers.
_SAME_WORDS_REF = r"""
CREATE FUNCTION pg_temp.same_words_ref(p_a text, p_b text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT AS $$
    WITH w AS (
        SELECT ARRAY(SELECT DISTINCT x[1] FROM regexp_matches(memdb.normalize_text(p_a),
                     '([\u3400-\u9fff\uf900-\ufaff]|[^[:space:][:punct:]\u3400-\u9fff\uf900-\ufaff]+)', 'g') AS x) AS a,
               ARRAY(SELECT DISTINCT x[1] FROM regexp_matches(memdb.normalize_text(p_b),
                     '([\u3400-\u9fff\uf900-\ufaff]|[^[:space:][:punct:]\u3400-\u9fff\uf900-\ufaff]+)', 'g') AS x) AS b
    ), neg AS (
        SELECT memdb.normalize_text(p_a) ~ '\m(not|no|never|none|nothing|nobody|neither|nor|cannot|without)\M|n''t\M|[不没沒别別勿未无無]' AS a,
               memdb.normalize_text(p_b) ~ '\m(not|no|never|none|nothing|nobody|neither|nor|cannot|without)\M|n''t\M|[不没沒别別勿未无無]' AS b
    )
    SELECT (w.a <@ w.b OR w.b <@ w.a) AND neg.a = neg.b FROM w, neg
$$"""  # noqa: E501 (the reference definition as it was written)
_HISTORY_ROW_REF = """
CREATE FUNCTION pg_temp.history_row_ref(r memdb.memories) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT (to_jsonb(r) - 'embedding' - 'tsv' - 'content_hash' - 'doc_len'
            - 'event_time' - 'names_time')
           || jsonb_build_object('has_embedding', r.embedding IS NOT NULL)
$$"""
_TEXTS = ["我喜欢喝绿茶", "我很喜欢喝绿茶", "我不喜欢喝绿茶", "李四是前端工程师",
          "李四是后端工程师", "I like tea", "I don't like tea", "I never drink tea",
          "Alice likes tea.", "alice LIKES tea!", "Ｒｅａｃｔ 和 Vue.js", "react 和 vue js",
          "没有", "沒有", "無糖", "无糖", "テストです", "한국어 텍스트", "", "...", "  tea  ",
          "tea, tea and tea", "cannot", "can not"]


def test_same_words_and_history_row_match_their_reference(raw):
    raw.execute(_SAME_WORDS_REF)
    pairs = [(a, b) for a in _TEXTS for b in _TEXTS]
    got = raw.execute(
        "SELECT memdb.same_words(p.a, p.b), pg_temp.same_words_ref(p.a, p.b) "
        "FROM unnest(%s::text[], %s::text[]) AS p(a, b)",
        ([a for a, _ in pairs], [b for _, b in pairs])).fetchall()
    assert [new for new, _ in got] == [ref for _, ref in got]
    assert {new for new, _ in got} == {True, False}
    assert raw.execute("SELECT memdb.same_words(NULL, 'tea')").fetchone()[0] is None

    raw.execute(_HISTORY_ROW_REF)
    raw.execute("SET memdb.reason = 'reference'")
    raw.execute("SELECT memdb.ensure_embedding_space('test-history-row', 3)")
    space = raw.execute("SELECT id FROM memdb.embedding_spaces WHERE model = 'test-history-row'"
                        ).fetchone()[0]
    raw.execute(
        "SELECT * FROM memdb.write_memories(%s::jsonb, ARRAY[%s::vector, NULL], %s)",
        ('[{"content": "张伟住在上海", "subject": "zw", "tags": ["家", "city"],'
         '  "metadata": {"来源": "chat", "n": 1}, "ttl_seconds": 3600},'
         ' {"content": "Alice works at Acme", "subject": "alice", "norm_key": "job"}]',
         "[0.1, 0.2, 0.3]", space))
    rows = raw.execute(
        "WITH m AS MATERIALIZED (SELECT * FROM memdb.memories) "
        "SELECT memdb.history_row(m) AS new, pg_temp.history_row_ref(m) AS ref, "
        "       m.embedding IS NOT NULL AS has FROM m").fetchall()
    assert sorted(has for _, _, has in rows) == [False, True]
    assert [new for new, _, _ in rows] == [ref for _, ref, _ in rows]
    assert raw.execute("SELECT memdb.history_row(NULL::memdb.memories)").fetchone()[0] is None


def test_write_memories_from_sql(raw):
    raw.execute("SET memdb.reason = 'psql'")
    out = raw.execute(
        "SELECT ord, outcome FROM memdb.write_memories(%s::jsonb, NULL, NULL, '{}')",
        ('[{"content": "我喜欢喝咖啡", "subject": "a", "category": "preferences",'
         '  "norm_key": "drink"},'
         ' {"content": "我喜欢喝茶", "subject": "a", "category": "preferences",'
         '  "norm_key": "drink"},'
         ' {"content": "我喜欢喝茶", "subject": "a"}]',)).fetchall()
    assert out == [(1, "created"), (2, "superseded"), (3, "duplicate")]
    assert raw.execute("SELECT count(*) FROM memdb.memories WHERE valid_to IS NULL"
                       ).fetchone()[0] == 1


def test_update_passes_the_gate_like_an_add(fresh_db, embedder):
    """A change of content (or kind/category/source) is checked as the memory would be if it
    were written new: a refused update raises Rejected and changes nothing; bypass_gate and
    unrelated fields skip the check."""
    from memdb import MemoryStore, Rejected

    with MemoryStore(fresh_db, embedder=embedder) as store:
        mid = store.add("张伟住在上海浦东新区", subject="zw", source_id="chat-1#2").id
        for bad in ("好的", "我猜张伟住在北京", "ok"):
            with pytest.raises(Rejected) as refused:
                store.update(mid, content=bad)
            assert refused.value.reasons
        with pytest.raises(Rejected):
            store.update(mid, kind="procedural")  # a rule needs a rule cue
        after = store.get(mid)
        assert (after.content, after.version, after.kind) == ("张伟住在上海浦东新区", 1, "semantic")
        assert store.update(mid, importance=0.9).version == 2  # not a gated field
        assert store.update(mid, content="好的呀", bypass_gate=True).content == "好的呀"
        english = store.add("Alice works at Acme in Berlin", subject="alice",
                            source_id="chat-2#1").id
        assert store.update(english, content="Alice works at Initech in Munich",
                            source_id="chat-2#9").version == 2
        with pytest.raises(Rejected):
            store.update(english, content="Alice probably works remotely")
