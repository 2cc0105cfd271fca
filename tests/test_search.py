"""MemoryStore.search / search_by_vector / mark_used against a real database: routes, RRF
fusion and its explanation, hostile and empty queries, argument checks, MMR, decay and
hotness, time travel.

``store`` embeds with the real local model where the model matters (Chinese and English
text); elsewhere memories and queries carry fixed vectors (``embedding=``) so rankings are
exact and fast. ``raw`` is an autocommit connection to the same database.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memdb import InvalidInput, MemoryStore
from memdb.retrieval.search import DEFAULT_OPTIONS, SearchOptions

DOC = "李四是前端工程师，擅长React和Vue.js开发"
DIMS = 384


def unit(seed: int, near: np.ndarray | None = None, noise: float = 1.0) -> np.ndarray:
    """A seeded random unit vector (optionally ``near`` another one)."""
    v = np.random.default_rng(seed).normal(size=DIMS)
    if near is not None:
        v = near + noise * v / np.linalg.norm(v)
    return (v / np.linalg.norm(v)).astype(np.float32)


def ids(hits) -> list:
    return [h.memory.id for h in hits]


# The SQL functions' own defaults (equal weights, rrf_k 60, BM25 b 0.75), for tests whose
# expectations are worked out by hand rather than against the tuned store defaults.
TEXTBOOK = SearchOptions(weights={"vector": 1.0, "bm25": 1.0, "exact": 1.0}, rrf_k=60, b=0.75)


def rrf(details: dict, weights: dict[str, float] | None = None,
        k: float = DEFAULT_OPTIONS.rrf_k) -> float:
    """The store's fusion recomputed: its default weights, overridden route by route."""
    weights = {**DEFAULT_OPTIONS.weights, **(weights or {})}
    return sum(w / (k + details[f"{route}_rank"])
               for route, w in weights.items() if details[f"{route}_rank"] is not None)


# -- keyword routes: Chinese bigrams, English stemming -------------------------------------------
def test_bm25_route_alone_finds_chinese_and_english(store: MemoryStore):
    lisi = store.add(DOC, subject="lisi").id
    store.add("王五是后端工程师，负责数据库", subject="wangwu")
    store.add("张三周末喜欢爬山和喝绿茶", subject="zhangsan")
    running = store.add("Amy was running late for the meetup", subject="amy").id
    store.add("Bob walks his dog every morning", subject="bob")

    hits = store.search("前端工程师", routes=["bm25"])
    assert hits[0].memory.id == lisi and hits[0].memory.content == DOC
    assert hits[0].details["bm25_rank"] == 1 and hits[0].details["bm25_score"] > 0
    for hit in hits:  # only the bm25 route ran
        assert hit.details["vector_rank"] is hit.details["vector_score"] is None
        assert hit.details["exact_rank"] is hit.details["exact_score"] is None
    assert ids(store.search("React", routes=["bm25"])) == [lisi]
    assert ids(store.search("vue.js", routes=["bm25"])) == [lisi]
    assert ids(store.search("runs", routes=["bm25"])) == [running]
    assert ids(store.search("前端工程师", k=1)) == [lisi]  # and through the full hybrid


# -- hostile, empty and invalid input --------------------------------------------------------------
HOSTILE = [
    "rust & go", "rust | go", "!rust", "rust:*", "'rust'", '"rust"', "rust <-> go", "rust <3> go",
    "'; drop table memdb.memories; --", "\\", "rust\\go\\", "(rust", "rust & !(go | x)):*",
    "前端 & !工程师", "100%", "%_%", "$1 $2", "'' || pg_sleep(1) || ''", "E'\\x27'",
]


def test_hostile_queries_are_plain_text(store: MemoryStore, raw):
    rust = store.add("Rust and Go are compiled languages").id
    store.add("李四在学 Rust 和 Go", subject="lisi")
    store.add(DOC, subject="lisi")
    discount = store.add("The discount is 100% off").id
    store.add("Just 1000 items left")
    before = store.count()
    for query in HOSTILE:
        store.search(query, k=5)  # no error
    assert store.count() == before
    assert raw.execute("SELECT to_regclass('memdb.memories') IS NOT NULL").fetchone()[0]
    # operators are ignored, the words still count
    assert rust in ids(store.search("!rust", routes=["bm25"]))
    assert len(store.search("rust <-> go", routes=["bm25"])) == 2
    assert ids(store.search("100%", routes=["exact"])) == [discount]  # % is literal


