"""The retrieval SQL functions, called directly: tokenizer and BM25 (against a reference
implementation), the trigger-kept BM25 statistics, query sanitizing and option checks, filtered
vector search on 50,000 rows (exact and HNSW paths), MMR, decay and hotness, mark_used.

Every test uses ``raw``: an autocommit psycopg connection (pgvector registered) to a fresh
migrated database of its own. Vectors are fixed or seeded-random numpy arrays.
"""

from __future__ import annotations

import math
import random
from concurrent.futures import ThreadPoolExecutor
from uuid import UUID

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg.types.json import Jsonb
from rank_bm25 import BM25Okapi

DOC = "李四是前端工程师，擅长React和Vue.js开发"
DIMS = 384


# -- helpers ---------------------------------------------------------------------------------
def one(raw: psycopg.Connection, query: str, params: tuple | None = None):
    return raw.execute(query, params).fetchone()[0]


def add(raw: psycopg.Connection, items: list[dict], embeddings=None, space_id=None) -> list[UUID]:
    """memdb.add_memories → the ids in input order. Vectors travel in binary (%b): the text
    form costs about a millisecond per 384-d vector in Python."""
    rows = raw.execute(
        "SELECT ord, id FROM memdb.add_memories(%s, %b::vector[], %s)",
        (Jsonb(items), None if embeddings is None else list(embeddings), space_id),
    ).fetchall()
    return [r[1] for r in sorted(rows)]


def space(raw: psycopg.Connection, model: str = "fixed-3d", dims: int = 3) -> int:
    return one(raw, "SELECT memdb.ensure_embedding_space(%s, %s)", (model, dims))


def vec(*xs: float) -> np.ndarray:
    return np.asarray(xs, dtype=np.float32)


def bm25(raw: psycopg.Connection, query: str, k: int = 10, tenant: str = "default",
         **kwargs) -> list[tuple[UUID, float]]:
    named = "".join(f", p_{name} => %({name})s" for name in kwargs)
    return [tuple(r) for r in raw.execute(
        f"SELECT id, score FROM memdb.search_bm25(%(tenant)s, %(query)s, %(k)s{named})",
        {"tenant": tenant, "query": query, "k": k, **kwargs}).fetchall()]


def sqlstate_of(raw: psycopg.Connection, query: str, params: tuple | None = None) -> str | None:
    with pytest.raises(psycopg.Error) as info:
        raw.execute(query, params)
    return info.value.sqlstate


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


# -- tokenizer + BM25 ------------------------------------------------------------------------
def test_bm25_finds_chinese_and_english_keywords(raw):
    ids = add(raw, [
        {"content": DOC, "subject": "lisi"},
        {"content": "王五是后端工程师，负责数据库和Go服务", "subject": "wangwu"},
        {"content": "张三喜欢喝绿茶，周末去爬山", "subject": "zhangsan"},
        {"content": "She was running late for the React conference", "subject": "amy"},
        {"content": "He walks to work every day", "subject": "bob"},
    ])
    lisi, wangwu, _, running, _ = ids
    assert bm25(raw, "前端工程师")[0][0] == lisi
    hits = bm25(raw, "前端工程师", candidate_df_ratio=1)  # no candidate pruning
    # 工程师 is shared with wangwu, 前端 is not: lisi scores strictly higher
    assert {h[0] for h in hits} == {lisi, wangwu} and hits[0][1] > hits[1][1] > 0
    assert {h[0] for h in bm25(raw, "React")} == {lisi, running}
    assert [h[0] for h in bm25(raw, "react 开发")][0] == lisi
    # English stemming: runs ~ running, but not walks
    assert [h[0] for h in bm25(raw, "runs")] == [running]
    assert [h[0] for h in bm25(raw, "WALKING")] == [ids[4]]
    # through search_hybrid with the bm25 route alone
    rows = raw.execute(
        """SELECT id, bm25_rank, vector_rank, exact_rank FROM memdb.search_hybrid(
               'default', '前端工程师', NULL, 5, '{}', '{"routes": ["bm25"]}')""").fetchall()
    assert rows[0] == (lisi, 1, None, None)


# The corpus for the reference comparison: mixed Chinese and English, varied lengths, repeated
# terms (tf > 1), one document of only stop words (counts in N and avgdl with length 0).
CORPUS = [
    DOC,
    "王五是后端工程师，负责数据库和Go服务",
    "张三是前端开发，用React写了三年前端",
    "Database performance tuning: indexes, vacuum and query plans",
    "The database was slow, so we tuned the database and its indexes",
    "数据库性能优化：索引、执行计划和连接池",
    "数据库备份每天凌晨两点运行",
    "Python scripts run nightly to export the reports",
    "She is running the Python migration scripts again",
    "React hooks and Vue.js components: a frontend comparison",
    "北京今天天气晴朗，适合跑步",
    "上海明天有雨，记得带伞",
    "The weather in Beijing is sunny today",
    "用户喜欢绿茶，不喜欢咖啡",
    "用户的邮箱是 lisi@example.com",
    "用户在周末使用手机应用",
    "The user prefers green tea over coffee",
    "Running shoes for the Beijing marathon",
    "前端工程师面试题：React、TypeScript 和 CSS",
    "Go services talk to the database through a connection pool",
    "运行测试之前先启动数据库",
    "It is what it is",
    "Kubernetes deployment notes: pods, services, ingress",
    "会议改到周四下午三点，地点在三楼会议室",
    "Meeting moved to Thursday 3pm, third floor meeting room",
    "Vue.js 3 迁移指南",
    "The frontend engineer fixed the React rendering bug",
    "工程师 工程师 工程师 团队扩招",
    "天气 天气 天气",
    "A very long note about running, running and running again across Beijing parks",
]
QUERIES = [
    "前端工程师",
    "React 开发",
    "database performance tuning",
    "数据库 性能",
    "running python scripts",
    "北京 天气",
    "用户 喜欢 绿茶",
    "meeting Thursday 会议",
    "工程师",
    "kubernetes ingress unknownword 不存在的词",
]


