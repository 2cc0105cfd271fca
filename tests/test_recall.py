"""Planned retrieval (MemoryStore.recall, memdb.search_planned) against the real embedded
PostgreSQL: categories at write, scoped search with the all-categories fallback, statuses,
traces (redacted, retention, erasure, stats) and the classification backfill."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest

from memdb import MemoryStore, QueryPlan, RecallStatus, TypedQuery
from memdb.core.errors import InvalidInput, NotFound
from memdb.write.classify import TAG_VERSION
from tests.cli_helpers import ok_json
from tests.pg_stats import table_reads

MEMORIES = [
    ("pref-tea", "王五喜欢喝乌龙茶，不加糖", "wangwu"),
    ("pref-en", "Wang Wu prefers dark roast coffee in the morning", "wangwu"),
    ("rule-git", "不能把密钥提交到git仓库", "wangwu"),
    ("rule-en", "Never commit API keys to the repository", "wangwu"),
    ("proj", "Phoenix 项目是一个计费系统，负责人是李四", "wangwu"),
    ("event", "上周三我们开会决定把数据库迁移到PostgreSQL", "wangwu"),
    ("tool", "王五的编辑器是 vim，配置在 ~/.vimrc", "wangwu"),
    ("skill", "部署步骤：先运行测试，然后 docker compose up -d", "wangwu"),
    ("pattern", "王五每周五下午写周报", "wangwu"),
    ("other", "李雷喜欢喝绿茶", "lilei"),
]


@pytest.fixture
def seeded(store: MemoryStore) -> dict[str, str]:
    ids = {}
    for key, content, subject in MEMORIES:
        ids[key] = str(store.add(content, subject=subject).id)
    return ids


def test_write_classifies_and_files_under_the_subject(store, seeded):
    expected = {"pref-tea": "preferences", "pref-en": "preferences", "rule-git": "system",
                "rule-en": "system", "proj": "entities", "event": "events", "tool": "tools",
                "skill": "skills", "pattern": "patterns"}
    for key, category in expected.items():
        m = store.get(seeded[key])
        assert m.category.value == category, (key, m.content)
        assert m.uri == f"mem://{m.subject}/{category}/{m.id}"
    explicit = store.add("Phoenix uses vim keybindings", subject="wangwu", category="general")
    assert store.get(explicit.id).category.value == "general"  # explicit wins


def test_tag_version_column(store, seeded, raw):
    rows = dict(raw.execute("SELECT id::text, tag_version FROM memdb.memories").fetchall())
    assert set(rows.values()) == {TAG_VERSION}
    r = store.add("explicit", category="tools")
    assert raw.execute("SELECT tag_version FROM memdb.memories WHERE id = %s",
                       (r.id,)).fetchone()[0] is None
    store.update(seeded["pref-tea"], category="general")
    assert raw.execute("SELECT tag_version FROM memdb.memories WHERE id = %s",
                       (seeded["pref-tea"],)).fetchone()[0] is None


@pytest.mark.parametrize(("query", "key", "intent"), [
    ("王五喜欢喝什么茶", "pref-tea", "preference_query"),
    ("What coffee does Wang Wu like?", "pref-en", "preference_query"),
    ("上次那个项目", "proj", "entity_recall"),
    ("怎么部署", "skill", "skill_request"),
    ("为什么决定迁移数据库", "event", "decision_trace"),
])
def test_recall_finds_in_the_planned_directory(store, seeded, query, key, intent):
    res = store.recall(query, k=3, subject="wangwu")
    assert res.plan.intent == intent
    assert str(res[0].memory.id) == seeded[key]
    assert res.status in (RecallStatus.OK, RecallStatus.DEGRADED)
    assert all(h.memory.subject == "wangwu" for h in res)
    assert res.trace_id is not None


def test_empty_scope_falls_back_and_never_misses_what_flat_finds(store, seeded):
    # the plan looks only in 'general', where wangwu has nothing: the fallback must answer
    plan = QueryPlan("乌龙茶", "general_chat", (TypedQuery("乌龙茶", ("general",), "bm25", 1.0),))
    flat = store.search("乌龙茶", k=3, subject="wangwu")
    res = store.recall("乌龙茶", k=3, subject="wangwu", plan=plan, backstop=0)
    assert flat and res
    assert [h.memory.id for h in res] == [h.memory.id for h in flat]
    assert res.fallback and "fallback" in res.reasons
    assert res.status is RecallStatus.DEGRADED
    assert [n["route"] for n in res.notes["routes"]] == ["q1", "all"]
    assert res.notes["routes"][0]["rows"] == 0 and res.notes["routes"][1]["rows"] >= len(flat)
    # a scope that finds something else (vector neighbours in 'skills') does not hide the tea:
    # the all-categories route runs beside it (backstop weight)
    plan = QueryPlan("乌龙茶", "skill_request", (TypedQuery("乌龙茶", ("skills",), "bm25", 1.0),))
    res = store.recall("乌龙茶", k=3, subject="wangwu", plan=plan)
    assert seeded["pref-tea"] in {str(h.memory.id) for h in res}
    assert not res.fallback and res.status is RecallStatus.OK


def test_no_relevant_memory_is_not_degraded(store, seeded):
    res = store.recall("量子计算机的纠错码", k=3, subject="nobody", trace=False)
    assert list(res) == []
    assert res.status is RecallStatus.NO_RELEVANT_MEMORY
    assert "fallback" in res.reasons and res.trace_id is None


def test_route_error_is_degraded_and_fallback_answers(store, seeded):
    # a plan built in code is not validated: its bad category makes that route raise inside
    # memdb.search_planned, which records the error and falls back to all categories
    plan = QueryPlan("乌龙茶", "preference_query",
                     (TypedQuery("乌龙茶", (1,), "semantic", 1.0),))  # type: ignore[arg-type]
    res = store.recall("乌龙茶", k=3, subject="wangwu", plan=plan, backstop=0)
    assert "route_error:q1" in res.reasons and "fallback" in res.reasons
    assert res.status is RecallStatus.DEGRADED
    assert str(res[0].memory.id) == seeded["pref-tea"]
    assert "22023" in res.notes["routes"][0]["error"]
    # with nothing to find the status stays degraded: the agent must not say "never told me"
    res = store.recall("量子计算机的纠错码", k=3, subject="nobody", plan=QueryPlan(
        "量子计算机的纠错码", "general_chat", (TypedQuery("量子", (1,), "semantic", 1.0),)))  # type: ignore[arg-type]
    assert list(res) == [] and res.status is RecallStatus.DEGRADED


def test_planner_timeout_marks_degraded(store, seeded):
    class Slow:
        def plan_json(self, query):
            raise TimeoutError("planner took too long")

    from memdb.retrieval.planner import Planner

    store.planner = Planner(Slow(), mode="llm")
    res = store.recall("王五喜欢喝什么茶", k=3, subject="wangwu")
    assert res.plan.fallback and res.plan.source == "heuristic"
    assert "planner_timeout" in res.reasons
    assert res.status is RecallStatus.DEGRADED and res
    assert str(res[0].memory.id) == seeded["pref-tea"]


def test_search_timeout_falls_back_to_flat(store, seeded):
    res = store.recall("王五喜欢喝什么茶", k=3, subject="wangwu", timeout_ms=1)
    # 1 ms may or may not be enough for the planned search on this machine; either way the
    # caller gets memories, and a timeout is reported as degraded
    assert res
    if "search_timeout" in res.reasons:
        assert res.status is RecallStatus.DEGRADED and res.fallback


def test_hotness_spares_system(store, seeded):
    res = store.recall("不能把密钥提交到git", k=5, subject="wangwu", hotness=1.0)
    system = [h for h in res if h.memory.category.value == "system"]
    assert system and all(h.details["multiplier"] == 1.0 for h in system)
    others = [h for h in res if h.memory.category.value != "system"]
    assert all(h.details["multiplier"] != 1.0 for h in others)


def test_trace_is_redacted_and_complete(store, seeded):
    q = "王五的手机 13812345678 和邮箱 wangwu@example.com 密码是 hunter2secret 喜欢喝什么茶"
    res = store.recall(q, k=3, subject="wangwu")
    t = store.traces.get(res.trace_id)
    for secret in ("13812345678", "wangwu@example.com", "hunter2secret"):
        assert secret not in t["query"] and secret not in str(t["plan"])
    assert "[REDACTED:phone]" in t["query"] and "[REDACTED:email]" in t["query"]
    assert t["intent"] == res.plan.intent and t["plan_source"] == "heuristic"
    assert t["chosen_ids"] == [h.memory.id for h in res]
    assert t["subject"] == "wangwu" and t["result_subjects"] == ["wangwu"]
    assert t["candidates"] and {"q1"} <= set(t["candidates"][0]["routes"]) | {"q1"}
    assert t["latency_ms"] > 0 and t["status"] == res.status.value
    assert store.traces.list(5)[0]["id"] == res.trace_id
    with pytest.raises(NotFound):
        store.traces.get("00000000-0000-0000-0000-000000000000")


def test_traces_retention_erasure_and_stats(store, seeded, raw):
    for q in ("王五喜欢喝什么茶", "上次那个项目", "量子计算机的纠错码"):
        store.recall(q, k=3, subject="wangwu")
    store.recall("李雷喜欢什么", k=3)  # tenant-wide: subject '*', results of lilei (and wangwu)
    stats = store.traces.stats()
    assert stats["searches"] == 4
    assert set(stats["intents"]) >= {"preference_query", "entity_recall"}
    assert 0 <= stats["empty_rate"] <= 1 and stats["p95_ms"] >= stats["p50_ms"] > 0
    raw.execute("UPDATE memdb.retrieval_traces SET created_at = now() - interval '40 days' "
                "WHERE query = '上次那个项目'")
    assert store.traces.purge() == 1  # default retention: 30 days
    assert store.traces.purge(older_than_days=365) == 0
    assert store.traces.erase("lilei") == 1  # the tenant-wide one returned lilei's memory
    assert store.traces.erase("wangwu") == 2
    assert store.traces.list() == []


def test_traces_are_isolated(fresh_db, embedder, seeded, store):
    store.recall("王五喜欢喝什么茶", k=3, subject="wangwu")
    with MemoryStore(fresh_db, embedder=embedder, tenant="other", gate=None) as other:
        assert other.traces.list() == [] and other.traces.stats()["searches"] == 0
    with MemoryStore(fresh_db, embedder=embedder, subject="lilei", gate=None) as lilei:
        assert lilei.traces.list() == []
        lilei.recall("绿茶", k=3)
        assert [t["subject"] for t in lilei.traces.list()] == ["lilei"]


@pytest.mark.local_only("session-level set_config() does not reach Citus workers "
                        "(tests/test_citus.py covers SQL isolation there with SET LOCAL)")
def test_search_planned_from_sql(raw, store, seeded):
    """The ranking is inspectable from psql: typed queries, fusion, notes."""
    store.recall("x", k=1)  # nothing: just make sure the function exists for the app role too
    raw.execute("SET ROLE memdb_app")
    raw.execute("SELECT set_config('memdb.tenant', 'default', false)")
    rows = raw.execute("""
        SELECT rank, id, category, routes, fallback, notes FROM memdb.search_planned('default',
            '{"query": "乌龙茶", "queries": [{"text": "乌龙茶", "categories": ["preferences"],
              "strategy": "bm25", "weight": 1}]}', NULL, 3, '{"subject": "wangwu"}',
            '{"routes": ["bm25", "exact"]}')""").fetchall()
    raw.execute("RESET ROLE")
    assert rows[0][0] == 0 and rows[0][5]["routes"][0]["categories"] == ["preferences"]
    assert rows[1][2] == "preferences" and str(rows[1][1]) == seeded["pref-tea"]
    assert "q1" in rows[1][3] and rows[1][4] is False


def test_bad_plans_and_options_are_refused(store, seeded):
    with pytest.raises(InvalidInput):
        store.recall("茶", plan={"query": "茶", "intent": "nonsense", "queries": []})
    with pytest.raises(InvalidInput):
        store.recall("茶", backstop=11)
    with store.core.transaction() as conn, pytest.raises(psycopg.Error):
        conn.execute("SELECT * FROM memdb.search_planned('default', '{\"query\": 1}')")


def test_reclassify_dry_run_then_write(store, raw):
    a = store.add("I prefer tea", subject="s").id
    b = store.add("plain words", subject="s").id
    c = store.add("never commit keys", subject="s", category="tools").id  # explicit: kept
    # simulate memories written before classification existed
    raw.execute("UPDATE memdb.memories SET category = 'general', tag_version = NULL "
                "WHERE id IN (%s, %s)", (a, b))
    report = store.maintenance.reclassify(dry_run=True)
    assert report["scanned"] == 2 and report["moves"] == {"general->preferences": 1}
    assert report["sample"][0]["id"] == str(a) and report["sample"][0]["to"] == "preferences"
    assert store.get(a).category.value == "general"  # dry run wrote nothing
    report = store.maintenance.reclassify(dry_run=False, batch_size=1)
    assert report["moved"] == 1 and report["unchanged"] == 1
    assert store.get(a).category.value == "preferences"
    assert store.get(a).uri.endswith(f"/preferences/{a}")
    assert store.get(c).category.value == "tools"
    assert store.maintenance.reclassify(dry_run=True)["scanned"] == 0
    assert [h.reason for h in store.history(a)][-1] == "reclassify"


def test_content_update_reclassifies_a_classified_memory(store, seeded, fresh_db):
    tea = seeded["pref-tea"]
    assert store.get(tea).tag_version == TAG_VERSION
    m = store.update(tea, content="不能把密钥提交到git仓库里")
    assert (m.category.value, m.tag_version) == ("system", TAG_VERSION)
    assert m.uri == f"mem://wangwu/system/{tea}"
    # an explicit category is the caller's: it survives new content
    explicit = str(store.add("Phoenix uses vim keybindings", subject="wangwu",
                             category="tools").id)
    m = store.update(explicit, content="王五喜欢喝乌龙茶和红茶")
    assert (m.category.value, m.tag_version) == ("tools", None)
    # content with a category: the given category wins and is explicit from now on
    m = store.update(tea, content="I prefer green tea", category="general")
    assert (m.category.value, m.tag_version) == ("general", None)
    m = store.update(tea, content="Never deploy on Fridays")
    assert m.category.value == "general"  # explicit now: not re-classified
    # tag_version is not the caller's to set, from Python or SQL; a refused update changes nothing
    before = store.get(tea)
    with pytest.raises(InvalidInput, match="tag_version"):
        store.update(tea, content="我喜欢红茶", tag_version=1)
    with psycopg.connect(fresh_db) as conn, pytest.raises(psycopg.errors.InvalidTextRepresentation):
        conn.execute("SELECT memdb.update_memory('default', %s, "
                     "'{\"category\": \"tools\", \"tag_version\": \"x\"}')", (tea,))
    after = store.get(tea)
    assert (after.content, after.category, after.version) == (
        before.content, before.category, before.version)
    # the CLI goes through the same path
    out = ok_json(fresh_db, "update", seeded["pref-en"], "--no-gate",
                  "--content", "Always run the tests before you deploy")
    assert (out["category"], out["tag_version"]) == ("system", TAG_VERSION)
    assert out["uri"] == f"mem://wangwu/system/{seeded['pref-en']}"


def test_timedelta_stats_window(store, seeded):
    store.recall("王五喜欢喝什么茶", k=3, subject="wangwu")
    assert store.traces.stats(timedelta(hours=1))["searches"] == 1


@pytest.mark.parametrize("backstop", [0.0, None])
def test_never_empty_when_flat_finds_something(store, seeded, backstop):
    """Whatever the plan (wrong categories included), a query a flat search answers is never
    answered with nothing; with the default backstop the flat search's best hit stays in."""
    queries = ["乌龙茶", "PostgreSQL", "vim", "周报", "keys", "李四", "docker compose",
               "量子", "the main branch", "不加糖"]
    for q in queries:
        flat = store.search(q, k=5, subject="wangwu")
        for cats in [(), ("general",), ("system",), ("tools", "skills"), ("events",)]:
            plan = QueryPlan(q, "general_chat", (TypedQuery(q, cats, "bm25", 1.0),))
            res = store.recall(q, k=5, subject="wangwu", plan=plan, backstop=backstop,
                               hotness=0, trace=False)
            assert bool(res) == bool(flat), (q, cats)
            if flat and backstop is None:
                assert flat[0].memory.id in {h.memory.id for h in res}, (q, cats)