@pytest.mark.parametrize("query", ["", "   ", "!!!", "，。！？", "---", "the of and",
                                   "The is are was it", "\n\t"])
def test_queries_without_terms_find_nothing_by_keyword(store: MemoryStore, query):
    """BM25 finds nothing; a blank query finds nothing at all, any other still runs the
    vector route (issue 14: a query of no keyword terms used to return nothing)."""
    store.add("the of and it is", embedding=unit(1))
    store.add(DOC, embedding=unit(2))
    assert store.search(query, routes=["bm25"]) == []
    hits = store.search(query, embedding=unit(1))
    if query.strip():
        assert len(hits) == 2 and all(h.details["bm25_rank"] is None for h in hits)
    else:
        assert hits == []


def test_invalid_search_arguments_raise_invalid_input(store: MemoryStore):
    store.add(DOC, embedding=unit(3))
    q = unit(3)
    bad = [
        {"k": 0}, {"k": -1}, {"k": 1001}, {"k": True}, {"k": 2.5},
        {"weights": {"bm25": -1}}, {"weights": {"vector": -0.01}}, {"weights": {"graph": 1}},
        {"weights": {"bm25": float("nan")}}, {"weights": ["bm25"]},
        {"mmr": 1.5}, {"mmr": -0.1},
        {"routes": ["graph"]}, {"routes": []}, {"routes": ["bm25", "sql"]},
        {"decay": {"hotness_weight": 2}}, {"decay": {"decay_weight": -1}},
        {"decay": {"half_life_days": 0}}, {"decay": {"bogus": 1}},
        {"options": SearchOptions(depth=0)}, {"options": SearchOptions(rrf_k=0)},
        {"options": SearchOptions(b=1.5)}, {"options": SearchOptions(candidate_df_ratio=0)},
    ]
    for kwargs in bad:
        with pytest.raises(InvalidInput):
            store.search("React", embedding=q, **kwargs)
    for k in (0, 1001, -5):
        with pytest.raises(InvalidInput):
            store.search_by_vector(q, k=k)
    # the edges are fine
    assert len(store.search("React", k=1000, embedding=q, mmr=1.0,
                            weights={"bm25": 0, "vector": 0, "exact": 0})) == 1
    assert len(store.search("React", k=1, embedding=q, mmr=0.0)) == 1
    assert len(store.search_by_vector(q, k=1000)) == 1


# -- hybrid fusion and its explanation -------------------------------------------------------------
CORPUS = [
    (DOC, "lisi"),
    ("张三是前端开发，用React写了三年前端页面", "zhangsan"),
    ("王五是后端工程师，负责数据库和Go服务", "wangwu"),
    ("The frontend team migrated from Vue.js to React last spring", "team"),
    ("Database backups run every night at 2am", "ops"),
    ("赵六喜欢喝绿茶，周末去爬山", "zhaoliu"),
    ("React Native 是一个移动开发框架", "notes"),
    ("Alice prefers dark mode in every editor", "alice"),
]