class LuceneBM25(BM25Okapi):
    """rank_bm25's Okapi BM25 with the idf memdb uses: Lucene-style
    idf = ln(1 + (N - df + 0.5) / (df + 0.5)), always positive (no epsilon floor)."""

    def _calc_idf(self, nd):
        for word, df in nd.items():
            self.idf[word] = math.log(1 + (self.corpus_size - df + 0.5) / (df + 0.5))


def test_bm25_scores_and_order_equal_reference_implementation(raw):
    ids = add(raw, [{"content": text} for text in CORPUS])
    subject = one(raw, "SELECT min(subject) FROM memdb.memories")
    assert one(raw, "SELECT count(DISTINCT subject) FROM memdb.memories") == 1
    # each document's tokens as memdb sees them: lexemes of tokenize(content), repeated by
    # their position counts
    docs: list[list[str]] = []
    for mid in ids:
        rows = raw.execute(
            """SELECT u.lexeme, coalesce(array_length(u.positions, 1), 1)
               FROM memdb.memories m, unnest(memdb.tokenize(m.content)) u WHERE m.id = %s""",
            (mid,)).fetchall()
        docs.append([lexeme for lexeme, n in rows for _ in range(n)])
    assert docs[CORPUS.index("It is what it is")] == []  # only stop words
    assert len(docs[CORPUS.index("工程师 工程师 工程师 团队扩招")]) > 10
    oracle = LuceneBM25(docs, k1=1.2, b=0.75)
    assert one(raw, "SELECT doc_count FROM memdb.bm25_stats WHERE tenant = 'default'") == len(ids)
    assert one(raw, "SELECT total_len FROM memdb.bm25_stats WHERE tenant = 'default'") == sum(
        map(len, docs))

    for query in QUERIES:
        terms = one(raw, "SELECT memdb.query_terms(%s)", (query,))
        assert terms, query
        expected = dict(zip(ids, oracle.get_scores(terms), strict=True))
        expected = {mid: s for mid, s in expected.items() if s > 0}
        got = bm25(raw, query, k=100, candidate_df_ratio=1)
        assert expected, query
        assert {mid for mid, _ in got} == set(expected), query
        for mid, score in got:
            assert score == pytest.approx(expected[mid], rel=1e-6), (query, mid)
        # memdb's order is the oracle's order (up to exact ties)
        ranked = [expected[mid] for mid, _ in got]
        assert all(a >= b - 1e-9 for a, b in zip(ranked, ranked[1:], strict=False)), query
        # top-k truncation keeps the best
        top3 = bm25(raw, query, k=3, candidate_df_ratio=1)
        assert [mid for mid, _ in top3] == [mid for mid, _ in got[:3]]
        # one subject (its own, static statement) scores every row as tenant-wide, to the bit
        assert bm25(raw, query, k=100, candidate_df_ratio=1,
                    filter=Jsonb({"subject": subject})) == got, query
        # the weighted query of the same terms (weights 1: PRF's second pass) scores as BM25
        assert [tuple(r) for r in raw.execute(
            "SELECT id, score FROM memdb.search_bm25_weighted('default', %s, %s, 100)",
            (terms, [1.0] * len(terms))).fetchall()] == got, query


def test_bm25_subject_with_common_terms_scores_as_reference(raw):
    """A subject's search whose terms the tenant holds in over 2,000 memories tests the
    subject's own rows (its own statement): scores equal the reference BM25 over the whole
    tenant, for memories holding a query term once and several times, English and Chinese."""
    mine = ["alpha 天气 report", "alpha alpha 天气 天气 天气", "alpha notes about the week",
            "天气 预报 明天", "alpha alpha alpha alpha", "没有 关键词 的 记忆", "alpha 天气"]
    others = [f"alpha 天气 filler {i}" for i in range(2040)]
    ids = add(raw, [{"content": t, "subject": "me"} for t in mine]
              + [{"content": t, "subject": "other"} for t in others])
    docs = []
    for (lexemes,) in raw.execute(
            """SELECT array(SELECT u.lexeme FROM unnest(m.tsv) u,
                                generate_series(1, coalesce(array_length(u.positions, 1), 1)))
               FROM unnest(%s::uuid[]) WITH ORDINALITY AS i(id, n)
               JOIN memdb.memories m ON m.id = i.id ORDER BY i.n""", (ids,)).fetchall():
        docs.append(lexemes)
    oracle = LuceneBM25(docs, k1=1.2, b=0.75)
    for query in ("alpha", "天气", "alpha 天气 report"):
        terms = one(raw, "SELECT memdb.query_terms(%s)", (query,))
        assert one(raw, """SELECT sum(df) FROM memdb.bm25_terms
                            WHERE tenant = 'default' AND term = ANY(%s)""", (terms,)) > 2000
        expected = {mid: s for mid, s in zip(ids[:len(mine)], oracle.get_scores(terms),
                                             strict=False) if s > 0}
        got = bm25(raw, query, k=20, candidate_df_ratio=1, filter=Jsonb({"subject": "me"}))
        assert {mid for mid, _ in got} == set(expected), query
        for mid, score in got:
            assert score == pytest.approx(expected[mid], rel=1e-6), (query, mid)
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True), query


