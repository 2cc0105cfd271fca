"""Search edges found by the hostile trial (issue 14): text in angle brackets, queries with no
keyword terms, and re-deriving the keyword index.

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