@pytest.mark.parametrize("weights", [None, {"vector": 0.7, "bm25": 1.3, "exact": 0.5}])
def test_hybrid_details_and_fused_score(store: MemoryStore, weights):
    added = {text: r.id for (text, _), r in zip(
        CORPUS, store.add_many([{"content": t, "subject": s} for t, s in CORPUS]), strict=True)}
    hits = store.search("React和Vue.js开发", k=8, weights=weights)
    assert len(hits) >= 3
    assert hits[0].memory.id == added[DOC]  # the only memory holding the whole query
    assert hits[0].details["exact_rank"] == 1
    assert hits[0].details["exact_score"] == pytest.approx(len("react和vue.js开发") / len(DOC))
    for position, hit in enumerate(hits, start=1):
        d = hit.details
        assert set(d) == {"fused", "multiplier", "vector_rank", "vector_score", "bm25_rank",
                          "bm25_score", "exact_rank", "exact_score", "mmr_score"}
        assert hit.rank == position and d["mmr_score"] is None
        for route in ("vector", "bm25", "exact"):  # rank and score together, or neither
            assert (d[f"{route}_rank"] is None) == (d[f"{route}_score"] is None)
        assert d["fused"] == pytest.approx(rrf(d, weights), rel=1e-12)
        assert d["multiplier"] == 1.0
        assert hit.score == pytest.approx(d["fused"], rel=1e-12)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # within each route, ranks are distinct and follow the route's raw score (higher first)
    for route in ("vector", "bm25", "exact"):
        ranked = sorted((h.details[f"{route}_rank"], h.details[f"{route}_score"])
                        for h in hits if h.details[f"{route}_rank"] is not None)
        assert len({r for r, _ in ranked}) == len(ranked)
        scores = [s for _, s in ranked]
        assert scores == sorted(scores, reverse=True)
    assert all(h.details["vector_rank"] is not None for h in hits)  # every memory has a vector


def test_keyword_unknown_to_the_model_still_ranks(store: MemoryStore):
    """A product code the vector route cannot see: only BM25 (and exact) find it."""
    q = unit(10)
    store.add_many([{"content": f"Order {n} shipped to customer {n}, 订单{n}已发货",
                     "embedding": unit(100 + n, near=q, noise=0.5)} for n in range(12)])
    code = store.add("Part XK-4471 is the replacement valve for pump B",
                     embedding=unit(11, near=-q, noise=0.2)).id
    # each route's candidates: the vector route misses `code`; textbook fusion (rrf_k 60)
    opts = SearchOptions(depth=5).over(TEXTBOOK)
    both = store.search("XK-4471", k=10, embedding=q, options=opts, routes=["vector", "bm25"])
    hit = next(h for h in both if h.memory.id == code)
    assert hit.details["vector_rank"] is None and hit.details["bm25_rank"] == 1
    assert hit.details["fused"] == pytest.approx(1 / 61)
    assert hit.rank <= 2  # ties only with the vector route's best (1/61); ids break the tie
    # with the exact route as well it is the best hit: 1/61 + 1/61
    hits = store.search("XK-4471", k=10, embedding=q, options=opts)
    assert hits[0].memory.id == code and hits[0].details["fused"] == pytest.approx(2 / 61)
    # weight 0: the bm25 route still runs and reports its rank, but adds nothing to the fused
    # score, so the bm25-only hit falls below every vector hit (fused 0) ...
    zero = store.search("XK-4471", k=10, embedding=q, options=opts, routes=["vector", "bm25"],
                        weights={"bm25": 0})
    hit = next(h for h in zero if h.memory.id == code)
    assert hit.details["bm25_rank"] == 1 and hit.details["fused"] == 0.0 and hit.score == 0.0
    assert hit.rank == len(zero) == 6 and all(h.score > 0 for h in zero[:5])
    # ... and out of the results once k is filled by hits that score
    assert code not in ids(store.search("XK-4471", k=5, embedding=q, options=opts,
                                        routes=["vector", "bm25"], weights={"bm25": 0}))


def test_explain_gives_sql_params_and_timings(store: MemoryStore):
    store.add(DOC, subject="lisi")
    store.add("王五是后端工程师", subject="wangwu")
    hits = store.search("前端工程师", k=3, explain=True, subject="lisi")
    ex = hits.explain
    assert "memdb.search_hybrid" in ex["sql"]
    assert ex["params"]["tenant"] == "default" and ex["params"]["k"] == 3
    assert ex["params"]["query"] == "前端工程师"
    assert ex["params"]["filter"] == {"subject": ["lisi"]}
    assert ex["params"]["embedding"] == f"<vector {DIMS}>"
    assert ex["embed_ms"] > 0 and ex["db_ms"] > 0
    assert ex["routes"] == {"vector": 1, "bm25": 1, "exact": 1}
    assert ids(hits) == [store.list(subject="lisi")[0].id]
    assert store.search("前端工程师").explain is None
    ex = store.search_by_vector(unit(5), explain=True).explain
    assert ex["params"]["query"] is None and ex["params"]["options"] == {"routes": ["vector"]}
    assert ex["embed_ms"] == 0 and ex["routes"]["bm25"] == 0