def test_bm25_candidate_pruning_only_drops_documents_without_rare_terms(raw):
    add(raw, [{"content": text} for text in CORPUS])
    full = dict(bm25(raw, "工程师 团队扩招", k=100, candidate_df_ratio=1))
    pruned = bm25(raw, "工程师 团队扩招", k=100)  # default ratio 0.3: 工 程 ... are common
    assert pruned and set(dict(pruned)) <= set(full)
    for mid, score in pruned:  # every query term present still counts in the score
        assert score == pytest.approx(full[mid], rel=1e-9)


def test_bm25_word_no_memory_holds_keeps_the_candidate_budget(raw):
    """Tenant-wide, candidates come from the rarest known query terms within 60 * k documents,
    at least the rarest one. A query word no memory holds (df 0) used to take the rarest place:
    no known term was then a candidate and every term's documents were scored (at 1M memories,
    47,000 rows instead of 3,300 for such a query)."""
    add(raw, [{"content": f"beta report about several other things {w}", "subject": f"b{i}"}
              for i, w in enumerate(["one", "two", "three"] * 50)]  # 150 with 'beta'
        + [{"content": "alpha alpha", "subject": f"a{i}"} for i in range(250)]
        + [{"content": "gamma delta epsilon", "subject": f"g{i}"} for i in range(600)])
    assert one(raw, "SELECT doc_count FROM memdb.bm25_stats WHERE tenant = 'default'") == 1000
    # k = 2: a budget of 120 documents; 'beta' (150) is the rarest known term, 'alpha' (250)
    # the other; unpruned, the short 'alpha alpha' memories rank first
    unpruned = bm25(raw, "beta alpha", k=2, candidate_df_ratio=1)
    assert [one(raw, "SELECT content FROM memdb.memories WHERE id = %s", (m,))
            for m, _ in unpruned] == ["alpha alpha"] * 2
    pruned = bm25(raw, "beta alpha", k=2)
    assert len(pruned) == 2
    for mid, _ in pruned:
        assert "beta" in one(raw, "SELECT content FROM memdb.memories WHERE id = %s", (mid,))
    # Latin words and a CJK run (its unigram and bigram) that no memory holds
    assert one(raw, "SELECT count(*) FROM memdb.bm25_terms WHERE term IN ('龘', '龘龘')") == 0
    for query in ("beta alpha zzqxv", "zzqxv beta alpha qqwxz", "beta 龘龘 alpha"):
        assert bm25(raw, query, k=2) == pruned, query
    weighted = ("SELECT id, score FROM memdb.search_bm25_weighted('default', %s, %s, 2)")
    expected = raw.execute(weighted, (["beta", "alpha"], [1.0, 1.0])).fetchall()
    assert [m for m, _ in expected] == [m for m, _ in pruned]
    assert raw.execute(weighted, (["zzqxv", "beta", "alpha"], [1.0, 1.0, 1.0])
                       ).fetchall() == expected


def test_bm25_as_of_finds_terms_only_past_memories_hold(raw):
    old, other = add(raw, [{"content": "李四住在北京 Li Si lives in Beijing"},
                           {"content": "王五住在上海 Wang Wu lives in Shanghai"}])
    before = one(raw, "SELECT clock_timestamp()")
    new = add(raw, [{"content": "李四搬到深圳了 Li Si moved to Shenzhen"}])[0]
    raw.execute("UPDATE memdb.memories SET valid_to = now(), superseded_by = %s WHERE id = %s",
                (new, old))
    # 北京 / beijing are in no current memory: df 0 today
    assert one(raw, "SELECT coalesce(max(df), 0) FROM memdb.bm25_terms WHERE term = 'beij'") == 0
    as_of = {"as_of": before.isoformat()}
    assert bm25(raw, "Beijing") == [] and bm25(raw, "北京") == []
    for query in ("Beijing", "北京", "李四 北京", "Li Si Beijing"):
        assert [m for m, _ in bm25(raw, query, filter=Jsonb(as_of))] == [old], query
    # the memory created later is not visible then; the other one still is
    assert {m for m, _ in bm25(raw, "lives 深圳", filter=Jsonb(as_of))} == {old, other}
    rows = raw.execute("SELECT id, bm25_rank FROM memdb.search_hybrid('default', '北京', NULL, 5, "
                       "%s, '{\"routes\": [\"bm25\"]}')", (Jsonb(as_of),)).fetchall()
    assert rows == [(old, 1)]
    # a tenant whose memories are all superseded or deleted now
    raw.execute("DELETE FROM memdb.memories WHERE id <> %s", (old,))
    raw.execute("UPDATE memdb.memories SET superseded_by = NULL WHERE id = %s", (old,))
    assert one(raw, "SELECT doc_count FROM memdb.bm25_stats") == 0
    assert [m for m, _ in bm25(raw, "Beijing", filter=Jsonb(as_of))] == [old]