def test_with_general_adds_the_unclassified(store, seeded):
    g = store.add("乌龙茶 note", subject="wangwu", category="general").id
    plan = QueryPlan("乌龙茶", "preference_query",
                     (TypedQuery("乌龙茶", ("preferences",), "bm25", 1.0),))
    res = store.recall("乌龙茶", k=5, subject="wangwu", plan=plan, backstop=0,
                       with_general=True)
    assert res.notes["routes"][0]["categories"] == ["preferences", "general"]
    assert g in {h.memory.id for h in res}
    res = store.recall("乌龙茶", k=5, subject="wangwu", plan=plan, backstop=0,
                       with_general=False)
    assert res.notes["routes"][0]["categories"] == ["preferences"]
    assert all("q1" not in h.details["routes"] for h in res if h.memory.id == g)


def test_forget_subject_erases_traces_that_returned_the_subject(store, seeded, raw):
    """A tenant-wide search is traced with subject '*'; forget_subject still removes it when it
    returned the forgotten subject's memories (through memdb.erase_traces), and its dry run
    counts it."""
    store.recall("王五喜欢喝什么茶", k=3, subject="wangwu")
    store.recall("李雷喜欢什么", k=3)  # tenant-wide
    tenant_wide = raw.execute("SELECT result_subjects FROM memdb.retrieval_traces"
                              " WHERE subject = '*'").fetchone()[0]
    assert "lilei" in tenant_wide
    planned = store.subjects.forget("lilei", dry_run=True)
    assert planned.counts["retrieval_traces"] == 1
    assert raw.execute("SELECT count(*) FROM memdb.retrieval_traces").fetchone()[0] == 2
    done = store.subjects.forget("lilei")
    assert done.counts["retrieval_traces"] == 1
    left = raw.execute("SELECT subject, result_subjects FROM memdb.retrieval_traces").fetchall()
    assert left == [("wangwu", ["wangwu"])]


