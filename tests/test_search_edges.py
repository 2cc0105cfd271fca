"""Search edges found by the hostile trial (issue 14): text in angle brackets, queries with no
keyword terms, the system-rule boost on weak matches, and re-deriving the keyword index.

SQL-level checks use ``raw`` (autocommit, pgvector registered; fixed 3-d vectors, so every
route's ranks are known); store-level checks use ``store`` (no write gate) and the real
embedder. Chinese, English and mixed text alike.
"""

from __future__ import annotations

from uuid import UUID

import numpy as np
import psycopg
import pytest
from psycopg.types.json import Jsonb

from memdb import MemoryStore


def one(raw: psycopg.Connection, query: str, params: tuple | None = None):
    return raw.execute(query, params).fetchone()[0]


def lexemes(raw: psycopg.Connection, text: str) -> set[str]:
    return set(one(raw, "SELECT tsvector_to_array(memdb.tokenize(%s))", (text,)))


def add(raw: psycopg.Connection, items: list[dict], embeddings=None, space_id=None) -> list[UUID]:
    rows = raw.execute("SELECT ord, id FROM memdb.add_memories(%s, %b::vector[], %s)",
                       (Jsonb(items), None if embeddings is None else list(embeddings),
                        space_id)).fetchall()
    return [r[1] for r in sorted(rows)]


def space(raw: psycopg.Connection) -> int:
    return one(raw, "SELECT memdb.ensure_embedding_space('fixed-3d', 3)")


def vec(*xs: float) -> np.ndarray:
    return np.asarray(xs, dtype=np.float32)


def ids(hits) -> list:
    return [h.memory.id for h in hits]


# -- angle brackets: memories are not HTML ----------------------------------------------------
@pytest.mark.parametrize(("text", "expected"), [
    ("if a<b and c>d then", {"b", "c", "d"}),
    ("List<String> names", {"list", "string", "name"}),
    ("<script>alert(1)</script>", {"script", "alert", "1"}),
    ("x&lt;y and foo&bar; AT&T", {"x", "lt", "y", "foo", "bar"}),
    ("see /etc/hosts", {"see", "etc", "host"}),
    ("＜ｄｉｖ＞ full-width", {"div", "full", "width"}),
    ("李四<前端>工程师", {"李四", "前端", "工程", "程师"}),
    ("泛型 Map<K, V> 和 List<用户>", {"泛型", "map", "k", "v", "list", "用户"}),
])
def test_tokenize_keeps_words_in_angle_brackets(raw, text, expected):
    """SQL-level memdb.tokenize (what psql users call): '<...>' is not an HTML tag and
    '&name;' not an entity, so no word inside them is dropped."""
    assert expected <= lexemes(raw, text), text
    assert expected <= set(one(raw, "SELECT memdb.query_terms(%s)", (text,))), text


def test_text_in_angle_brackets_is_found_on_every_route(store: MemoryStore):
    xss = store.add("The XSS payload was <script>alert(1)</script> in the comment box").id
    generic = store.add("Use List<String> for the names, 不要用 Map<用户>").id
    store.add("Alice prefers green tea over coffee")
    hits = store.search("<script>", k=3)
    assert ids(hits)[0] == xss
    d = hits[0].details
    assert d["bm25_rank"] == 1 and d["exact_rank"] == 1 and d["vector_rank"] is not None
    assert ids(store.search("String", k=1, routes=["bm25"])) == [generic]
    assert ids(store.search("用户", k=1, routes=["bm25"])) == [generic]
    assert ids(store.search("if a<b and c>d", k=1, routes=["exact", "bm25"])) == []


# -- queries with no keyword terms ---------------------------------------------------------------
def test_emoji_query_finds_the_memory_that_contains_it(store: MemoryStore):
    tea = store.add("今天喝了一杯 🍵，很舒服").id
    store.add("Alice prefers coffee in the morning")
    store.add("李四是前端工程师")
    hits = store.search("🍵", k=3)
    assert ids(hits)[0] == tea
    assert hits[0].details["exact_rank"] == 1
    assert all(h.details["vector_rank"] is not None for h in hits)  # the vector route ran
    assert ids(store.search("🍵", k=3, routes=["exact"])) == [tea]
    assert store.search("🍵", routes=["bm25"]) == []  # no keyword terms: BM25 has nothing