VOCAB = ("数据库 性能 前端 工程师 天气 北京 用户 绿茶 会议 周末 React Python Go database "
         "running tuning coffee meeting engineer frontend weather tea index query").split()


def _recount_matches_stats(raw) -> None:
    stats = {t: (n, length) for t, n, length in raw.execute(
        "SELECT tenant, doc_count, total_len FROM memdb.bm25_stats").fetchall()}
    truth = {t: (n, length) for t, n, length in raw.execute(
        """SELECT tenant, count(*), sum(memdb.doc_length(tsv)) FROM memdb.memories
           WHERE valid_to IS NULL GROUP BY tenant""").fetchall()}
    assert {t: v for t, v in stats.items() if v != (0, 0)} == truth
    terms = {(t, term): df for t, term, df in raw.execute(
        "SELECT tenant, term, df FROM memdb.bm25_terms").fetchall()}
    assert min(terms.values(), default=0) >= 0
    truth_terms = {(t, term): df for t, term, df in raw.execute(
        """SELECT m.tenant, u.lexeme, count(*) FROM memdb.memories m, unnest(m.tsv) u
           WHERE m.valid_to IS NULL GROUP BY 1, 2""").fetchall()}
    assert {k: df for k, df in terms.items() if df != 0} == truth_terms


def test_bm25_statistics_stay_exact_under_every_kind_of_write(raw):
    rng = random.Random(2024)
    counter = iter(range(10**6))

    def text() -> str:
        words = rng.choices(VOCAB, k=rng.randint(1, 7))
        return " ".join(words) + f" 记录{next(counter)}"

    def current(tenant: str | None = None) -> list[UUID]:
        return [r[0] for r in raw.execute(
            """SELECT id FROM memdb.memories WHERE valid_to IS NULL
               AND (%(t)s::text IS NULL OR tenant = %(t)s) ORDER BY id""", {"t": tenant})]

    def any_row() -> list[UUID]:
        return [r[0] for r in raw.execute("SELECT id FROM memdb.memories ORDER BY id")]

    tenants = ["t1", "t2"]
    add(raw, [{"content": text(), "tenant": rng.choice(tenants)} for _ in range(20)])
    _recount_matches_stats(raw)
    ops = ["insert", "dedup", "update", "context", "noop", "multi_update", "supersede",
           "delete", "multi_delete", "purge", "rollback", "move_tenant", "restore"]
    done = set()
    for step in range(80):
        op = ops[step] if step < len(ops) else rng.choice(ops)
        rows = current()
        if not rows:
            op = "insert"
        if op == "insert":
            add(raw, [{"content": text(), "tenant": rng.choice(tenants)}
                      for _ in range(rng.randint(1, 4))])
        elif op == "dedup":  # same content again: ON CONFLICT DO UPDATE bumps the old row
            tenant, content, subject = raw.execute(
                "SELECT tenant, content, subject FROM memdb.memories WHERE id = %s",
                (rng.choice(rows),)).fetchone()
            add(raw, [{"content": content.upper(), "tenant": tenant, "subject": subject},
                      {"content": text(), "tenant": tenant}])
        elif op == "update":
            tenant = one(raw, "SELECT tenant FROM memdb.memories WHERE id = %s", (rows[0],))
            mid = rng.choice(current(tenant))
            assert one(raw, "SELECT memdb.update_memory(%s, %s, %s)",
                       (tenant, mid, Jsonb({"content": text()}))) == mid
        elif op == "context":
            raw.execute("UPDATE memdb.memories SET search_context = %s WHERE id = %s",
                        (text(), rng.choice(rows)))
        elif op == "noop":  # neither text nor validity changes
            raw.execute("UPDATE memdb.memories SET importance = 0.9 WHERE id = ANY(%s)",
                        (rng.sample(rows, min(3, len(rows))),))
        elif op == "multi_update":
            for mid in rng.sample(rows, min(3, len(rows))):
                raw.execute("UPDATE memdb.memories SET content = %s WHERE id = %s", (text(), mid))
            raw.execute("UPDATE memdb.memories SET content = content || ' extra 补充' "
                        "WHERE id = ANY(%s)", (rng.sample(rows, min(4, len(rows))),))
        elif op == "supersede":
            old = rng.choice(rows)
            tenant = one(raw, "SELECT tenant FROM memdb.memories WHERE id = %s", (old,))
            new = add(raw, [{"content": text(), "tenant": tenant}])[0]
            raw.execute("UPDATE memdb.memories SET valid_to = now(), superseded_by = %s "
                        "WHERE id = %s", (new, old))
        elif op == "delete":  # current or superseded rows alike
            mid = rng.choice(any_row())
            tenant = one(raw, "SELECT tenant FROM memdb.memories WHERE id = %s", (mid,))
            assert one(raw, "SELECT memdb.delete_memory(%s, %s)", (tenant, mid)) is True
        elif op == "multi_delete":
            raw.execute("DELETE FROM memdb.memories WHERE id = ANY(%s)",
                        (rng.sample(any_row(), min(3, len(any_row()))),))
        elif op == "purge":
            raw.execute("UPDATE memdb.memories SET expires_at = now() - interval '1 second' "
                        "WHERE id = ANY(%s)", (rng.sample(any_row(), min(3, len(any_row()))),))
            raw.execute("SELECT memdb.purge_expired(%s)", (rng.choice(tenants),))
            raw.execute("SELECT memdb.purge_expired()")
            assert one(raw, "SELECT count(*) FROM memdb.memories WHERE expires_at <= now()") == 0
        elif op == "rollback":
            with pytest.raises(psycopg.errors.RaiseException):
                with raw.transaction():
                    add(raw, [{"content": text(), "tenant": "t1"}])
                    raw.execute("DELETE FROM memdb.memories WHERE id = %s", (rows[0],))
                    raw.execute("DO $$ BEGIN RAISE EXCEPTION 'roll back'; END $$")
        elif op == "move_tenant":  # only a row no other row references (keys hold the tenant)
            free = [r[0] for r in raw.execute(
                "SELECT m.id FROM memdb.memories m WHERE m.id = ANY(%s) AND m.superseded_by IS NULL"
                " AND NOT EXISTS (SELECT 1 FROM memdb.memories o WHERE o.superseded_by = m.id)"
                " ORDER BY m.id", (rows,))]
            if free:
                raw.execute("UPDATE memdb.memories SET tenant = CASE tenant WHEN 't1' THEN 't2' "
                            "ELSE 't1' END WHERE id = %s", (rng.choice(free),))
        elif op == "restore":  # a superseded row made current again
            old = raw.execute(
                "SELECT id FROM memdb.memories WHERE valid_to IS NOT NULL LIMIT 1").fetchone()
            if old is not None:
                raw.execute("UPDATE memdb.memories SET valid_to = NULL, superseded_by = NULL "
                            "WHERE id = %s", old)
        done.add(op)
        _recount_matches_stats(raw)
    assert done == set(ops)
    # and the statistics are what search_bm25 scores with: one tenant's search sees only it
    # (the random walk may have left t1 without current rows: give it one)
    add(raw, [{"content": " ".join(VOCAB[:4]), "tenant": "t1"}])
    raw.execute("DELETE FROM memdb.memories WHERE tenant = 't2'")
    _recount_matches_stats(raw)
    assert one(raw, "SELECT doc_count FROM memdb.bm25_stats WHERE tenant = 't2'") == 0
    assert bm25(raw, " ".join(VOCAB), tenant="t2") == []
    assert len(bm25(raw, " ".join(VOCAB), tenant="t1")) > 0