def test_anchored_recall_holds_the_flat_top_k_and_reorders_it(store, seeded):
    """By default (anchor) recall returns exactly the memories a flat search returns at the same
    k, for any plan; the plan decides their order. anchor=False lets a scoped route pull a
    memory of its categories past the flat top k."""
    queries = ["乌龙茶", "PostgreSQL", "vim", "周报", "keys", "李四", "docker compose",
               "coffee in the morning", "不加糖", "git"]
    reordered = 0
    for q in queries:
        for k in (1, 2, 3):
            flat = [h.memory.id for h in store.search(q, k=k, subject="wangwu")]
            for cats in [("preferences",), ("system",), ("tools", "skills"), ("events",)]:
                plan = QueryPlan(q, "general_chat", (TypedQuery(q, cats, "semantic", 1.0),))
                res = store.recall(q, k=k, subject="wangwu", plan=plan, backstop=0,
                                   trace=False)
                got = [h.memory.id for h in res]
                assert sorted(got) == sorted(flat), (q, k, cats)
                assert res.notes["anchor_k"] == k
                reordered += got != flat
    assert reordered  # the plan does order the anchored memories

    # k = 1: flat's best answer to "git" is not the editor memory; a plan scoped to tools
    # pulls the editor in only when unanchored
    q = "git 密钥和编辑器"
    flat = store.search(q, k=1, subject="wangwu")
    assert str(flat[0].memory.id) != seeded["tool"]
    plan = QueryPlan(q, "tool_query", (TypedQuery(q, ("tools",), "semantic", 1.0),))
    anchored = store.recall(q, k=1, subject="wangwu", plan=plan, backstop=0, trace=False)
    assert [h.memory.id for h in anchored] == [flat[0].memory.id]
    free = store.recall(q, k=1, subject="wangwu", plan=plan, backstop=0, anchor=False,
                        trace=False)
    assert str(free[0].memory.id) == seeded["tool"] and free.notes["anchor_k"] == 0