# -- MMR -------------------------------------------------------------------------------------------
def test_mmr_diversifies_near_duplicates(store: MemoryStore):
    dups = [r.id for r in store.add_many([
        "Alice lives in Paris.",
        "Alice's home is in Paris, France.",
        "Alice resides in Paris.",
    ])]
    others = [r.id for r in store.add_many([
        "Alice works as a nurse at the city hospital.",
        "Alice has a dog named Rex.",
        "爱丽丝喜欢喝绿茶。",
        "Bob lives in Berlin.",
    ])]
    plain = store.search("Alice Paris", k=3, options=TEXTBOOK)
    assert set(ids(plain)) == set(dups)
    diverse = store.search("Alice Paris", k=3, mmr=0.5, options=TEXTBOOK)
    assert diverse[0].memory.id == plain[0].memory.id  # the best match stays first
    assert len(set(ids(diverse)) & set(dups)) == 1
    assert set(ids(diverse)[1:]) <= set(others)
    assert [h.rank for h in diverse] == [1, 2, 3]
    assert all(h.details["mmr_score"] is not None for h in diverse)
    assert diverse[0].details["mmr_score"] == pytest.approx(0.5)  # lambda * relevance 1
    # lambda 1 is pure relevance: the plain order
    assert ids(store.search("Alice Paris", k=3, mmr=1.0)) == ids(plain)


# -- decay, hotness, mark_used ---------------------------------------------------------------------
def _usage(raw) -> list[tuple]:
    return sorted(raw.execute(
        "SELECT memory_id, subject, use_count FROM memdb.memory_usage").fetchall())


def test_mark_used_and_hotness(store: MemoryStore, raw):
    e = unit(20)
    # the same memory for two subjects: equal in every route, ranked by id
    a, b = sorted([store.add("喜欢绿茶 likes green tea", subject=s, embedding=e).id
                   for s in ("alice", "bob")])
    subject_of = {m.id: m.subject for m in store.list()}
    hits = store.search("green tea 绿茶", embedding=e, options=TEXTBOOK)
    assert ids(hits) == [a, b]
    for _ in range(3):
        store.search("green tea 绿茶", embedding=e, decay={"hotness_weight": 1},
                            options=TEXTBOOK)
        store.search_by_vector(e)
    assert _usage(raw) == []  # searching is not using

    assert store.mark_used([b]) == 1
    assert store.mark_used([b, "00000000-0000-0000-0000-000000000007"]) == 1
    assert store.mark_used([b], subject="agent-x") == 1
    assert store.mark_used([]) == 0
    assert _usage(raw) == sorted([(b, subject_of[b], 2), (b, "agent-x", 1)])
    with pytest.raises(InvalidInput):
        store.mark_used(["not-a-uuid"])

    # default weights: multiplier 1, usage changes nothing
    hits = store.search("green tea 绿茶", embedding=e, options=TEXTBOOK)
    assert ids(hits) == [a, b] and {h.details["multiplier"] for h in hits} == {1.0}
    # hotness_weight 1: the used memory outranks the equal unused one; its own subject's
    # count (2) is read, not agent-x's
    hits = store.search("green tea 绿茶", embedding=e, decay={"hotness_weight": 1},
                            options=TEXTBOOK)
    assert ids(hits) == [b, a]
    assert hits[0].details["multiplier"] == pytest.approx(1.1, rel=1e-6)
    assert hits[1].details["multiplier"] == pytest.approx(1.0, rel=1e-6)
    assert hits[0].score == pytest.approx(hits[0].details["fused"] * 1.1, rel=1e-6)
    assert hits[0].details["fused"] < hits[1].details["fused"]