# -- hostile and empty queries ---------------------------------------------------------------
HOSTILE = [
    "C++ & Rust", "rust | go", "!rust", "rust:*", "'rust'", '"rust"', "rust <-> go",
    "rust <2> go", "'; drop table memdb.memories; --", "\\", "back\\slash\\", "''", "(rust",
    "rust & !(go | python)):*", "前端 & 工程师 | !React", "100%", "a_b", "%", "$1", "\\x00",
    "E'\\\\'", "rust:A", "rust:*B", "'' || pg_sleep(0) || ''",
]


def test_hostile_queries_are_plain_text(raw):
    ids = add(raw, [
        {"content": "Rust and Go are both compiled"},
        {"content": "A rustacean writes Rust"},
        {"content": "The discount is 100% off"},
        {"content": "Just 1000 items"},
        {"content": "variable a_b holds the value"},
        {"content": "variable axb holds nothing"},
        {"content": DOC},
    ])
    before = one(raw, "SELECT count(*) FROM memdb.memories")
    for q in HOSTILE:
        # whatever the terms hold, they become a valid OR query of literal lexemes
        raw.execute("SELECT memdb.terms_tsquery(memdb.query_terms(%s))::text", (q,))
        bm25(raw, q, k=5)
        raw.execute("SELECT * FROM memdb.search_exact('default', %s, 5)", (q,)).fetchall()
        raw.execute("""SELECT * FROM memdb.search_hybrid('default', %s, NULL, 5, '{}',
                       '{"routes": ["bm25", "exact"]}')""", (q,)).fetchall()
    assert one(raw, "SELECT count(*) FROM memdb.memories") == before
    # operators are not applied: '!rust' still finds rust, 'rust:*' is not a prefix query
    rust_docs = {ids[0], ids[1]}
    assert {m for m, _ in bm25(raw, "!rust")} == rust_docs
    assert {m for m, _ in bm25(raw, "rust:*")} == rust_docs
    assert {m for m, _ in bm25(raw, "rustac:*")} == set()
    assert {m for m, _ in bm25(raw, "rust <-> go")} == rust_docs
    assert {m for m, _ in bm25(raw, "前端 & 工程师 | !React")} == {ids[6]}
    # the exact route treats LIKE wildcards literally
    def exact(q: str) -> list[UUID]:
        return [r[0] for r in raw.execute(
            "SELECT id FROM memdb.search_exact('default', %s, 10)", (q,)).fetchall()]

    assert exact("100%") == [ids[2]]
    assert exact("a_b") == [ids[4]]
    assert exact("%") == [ids[2]] and exact("__") == []  # one symbol is searched, literally
    # a term with quotes and backslashes survives terms_tsquery as one literal lexeme
    assert one(raw, r"SELECT memdb.terms_tsquery(ARRAY['it''s', 'a\b', 'x y'])::text") == (
        r"'it''s' | 'a\\b' | 'x y'")