def test_anchor_is_validated(store, seeded, raw):
    with pytest.raises(InvalidInput, match="anchor"):
        store.recall("茶", anchor="yes")  # type: ignore[arg-type]
    raw.execute("SELECT set_config('memdb.tenant', 'default', false)")
    for bad in ('"5"', "1.5", "-1", "11", "true"):
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="anchor_k"):
            raw.execute("SELECT * FROM memdb.search_planned('default', "
                        "'{\"query\": \"茶\", \"queries\": []}', NULL, 10, '{}', "
                        f"'{{\"routes\": [\"bm25\"], \"anchor_k\": {bad}}}')")


def test_anchor_matches_flat_search_beyond_the_candidate_depth(store):
    """With more matching memories than a route's candidate depth, the anchored members are
    still exactly flat search's top k: the all-categories route uses the per-method depth that
    search_hybrid uses at that k. (With the depth of a 50-row search instead, which the route
    had before, this test fails: the sets differ.)"""
    import random

    vocab = ("tea coffee project meeting deploy vim config billing keys release notes weekly "
             "report database migration test steps team manager 项目 会议 咖啡 茶 部署 数据库 "
             "周报 测试 发布 配置 团队").split()
    rnd = random.Random(0)
    store.add_many([{"content": " ".join(rnd.choice(vocab) for _ in range(rnd.randint(3, 12)))
                     + f" n0x{i}", "subject": "deep"} for i in range(220)])
    for _ in range(40):
        q = " ".join(rnd.sample(vocab, 3))
        for k in (5, 10):
            flat = [h.memory.id for h in store.search(q, k=k, subject="deep")]
            plan = QueryPlan(q, "tool_query", (TypedQuery(q, ("tools",), "bm25", 1.0),))
            res = store.recall(q, k=k, subject="deep", plan=plan, trace=False)
            assert sorted(h.memory.id for h in res) == sorted(flat), (q, k)