def test_decay_and_importance_spare_system_memories(store: MemoryStore):
    e = unit(30)
    old = datetime.now(UTC) - timedelta(days=180)
    general = store.add("每周五提交周报 weekly report due Friday", embedding=e,
                        created_at=old, importance=0.2).id
    system = store.add("永远用中文回答 always answer in Chinese", category="system",
                       embedding=e, created_at=old, importance=0.2).id
    plain = {h.memory.id: h.details["multiplier"] for h in store.search_by_vector(e)}
    assert plain == {general: 1.0, system: 2.0}  # the system boost (default 1), nothing else
    # vector route only (the two tie there): on BM25 the report would beat the rule, and a
    # boosted rule stays below a memory that beats it on every route (search_hybrid)
    hits = store.search("weekly report 周报", embedding=e, routes=["vector"],
                        decay={"decay_weight": 1, "importance_weight": 1})
    mult = {h.memory.id: h.details["multiplier"] for h in hits}
    assert mult[system] == 2.0
    assert mult[general] == pytest.approx(0.25 * 0.7, rel=1e-3)  # 2 half-lives, 0.5 + 0.2
    hits = store.search("weekly report 周报", embedding=e,
                        decay={"decay_weight": 1, "half_life_days": 180})
    assert {h.memory.id: h.details["multiplier"] for h in hits}[general] == pytest.approx(
        0.5, rel=1e-3)


def test_importance_weight_alone_applies_the_multiplier(store: MemoryStore):
    """importance_weight without decay or hotness still multiplies (search_hybrid computes
    memdb.score_multiplier only when a weight is set); with no weight the factor is exactly 1
    (English and Chinese)."""
    e = unit(35)
    low, high = (store.add(text, subject="mia", embedding=e, importance=imp).id
                 for text, imp in (("喜欢乌龙茶 likes oolong tea", 0.1),
                                   ("喜欢乌龙茶 likes oolong tea too", 0.9)))
    plain = store.search("oolong tea 乌龙茶", embedding=e, routes=["vector"], options=TEXTBOOK)
    assert {h.details["multiplier"] for h in plain} == {1.0}
    hits = store.search("oolong tea 乌龙茶", embedding=e, routes=["vector"], options=TEXTBOOK,
                        decay={"importance_weight": 1})
    mult = {h.memory.id: h.details["multiplier"] for h in hits}
    assert mult[high] == pytest.approx(1.4, rel=1e-6)  # 0.5 + importance 0.9
    assert mult[low] == pytest.approx(0.6, rel=1e-6)
    assert ids(hits)[:2] == [high, low]


# -- time travel -----------------------------------------------------------------------------------
def test_superseded_memory_only_visible_as_of_before(store: MemoryStore, raw):
    e = unit(40)

    def now() -> datetime:
        return raw.execute("SELECT clock_timestamp()").fetchone()[0]

    old = store.add("李四住在北京 Li Si lives in Beijing", subject="lisi", embedding=e).id
    before_new = now()
    new = store.add("李四搬到上海了 Li Si moved to Shanghai", subject="lisi",
                    embedding=unit(41, near=e, noise=0.3)).id
    both_current = now()
    raw.execute("UPDATE memdb.memories SET valid_to = now(), superseded_by = %s WHERE id = %s",
                (new, old))
    query = "李四 Li Si lives"
    assert ids(store.search(query, embedding=e)) == [new]
    assert ids(store.search_by_vector(e)) == [new]
    assert ids(store.search(query, embedding=e, as_of=before_new)) == [old]
    assert ids(store.search(query, routes=["bm25"], as_of=before_new)) == [old]
    assert ids(store.search_by_vector(e, as_of=before_new)) == [old]
    assert set(ids(store.search(query, embedding=e, as_of=both_current))) == {old, new}
    assert store.get(old).superseded_by == new and store.get(old).valid_to is not None
    # the supersede did not count as a BM25 document any more
    assert raw.execute("SELECT doc_count FROM memdb.bm25_stats").fetchone()[0] == 1
    assert ids(store.search("北京", routes=["bm25"])) == []
    assert ids(store.search("北京", routes=["bm25"], as_of=before_new)) == [old]