NO_TERMS = ["", "   ", "!!!", "，。！？、", "...---***", "the of and", "The a an is are was",
            "It is what it is", "「」【】《》", "\t\n"]


def test_queries_without_terms_find_nothing_by_keyword(raw):
    """No keyword terms: BM25 finds nothing; a blank query finds nothing at all, any other
    still runs the vector (and exact) routes."""
    sid = space(raw)
    add(raw, [{"content": "the of and it is"}, {"content": DOC}], [vec(1, 0, 0), vec(0, 1, 0)], sid)
    for query in NO_TERMS:
        assert one(raw, "SELECT memdb.query_terms(%s)", (query,)) == [], query
        assert bm25(raw, query) == [], query
        rows = raw.execute("SELECT bm25_rank, vector_rank FROM memdb.search_hybrid("
                           "'default', %s, %s, 5)", (query, vec(1, 0, 0))).fetchall()
        if query.strip():
            assert [r[1] for r in rows] == [1, 2] and {r[0] for r in rows} == {None}, query
        else:
            assert rows == [], query
    # NULL query = search by the vector alone
    assert len(raw.execute("SELECT * FROM memdb.search_hybrid('default', NULL, %s, 5)",
                           (vec(1, 0, 0),)).fetchall()) == 2


BAD_CALLS = [
    ("SELECT * FROM memdb.search_hybrid('default', 'x', NULL, 0)", None),
    ("SELECT * FROM memdb.search_hybrid('default', 'x', NULL, -3)", None),
    ("SELECT * FROM memdb.search_hybrid('default', 'x', NULL, 1001)", None),
    ("SELECT * FROM memdb.search_hybrid('default', 'x', NULL, 5, '{}', %s)",
     (Jsonb({"weights": {"bm25": -0.5}}),)),
    ("SELECT * FROM memdb.search_hybrid('default', 'x', NULL, 5, '{}', %s)",
     (Jsonb({"weights": {"graph": 1}}),)),
    ("SELECT * FROM memdb.search_hybrid('default', 'x', NULL, 5, '{}', %s)",
     (Jsonb({"weights": {"bm25": "1"}}),)),
    ("SELECT * FROM memdb.search_hybrid('default', 'x', NULL, 5, '{}', %s)",
     (Jsonb({"mmr_lambda": 1.5}),)),
    ("SELECT * FROM memdb.search_hybrid('default', 'x', NULL, 5, '{}', %s)",
     (Jsonb({"mmr_lambda": -0.1}),)),
    ("SELECT * FROM memdb.search_hybrid('default', 'x', NULL, 5, '{}', %s)",
     (Jsonb({"routes": ["graph"]}),)),
    ("SELECT * FROM memdb.search_hybrid('default', 'x', NULL, 5, '{}', %s)",
     (Jsonb({"routes": []}),)),
    ("SELECT * FROM memdb.search_hybrid('default', 'x', NULL, 5, '{}', %s)",
     (Jsonb({"routes": ["vector"]}),)),  # the vector route without a query vector
    ("SELECT * FROM memdb.search_hybrid('default', 'x', NULL, 5, '{}', %s)",
     (Jsonb({"hotness_weight": 2}),)),
    ("SELECT * FROM memdb.search_hybrid('default', 'x', NULL, 5, '{}', %s)",
     (Jsonb({"no_such_option": 1}),)),
    ("SELECT * FROM memdb.search_hybrid('default', 'x', NULL, 5, '{\"nope\": 1}')", None),
    ("SELECT * FROM memdb.search_bm25('default', 'x', 0)", None),
    ("SELECT * FROM memdb.search_bm25('default', 'x', 5, '{}', -1)", None),
    ("SELECT * FROM memdb.search_bm25('default', 'x', 5, '{}', 1.2, 1.5)", None),
    ("SELECT * FROM memdb.search_exact('default', 'x', 0)", None),
    ("SELECT * FROM memdb.mmr(ARRAY[gen_random_uuid()], ARRAY[1.0::float8], 1, 1.01)", None),
    ("SELECT * FROM memdb.mmr(ARRAY[gen_random_uuid()], ARRAY[1.0::float8, 2], 1, 0.5)", None),
]


def test_bad_arguments_raise_22023(raw):
    for call, params in BAD_CALLS:
        assert sqlstate_of(raw, call, params) == "22023", (call, params)


# -- filtered vector search at 50,000 rows -----------------------------------------------------
def _index_scans(raw, index: str) -> int:
    return one(raw, "SELECT pg_stat_get_xact_numscans(%s::regclass)", (index,))