def test_search_planned_reads_use_counts_only_for_the_hotness_weight(store, raw):
    """memdb.search_planned looks a candidate's use count up only when the hotness weight reads
    it (the other weights never do): without it memdb.memory_usage is not read at all, however
    large; with it the subject's counts rank, not other subjects'. (On a Citus coordinator the
    table's read counters miss the workers' shards: there only the rankings are checked.)"""
    ids = [str(store.add(f"oolong tea note {i} / 乌龙茶笔记 {i}", subject="hot").id)
           for i in range(6)]
    for _ in range(9):
        store.mark_used([ids[4]], subject="hot")
    raw.execute("INSERT INTO memdb.memory_usage (tenant, memory_id, subject, use_count) "
                "SELECT 'default', m.id, 'other' || g, 50 FROM memdb.memories m, "
                "generate_series(1, 30) g WHERE m.id <> %s::uuid", (ids[4],))
    plan = ('{"query": "oolong tea", "queries": [{"text": "oolong tea", "categories": [], '
            '"strategy": "bm25", "weight": 1}]}')

    def planned(options: str) -> list[str]:
        rows = raw.execute("SELECT rank, id FROM memdb.search_planned('default', %s, NULL, 6, "
                           "'{\"subject\": \"hot\"}', %s) WHERE rank > 0 ORDER BY rank",
                           (plan, options)).fetchall()
        return [str(r[1]) for r in rows]

    for _ in range(7):  # past the custom plans
        planned('{"routes": ["bm25"]}')
    local = not raw.execute("SELECT count(*) FROM pg_extension WHERE extname = 'citus'"
                            ).fetchone()[0]
    usage = "memdb.memory_usage"
    before = table_reads(raw, usage)
    plain = planned('{"routes": ["bm25"], "importance_weight": 0.5, "decay_weight": 0.5}')
    assert set(plain) == set(ids) and (table_reads(raw, usage) == before or not local)
    hot = planned('{"routes": ["bm25"], "hotness_weight": 1}')
    assert hot[0] == ids[4] and (table_reads(raw, usage) > before or not local)