@pytest.mark.parametrize("query", ["the of and", "It is what it is", "!!!", "，。！？", "🍵"])
def test_query_without_terms_still_runs_the_vector_route(store: MemoryStore, query: str):
    store.add("张三喜欢喝绿茶")
    store.add("Bob walks to work every day")
    hits = store.search(query, k=5)
    assert len(hits) == 2 and all(h.details["vector_rank"] is not None for h in hits)
    assert all(h.details["bm25_rank"] is None for h in hits)


@pytest.mark.parametrize("query", ["", "   ", "\t\n", "\u3000"])
def test_blank_query_finds_nothing(store: MemoryStore, raw, query: str):
    store.add("张三喜欢喝绿茶")
    assert store.search(query) == []
    rows = raw.execute("SELECT * FROM memdb.search_hybrid('default', %s, %s, 5)",
                       (query, store.embedder.embed_queries(["x"])[0])).fetchall()
    assert rows == []


def test_exact_route_single_characters(raw):
    """One emoji or symbol is searched; one letter, digit or CJK character is not (it would
    match most memories; BM25 finds it as a word)."""
    a, b = add(raw, [{"content": "一杯🍵 100% tea"}, {"content": "a cup of 茶"}])
    exact = "SELECT id FROM memdb.search_exact('default', %s, 10)"
    assert [r[0] for r in raw.execute(exact, ("🍵",))] == [a]
    assert [r[0] for r in raw.execute(exact, ("%",))] == [a]
    for q in ("a", "1", "茶", "é", " "):
        assert raw.execute(exact, (q,)).fetchall() == [], q
    bm25 = "SELECT id FROM memdb.search_bm25('default', %s, 10)"
    assert [r[0] for r in raw.execute(bm25, ("茶",))] == [b]


def test_exact_route_skips_short_phrases_of_stop_words_only(raw):
    """A phrase of up to four English stop words is not searched as a substring ('%the i%' is
    in 'the idea' and 'the invoice': it ranks most memories by length, and reading them was the
    exact route's tail); a fifth word, one content word, a CJK character, an emoji or a symbol
    brings the route back, with the same rows as before."""
    a, b, c = add(raw, [{"content": "The idea was a to-do list in a notebook"},
                        {"content": "It is what it is, 就这样吧"},
                        {"content": "the invoice: 100% paid 🍵"}])
    exact = "SELECT id FROM memdb.search_exact('default', %s, 10) ORDER BY score DESC, id"
    for q in ("The i", "a to", "it is what", "IT IS, what it", "don't", "the the we", "a in a"):
        assert raw.execute(exact, (q,)).fetchall() == [], q
    assert [r[0] for r in raw.execute(exact, ("it is what it is",))] == [b]
    assert [r[0] for r in raw.execute(exact, ("IT is What it IS",))] == [b]
    assert [r[0] for r in raw.execute(exact, ("the idea",))] == [a]
    assert [r[0] for r in raw.execute(exact, ("the invoice",))] == [c]
    assert [r[0] for r in raw.execute(exact, ("is, 就",))] == [b]
    assert [r[0] for r in raw.execute(exact, ("% paid 🍵",))] == [c]
    assert {r[0] for r in raw.execute(exact, ("%",))} == {c}


def test_stop_word_phrase_is_still_answered_by_the_vector_route(store: MemoryStore):
    store.add("It is what it is, said Bob about the weather")
    store.add("张三喜欢喝绿茶")
    hits = store.search("it is what", k=5)
    assert len(hits) == 2 and all(h.details["vector_rank"] is not None for h in hits)
    assert all(h.details["exact_rank"] is None and h.details["bm25_rank"] is None for h in hits)


# -- system boost: never past a memory that beats the rule on every route -----------------------
def _hybrid(raw, query: str, embedding, options: dict | None = None) -> list[tuple]:
    return raw.execute(
        "SELECT id, rank, score, fused, multiplier FROM memdb.search_hybrid("
        "'default', %s, %s, 10, '{}', %s)", (query, embedding, Jsonb(options or {}))).fetchall()