def test_search_vector_50k_rows_filtered_exact_and_hnsw(raw, fresh_db):
    """50,000 unit vectors of 384 dims; 1% of them (500) share a subject, another 1% a
    metadata value. The data is random but, like real embeddings, of low intrinsic dimension
    (random points of a 24-d subspace plus noise): on uniform noise in 384 dims any graph
    index, HNSW included, has near-zero recall because all distances are alike."""
    n, batch = 50_000, 5_000
    rng = np.random.default_rng(50_000)
    basis = rng.normal(size=(24, DIMS))
    data = unit_rows(rng.normal(size=(n, 24)) @ basis + 0.3 * rng.normal(size=(n, DIMS)))
    subject = np.arange(n) % 100
    bucket = (np.arange(n) * 7 + 3) % 100
    sid = space(raw, "random-384", DIMS)
    index = f"memdb.memories_hnsw_space_{sid}"
    # bulk load without the HNSW index (memdb.hnsw_min_rows above the load: no write builds
    # it), then build it in one go: one (parallel) build is several times faster than 50,000
    # incremental inserts
    assert one(raw, "SELECT to_regclass(%s)", (index,)) is None

    def load(starts: list[int]) -> dict[int, list[UUID]]:
        with psycopg.connect(fresh_db, autocommit=True) as conn:
            register_vector(conn)
            conn.execute("SET synchronous_commit = off")
            conn.execute("SET memdb.hnsw_min_rows = 1000000")
            out = {}
            for start in starts:
                items = [{"content": f"记录 row {i}", "subject": f"s{subject[i]}",
                          "metadata": {"bucket": int(bucket[i])}}
                         for i in range(start, start + batch)]
                out[start] = add(conn, items, data[start:start + batch], sid)
            return out

    starts = list(range(0, n, batch))
    with ThreadPoolExecutor(2) as pool:  # two writers: one per core
        loaded = {k: v for part in pool.map(load, [starts[0::2], starts[1::2]])
                  for k, v in part.items()}
    ids = [mid for start in starts for mid in loaded[start]]
    assert len(set(ids)) == n
    raw.execute("SET maintenance_work_mem = '512MB'")
    raw.execute("SET max_parallel_maintenance_workers = 2")
    assert one(raw, "SELECT to_regclass(%s)", (index,)) is None
    assert one(raw, "SELECT memdb.ensure_vector_index(%s, true)", (sid,)) is True
    raw.execute("ANALYZE memdb.memories")
    ids_arr = np.array(ids, dtype=object)
    queries = unit_rows(rng.normal(size=(5, 24)) @ basis + 0.3 * rng.normal(size=(5, DIMS)))

    def search(q, flt, exact_limit=None):
        extra = "" if exact_limit is None else f", {exact_limit}"
        with raw.transaction():
            rows = raw.execute(
                f"SELECT id, distance FROM memdb.search_vector('default', %s, 10, %s, NULL{extra})",
                (q, Jsonb(flt))).fetchall()
            return rows, _index_scans(raw, index)

    def truth(q, mask):
        sims = data[mask] @ q
        order = np.argsort(-sims)[:10]
        return list(ids_arr[mask][order]), 1 - sims[order]

    for flt, mask in [({"subject": "s7"}, subject == 7),
                      ({"metadata": {"bucket": 42}}, bucket == 42)]:
        assert mask.sum() == 500
        for q in queries[:3]:
            # <= p_exact_limit rows pass: an exact scan, the true top 10, no HNSW scan
            rows, scans = search(q, flt)
            want_ids, want_dist = truth(q, mask)
            assert [r[0] for r in rows] == want_ids
            assert [r[1] for r in rows] == pytest.approx(want_dist, abs=1e-5)
            assert scans == 0
            # forced through HNSW (iterative scan): still 10 rows, all inside the filter
            rows, scans = search(q, flt, exact_limit=0)
            assert len(rows) == 10
            assert {r[0] for r in rows} <= set(ids_arr[mask])
            assert len({r[0] for r in rows} & set(want_ids)) >= 7
    # the whole tenant (50,000 > exact limit): HNSW, recall >= 0.9 against numpy
    recalls = []
    everything = np.ones(n, dtype=bool)
    for q in queries:
        for exact_limit in (None, 0):
            rows, scans = search(q, {}, exact_limit)
            want_ids, _ = truth(q, everything)
            assert scans >= 1 and len(rows) == 10
            distances = [r[1] for r in rows]
            assert distances == sorted(distances)
            recalls.append(len({r[0] for r in rows} & set(want_ids)) / 10)
    assert min(recalls) >= 0.9, recalls


# -- MMR -------------------------------------------------------------------------------------
def test_mmr_reproduces_hand_computed_greedy_order(raw):
    sid = space(raw)
    a, b, c, d, e = add(raw, [{"content": x} for x in "ABCDE"],
                        [vec(1, 0, 0), vec(0.99, 0.14, 0), vec(0, 1, 0), vec(0, 0, 1), None], sid)
    # relevance is scaled by its maximum (2.0): A 1, B 0.95, C 0.6, D 0.3, E 0.25;
    # E has no embedding, so it is similar to nothing
    ids = [a, b, c, d, e]
    relevance = [2.0, 1.9, 1.2, 0.6, 0.5]
    cos_ab = 0.99 / math.sqrt(0.99**2 + 0.14**2)
    # lambda 0.5: pick A (0.5); B is now 0.475 - 0.5 * cos(A, B) < 0 while C (0.3),
    # D (0.15), E (0.125) are unpenalized (C and D are orthogonal to A and to each other)
    rows = raw.execute("SELECT id, pick, mmr_score FROM memdb.mmr(%s, %s, 5, 0.5)",
                       (ids, relevance)).fetchall()
    assert [r[0] for r in rows] == [a, c, d, e, b]
    assert [r[1] for r in rows] == [1, 2, 3, 4, 5]
    assert [r[2] for r in rows] == pytest.approx(
        [0.5, 0.3, 0.15, 0.125, 0.5 * 0.95 - 0.5 * cos_ab], abs=1e-6)
    # lambda 1: plain relevance order; k cuts the list
    rows = raw.execute("SELECT id FROM memdb.mmr(%s, %s, 3, 1.0)", (ids, relevance)).fetchall()
    assert [r[0] for r in rows] == [a, b, c]
    # lambda 0.9: B's penalty (0.1 * 0.99) is smaller than its lead over C (0.9 * 0.35)
    rows = raw.execute("SELECT id FROM memdb.mmr(%s, %s, 5, 0.9)", (ids, relevance)).fetchall()
    assert [r[0] for r in rows] == [a, b, c, d, e]
    # lambda 0.7 (the default): A, then C (0.42) beats B (0.665 - 0.3 * 0.99 = 0.368)
    rows = raw.execute("SELECT id FROM memdb.mmr(%s, %s, 2)", (ids, relevance)).fetchall()
    assert [r[0] for r in rows] == [a, c]
    assert raw.execute("SELECT * FROM memdb.mmr('{}', '{}', 3)").fetchall() == []


# -- decay, hotness, multiplier, mark_used --------------------------------------------------------
HOTNESS = [
    ("0, 0", 1.0),
    ("10, 0", 1.5),
    ("40, 0", 1.5),                        # capped at +50%
    ("4, 73", 1.2 * (1 - 73 / 365)),      # 1.2 * 0.8 = 0.96
    ("2, 1000", 1.1 * 0.3),               # age floor 0.3
    ("0, 255.5", 0.3),
    ("3, 36.5, 2", 2 * 1.15 * 0.9),
    ("-5, -10", 1.0),                      # negatives clamp to 0
    ("NULL, NULL", 1.0),
]
TIME_DECAY = [
    ("0", 1.0), ("90", 0.5), ("180", 0.25), ("45", 2 ** -0.5), ("30, 30", 0.5),
    ("365, 365", 0.5), ("10, 5", 0.25), ("-7", 1.0), ("NULL", 1.0),
]


def test_hotness_and_time_decay_values(raw):
    for args, expected in HOTNESS:
        assert one(raw, f"SELECT memdb.hotness({args})") == pytest.approx(expected, rel=1e-12), args
    for args, expected in TIME_DECAY:
        assert one(raw, f"SELECT memdb.time_decay({args})") == pytest.approx(
            expected, rel=1e-12), args


def test_score_multiplier(raw):
    def mult(category, importance, uses, age, options):
        return one(raw, "SELECT memdb.score_multiplier(%s, %s::real, %s, %s, %s)",
                   (category, importance, uses, age, Jsonb(options)))

    everything = {"decay_weight": 1, "hotness_weight": 1, "importance_weight": 1}
    # defaults (all weights 0): 1 whatever the memory
    assert mult("general", 0.1, 0, 1000.0, {}) == 1.0
    assert mult("events", 0.9, 50, 0.0, {"half_life_days": 3}) == 1.0
    # 'system' never fades
    assert mult("system", 0.1, 0, 1000.0, everything) == 1.0
    # full weights: time_decay * hotness * (0.5 + importance)
    assert mult("general", 0.1, 0, 1000.0, everything) == pytest.approx(
        0.5 ** (1000 / 90) * 0.3 * 0.6, rel=1e-6)
    # partial weights, by hand: decay 0.5 of 0.5 -> 0.75; hotness 1 of 1.2 * (1 - 10/365);
    # importance 0.5 of 1.4 -> 1.2
    assert mult("preferences", 0.9, 4, 10.0, {"decay_weight": 0.5, "half_life_days": 10,
                                               "hotness_weight": 1, "importance_weight": 0.5}
                ) == pytest.approx(0.75 * 1.2 * (1 - 10 / 365) * 1.2, rel=1e-6)


def test_mark_used_counts_per_subject_and_ignores_others(raw):
    a, b = add(raw, [{"content": "alice likes tea", "subject": "alice"},
                     {"content": "bob likes coffee", "subject": "bob"}])
    other = add(raw, [{"content": "tenant two", "tenant": "t2"}])[0]

    def usage():
        return sorted((str(m), s, n) for m, s, n in raw.execute(
            "SELECT memory_id, subject, use_count FROM memdb.memory_usage").fetchall())

    # searching never counts as use
    raw.execute("SELECT * FROM memdb.search_hybrid('default', 'tea coffee', NULL, 5)").fetchall()
    assert usage() == []
    assert one(raw, "SELECT memdb.mark_used('default', %s)", ([a, b],)) == 2
    assert one(raw, "SELECT memdb.mark_used('default', %s)", ([a, other, UUID(int=7)],)) == 1
    assert one(raw, "SELECT memdb.mark_used('default', %s, 'agent-x')", ([b],)) == 1
    assert usage() == sorted([(str(a), "alice", 2), (str(b), "bob", 1), (str(b), "agent-x", 1)])
    assert one(raw, "SELECT memdb.mark_used('default', '{}')") == 0