def test_boost_does_not_lift_a_rule_past_a_memory_that_beats_it_everywhere(raw):
    sid = space(raw)
    best, rule, weak = add(raw, [
        {"content": "Alice drinks green tea every morning"},           # bm25 1, vector 1
        {"content": "Never serve green coffee to guests", "category": "system"},  # 2, 2
        {"content": "Bob walks to work"},                              # -, 3
    ], [vec(1, 0, 0), vec(0.9, 0.3, 0), vec(0.2, 1, 0)], sid)
    rows = _hybrid(raw, "green tea", vec(1, 0, 0))
    assert [r[0] for r in rows] == [best, rule, weak]
    by_id = {r[0]: r for r in rows}
    assert by_id[rule][2] == pytest.approx(by_id[best][2])  # capped at the memory's score
    assert by_id[rule][2] > 2 * by_id[weak][2]  # still boosted past what it beats
    for _, _, score, fused, mult in rows:
        assert score == pytest.approx(fused * mult)
    assert by_id[rule][4] < 2.0
    # without the boost: the plain fused order, multiplier 1
    plain = _hybrid(raw, "green tea", vec(1, 0, 0), {"system_boost": 0})
    assert [r[0] for r in plain] == [best, rule, weak] and plain[1][4] == 1.0


def test_boost_decides_mixed_evidence_for_the_rule(raw):
    sid = space(raw)
    pref, rule = add(raw, [
        {"content": "用户喜欢很长很详细的回答 long answers"},      # bm25 1, vector 2
        {"content": "回答必须简洁 answers must be short", "category": "system"},  # 2, 1
    ], [vec(0.8, 0.6, 0), vec(1, 0, 0)], sid)
    rows = _hybrid(raw, "用户喜欢什么样的回答 long answers", vec(1, 0, 0))
    assert [r[0] for r in rows] == [rule, pref]
    assert rows[0][4] == 2.0  # the full boost: no candidate beats the rule on every route
    hypo = add(raw, [{"content": "回答必须简洁 answers must be short!", "category": "system",
                      "status": "hypothesis"}], [vec(1, 0, 0)], sid)[0]
    assert {r[0]: r[4] for r in _hybrid(raw, "answers", vec(1, 0, 0))}[hypo] == 1.0


def test_boost_wins_ties_and_ignores_routes_of_weight_zero(raw):
    sid = space(raw)
    memo, rule = add(raw, [
        {"content": "weekly report due Friday 周报"},
        {"content": "always answer in Chinese 永远用中文回答", "category": "system"},
    ], [vec(1, 0, 0), vec(1, 0, 0)], sid)
    # the same vector: a tie is not a beat, whichever id sorts first
    rows = _hybrid(raw, "anything", vec(1, 0, 0), {"routes": ["vector"]})
    assert [r[0] for r in rows] == [rule, memo] and rows[0][4] == 2.0
    # the report is better on the keyword routes only: it beats the rule, unless they weigh 0
    assert [r[0] for r in _hybrid(raw, "weekly report", vec(1, 0, 0))] == [memo, rule]
    rows = _hybrid(raw, "weekly report", vec(1, 0, 0), {"weights": {"bm25": 0, "exact": 0}})
    assert [r[0] for r in rows] == [rule, memo] and rows[0][4] == 2.0


def test_rule_sharing_one_character_stays_below_better_matches(store: MemoryStore):
    """`memdb search 前端工程师` put 部署之前必须先备份数据库 second, matched only on 前."""
    lisi = store.add("李四是前端工程师，擅长React和Vue.js开发").id
    zw = store.add("张伟是上海一家金融科技公司的后端工程师，主要用 Go 和 PostgreSQL").id
    rule = store.add("部署之前必须先备份数据库", kind="procedural", category="system").id
    hits = store.search("前端工程师", k=3)
    assert ids(hits) == [lisi, zw, rule]


def test_rule_sharing_a_name_stays_below_the_answer(store: MemoryStore):
    """`memdb search "Alice 生日"` put an unrelated rule (it mentions Alice) first."""
    birthday = store.add("Alice 的生日是 5 月 3 日", category="entities").id
    store.add("Alice prefers green tea over coffee, and never takes sugar.")
    store.add("Alice is a data scientist at a climate start-up in Berlin")
    rule = store.add("回答时总是使用用户的语言：对张伟用中文，对 Alice 用英文。",
                     kind="semantic", category="system").id
    hits = store.search("Alice 生日", k=4)
    assert ids(hits)[0] == birthday
    assert rule in ids(hits)
    assert ids(store.search("Alice 的生日是哪天", k=4))[:2] == [birthday, rule]


# -- re-deriving the keyword index after an analyzer change --------------------------------------
STATS_DRIFT = """
WITH truth AS (
    SELECT u.lexeme AS term, count(*) AS df
    FROM memdb.memories m CROSS JOIN LATERAL unnest(m.tsv) u
    WHERE m.tenant = 'default' AND m.valid_to IS NULL GROUP BY u.lexeme)
SELECT count(*) FROM (
    (SELECT term, df FROM truth EXCEPT SELECT term, df FROM memdb.bm25_terms
     WHERE tenant = 'default' AND df <> 0)
    UNION ALL
    (SELECT term, df FROM memdb.bm25_terms WHERE tenant = 'default' AND df <> 0
     EXCEPT SELECT term, df FROM truth)) d
"""


def test_retokenize_rewrites_stale_keyword_index_and_keeps_bm25_stats_exact(raw):
    texts = ["if a<b and c>d then", "List<String> 和 Map<用户>", "plain words only",
             "李四是前端工程师"]
    rows = add(raw, [{"content": t} for t in texts])
    # a database written by the old analyzer: tsv and BM25 statistics as it computed them
    # (triggers off for the rewrite, then the statistics rebuilt from the stale rows)
    raw.execute("SET session_replication_role = replica")
    raw.execute("""UPDATE memdb.memories SET tsv = to_tsvector('english', content),
                   doc_len = memdb.doc_length(to_tsvector('english', content))
                   WHERE content ~ '[<>]'""")
    raw.execute("DELETE FROM memdb.bm25_terms")
    raw.execute("""INSERT INTO memdb.bm25_terms (tenant, term, df)
                   SELECT m.tenant, u.lexeme, count(*) FROM memdb.memories m
                   CROSS JOIN LATERAL unnest(m.tsv) u GROUP BY 1, 2""")
    raw.execute("""UPDATE memdb.bm25_stats s SET total_len = (SELECT sum(doc_len)
                   FROM memdb.memories m WHERE m.tenant = s.tenant)""")
    raw.execute("SET session_replication_role = origin")
    assert one(raw, STATS_DRIFT) == 0
    assert "string" not in set(one(raw, "SELECT tsvector_to_array(tsv) FROM memdb.memories "
                                        "WHERE id = %s", (rows[1],)))
    versions = raw.execute("SELECT id, version FROM memdb.memories ORDER BY id").fetchall()
    history = one(raw, "SELECT count(*) FROM memdb.memory_history")

    assert one(raw, "SELECT memdb.retokenize()") == 2
    assert one(raw, """SELECT count(*) FROM memdb.memories WHERE tsv IS DISTINCT FROM
                       memdb.tokenize(content || ' ' || coalesce(search_context, ''))""") == 0
    assert one(raw, """SELECT count(*) FROM memdb.memories
                       WHERE doc_len <> memdb.doc_length(tsv)""") == 0
    assert one(raw, STATS_DRIFT) == 0
    assert one(raw, """SELECT total_len FROM memdb.bm25_stats WHERE tenant = 'default'""") == (
        one(raw, "SELECT sum(doc_len) FROM memdb.memories"))
    assert raw.execute("SELECT id, version FROM memdb.memories ORDER BY id").fetchall() == versions
    assert one(raw, "SELECT count(*) FROM memdb.memory_history") == history
    assert one(raw, "SELECT memdb.retokenize('default')") == 0
    found = raw.execute("SELECT id FROM memdb.search_bm25('default', 'String', 5)").fetchall()
    assert [r[0] for r in found] == [rows[1]]


def test_tsv_cannot_be_forged(raw):
    (mid,) = add(raw, [{"content": "Alice prefers green tea"}])
    raw.execute("UPDATE memdb.memories SET tsv = to_tsvector('simple', 'forged') WHERE id = %s",
                (mid,))
    assert one(raw, "SELECT tsv = memdb.tokenize(content || ' ') FROM memdb.memories") is True
    assert one(raw, "SELECT count(*) FROM memdb.bm25_terms WHERE term = 'forged'") == 0
