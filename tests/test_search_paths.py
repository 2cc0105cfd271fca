"""The search routes' cheaper paths return what the general ones do: BM25 scoped to a subject
whose query term is common tenant-wide (over 2,000 documents: the subject's rows are tested
instead of the GIN index's tenant-wide matches), and the vector route's one pass that counts
and ranks a filter's rows (exact up to exact_limit rows, HNSW beyond), Chinese and English."""

from __future__ import annotations

import json
import math

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from memdb import MemoryInput
from tests.pg_stats import table_reads

DIMS = 384


def _units(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, DIMS)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_bm25_scoped_to_a_subject_with_a_common_term(store, fresh_db):
    vectors = _units(2105, 1)
    items = [MemoryInput(content=f"note {i}: green tea and 绿茶 with item{i}", subject=f"s{i % 50}",
                         embedding=vectors[i]) for i in range(2100)]
    items += [MemoryInput(content=f"alice likes green tea {i} / 爱丽丝喜欢绿茶 {i}",
                          subject="alice", embedding=vectors[2100 + i]) for i in range(5)]
    store.add_many(items, batch_size=500)
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        df = conn.execute("SELECT df FROM memdb.bm25_terms WHERE term = 'tea'").fetchone()[0]
        assert df > 2000  # the subject-scan path
        for query in ("green tea", "绿茶"):
            rows = conn.execute("SELECT id, score FROM memdb.search_bm25('default', %s, 50, %s)",
                                (query, json.dumps({"subject": "alice"}))).fetchall()
            alice = {r[0] for r in conn.execute(
                "SELECT id FROM memdb.memories WHERE subject = 'alice'").fetchall()}
            assert {r[0] for r in rows} == alice
            # the same ranking as the general path (a filter memdb.matches evaluates)
            general = conn.execute(
                "SELECT id, score FROM memdb.search_bm25('default', %s, 50, %s)",
                (query, json.dumps({"subject": "alice", "status": ["active", "hypothesis"]}))
            ).fetchall()
            assert rows == general


def test_vector_route_exact_within_the_limit_and_hnsw_beyond(store, fresh_db):
    vectors = _units(60, 2)
    store.add_many([MemoryInput(content=f"memory {i} 记忆 {i}", subject="bob" if i < 30 else "eve",
                                embedding=vectors[i]) for i in range(60)])
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        register_vector(conn)
        q = vectors[7] + 0.05 * _units(1, 3)[0]
        exact = conn.execute(
            "SELECT id, distance FROM memdb.search_vector('default', %s, 5, %s)",
            (q, json.dumps({"subject": "bob"}))).fetchall()
        truth = conn.execute(
            "SELECT id, (embedding <=> %s)::float8 FROM memdb.memories WHERE subject = 'bob' "
            "ORDER BY embedding <=> %s, id LIMIT 5", (q, q)).fetchall()
        assert exact == truth
        # more rows pass the filter than exact_limit: the HNSW index, still k rows of bob's
        beyond = conn.execute(
            "SELECT id FROM memdb.search_vector('default', %s, 5, %s, NULL, 10)",
            (q, json.dumps({"subject": "bob"}))).fetchall()
        bob = {r[0] for r in conn.execute(
            "SELECT id FROM memdb.memories WHERE subject = 'bob'").fetchall()}
        assert len(beyond) == 5 and {r[0] for r in beyond} <= bob
        assert beyond[0][0] == truth[0][0]


def _bm25_reference(conn, query: str, subject: str | None, k1: float = 1.2, b: float = 0.75):
    """Okapi BM25 of every current memory holding a query term, from the stored tsvectors and
    statistics, computed here in Python (under 1,000 memories every query term picks
    candidates): [(id, score)] by score descending, then id."""
    n, total = conn.execute(
        "SELECT doc_count, total_len FROM memdb.bm25_stats WHERE tenant = 'default'").fetchone()
    avgdl = total / n
    terms = conn.execute("SELECT memdb.query_terms(%s)", (query,)).fetchone()[0]
    df = dict(conn.execute("SELECT term, df FROM memdb.bm25_terms WHERE tenant = 'default' "
                           "AND term = ANY (%s) AND df > 0", (terms,)).fetchall())
    idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
    scores = {}
    for mid, dl, lexeme, tf in conn.execute(
            "SELECT m.id, m.doc_len, u.lexeme, coalesce(array_length(u.positions, 1), 1) "
            "FROM memdb.memories m, unnest(m.tsv) u WHERE m.valid_to IS NULL "
            "AND (%s::text IS NULL OR m.subject = %s)", (subject, subject)).fetchall():
        if lexeme in idf:
            scores[mid] = scores.get(mid, 0.0) + idf[lexeme] * tf * (k1 + 1) / (
                tf + k1 * (1 - b + b * dl / avgdl))
    return sorted(scores.items(), key=lambda r: (-r[1], str(r[0])))


def test_bm25_scores_match_a_reference_computation(store, fresh_db):
    """Each candidate's score sums every query term it holds, tf from its positions, idf per
    term: a cheaper scoring query must give the same scores and order (ties by id) as this
    reference, Chinese and English, with repeated terms and one or many query terms."""
    words = ["tea", "green", "coffee", "kyoto", "matcha", "绿茶", "咖啡", "京都", "抹茶"]
    rng = np.random.default_rng(7)
    vectors = _units(300, 4)
    items = []
    for i in range(300):
        picked = [words[j] for j in rng.integers(len(words), size=int(rng.integers(1, 6)))]
        filler = " ".join(f"w{int(x)}" for x in rng.integers(40, size=int(rng.integers(0, 12))))
        items.append(MemoryInput(content=" ".join(picked) + " " + filler + f" 第{i}条",
                                 subject="alice" if i % 3 else "bob", embedding=vectors[i]))
    store.add_many(items, batch_size=100)
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        assert conn.execute("SELECT max(coalesce(array_length(u.positions, 1), 1)) "
                            "FROM memdb.memories m, unnest(m.tsv) u").fetchone()[0] > 1
        for query in ("green tea", "kyoto matcha coffee tea", "绿茶", "京都抹茶 green 咖啡"):
            for subject in (None, "alice"):
                flt = json.dumps({"subject": subject} if subject else {})
                got = conn.execute("SELECT id, score FROM memdb.search_bm25('default', %s, 40, %s)",
                                   (query, flt)).fetchall()
                want = _bm25_reference(conn, query, subject)[:40]
                assert len(got) == len(want) == 40
                assert [r[0] for r in got] == [r[0] for r in want], (query, subject)
                assert [r[1] for r in got] == pytest.approx([r[1] for r in want], rel=1e-12)


def test_search_hybrid_keeps_one_generic_plan_on_plain_postgresql(store, fresh_db):
    """memdb.search_hybrid plans its statements once (plan_cache_mode force_generic_plan, set
    by the migration on plain PostgreSQL; without it the fusion statement was planned anew on
    every call), and one session's plan serves every mix of options alike: the same rows as
    the first call of a fresh session, whatever ran before."""
    vectors = _units(80, 5)
    store.add_many([MemoryInput(content=f"green tea note {i} 绿茶笔记 {i}", subject=f"s{i % 2}",
                                embedding=vectors[i]) for i in range(80)])
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        config = conn.execute("SELECT proconfig FROM pg_proc WHERE proname = 'search_hybrid' "
                              "AND pronamespace = 'memdb'::regnamespace").fetchone()[0]
        assert "plan_cache_mode=force_generic_plan" in (config or [])
    q = vectors[3] + 0.05 * _units(1, 6)[0]
    cases = [({}, {}), ({"subject": "s1"}, {}), ({}, {"routes": ["bm25", "exact"]}),
             ({"subject": "s0"}, {"mmr_lambda": 0.5}), ({}, {"neighbors": 1}),
             ({}, {"weights": {"vector": 0}, "rrf_k": 5})]

    def run(conn, flt, opts):
        return conn.execute("SELECT id, rank, score FROM memdb.search_hybrid('default', %s, %s, 5, "
                            "%s, %s)", ("green tea 绿茶", q, json.dumps(flt), json.dumps(opts))
                            ).fetchall()

    first = {}
    for flt, opts in cases:
        with psycopg.connect(fresh_db, autocommit=True) as conn:
            register_vector(conn)
            first[json.dumps([flt, opts])] = run(conn, flt, opts)
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        register_vector(conn)
        for _ in range(3):
            for flt, opts in cases:
                rows = run(conn, flt, opts)
                assert rows and rows == first[json.dumps([flt, opts])], (flt, opts)


def test_exact_route_matches_the_whole_query_whatever_words_it_searches_by(store, fresh_db):
    """A long query searches the trigram index by its two longest words only: the rows must
    still be exactly the memories holding the whole query (case-insensitive), scored and
    ordered as before, in English and Chinese; words present but apart do not match."""
    vectors = _units(121, 8)
    texts = []
    for i in range(40):
        texts += [f"Note {i}: the Green Tea matcha latte recipe from Kyoto, 50% off_sale now",
                  f"note {i}: matcha from Kyoto, and a latte; green tea recipe later",
                  f"{i} 京都的抹茶拿铁 配方 green tea matcha latte recipe 很好"]
    texts.append("Latte latte LATTE art class")
    store.add_many([MemoryInput(content=t, subject="s" if i % 2 else "t", embedding=vectors[i])
                    for i, t in enumerate(texts)], batch_size=60)
    queries = ["green tea matcha latte recipe", "tea matcha latte recipe from kyoto",
               "GREEN   Tea Matcha", "recipe from kyoto green tea", "50% off_sale now",
               "matcha latte recipe 很好", "抹茶拿铁 配方 green", "latte latte latte",
               "the green tea", "kyoto, 50% off"]
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        rows = conn.execute("SELECT id, content, subject FROM memdb.memories").fetchall()
        for query in queries:
            q = " ".join(query.split()).lower()
            for subject in (None, "s"):
                want = sorted(((r[0], len(q) / len(r[1])) for r in rows
                               if q in r[1].lower() and subject in (None, r[2])),
                              key=lambda r: (-r[1], str(r[0])))[:50]
                flt = json.dumps({"subject": subject} if subject else {})
                got = conn.execute(
                    "SELECT id, score FROM memdb.search_exact('default', %s, 50, %s)",
                    (query, flt)).fetchall()
                assert [r[0] for r in got] == [r[0] for r in want], (query, subject)
                assert [r[1] for r in got] == pytest.approx([r[1] for r in want])
        assert len(conn.execute("SELECT * FROM memdb.search_exact('default', "
                                "'latte latte latte', 50)").fetchall()) == 1
        assert conn.execute("SELECT count(*) FROM memdb.search_exact('default', "
                            "'recipe from kyoto green tea', 50)").fetchone()[0] == 0


ROUTE_CALLS = {
    "vector": "SELECT id, distance FROM memdb.search_vector('default', %(v)s, 8, %(f)s)",
    "vector_exact_limit": "SELECT id, distance FROM memdb.search_vector('default', %(v)s, 8, %(f)s,"
                          " NULL, 5)",
    "bm25": "SELECT id, score FROM memdb.search_bm25('default', %(q)s, 8, %(f)s)",
    "exact": "SELECT id, score FROM memdb.search_exact('default', %(q)s, 8, %(f)s)",
    "neighbors": "SELECT n.* FROM memdb.search_neighbors('default', ARRAY(SELECT id FROM "
                 "memdb.memories WHERE content LIKE %(like)s ORDER BY id), ARRAY(SELECT 1.0::float8"
                 " FROM memdb.memories WHERE content LIKE %(like)s), 2, 0.5, %(f)s) n"
                 " ORDER BY n.neighbor_of, n.distance, n.id",
    "hybrid": "SELECT id, rank, score, vector_rank, bm25_rank, exact_rank FROM memdb.search_hybrid("
              "'default', %(q)s, %(v)s, 8, %(f)s, '{\"neighbors\": 1, \"temporal\": 1}')",
}


def test_routes_common_filters_give_what_the_general_path_gives(store, fresh_db):
    """The filters searches use most run static statements whose plans are kept (generic
    plans on plain PostgreSQL): the vector and BM25 routes' one subject, the neighbours' none
    or subjects; every other filter (and the exact route) a one-shot query. Adding
    include_expired false to a filter changes nothing it selects but takes the one-shot path:
    both must give the same rows, ranks and scores, call after call in one session (a kept
    plan), for every route, English and Chinese, with superseded and expired memories about."""
    vectors = _units(48, 9)
    texts = [f"Amy: green tea in Lisbon {i} / 里斯本的绿茶 {i}" for i in range(24)]
    texts += [f"Bob: the matcha latte recipe from Kyoto {i} / 京都抹茶拿铁配方 {i}"
              for i in range(24)]
    store.add_many([MemoryInput(content=t, subject=("s0", "s1", "s2")[i % 3],
                                session_id=f"c{i % 2}", embedding=vectors[i])
                    for i, t in enumerate(texts)], batch_size=48)
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        register_vector(conn)
        ids = [r[0] for r in conn.execute("SELECT id FROM memdb.memories ORDER BY id").fetchall()]
        conn.execute("UPDATE memdb.memories SET expires_at = now() - interval '1 day' "
                     "WHERE id = ANY (%s)", (ids[:6],))
        conn.execute("UPDATE memdb.memories SET valid_to = now() WHERE id = ANY (%s)",
                     (ids[6:10],))
        for name in ("search_vector", "search_bm25", "search_neighbors"):
            config = conn.execute("SELECT proconfig FROM pg_proc WHERE proname = %s "
                                  "AND pronamespace = 'memdb'::regnamespace", (name,)).fetchone()
            assert "plan_cache_mode=force_generic_plan" in (config[0] or []), name
        cases = [("green tea", "%green tea%"), ("绿茶", "%绿茶%"),
                 ("the matcha latte recipe from kyoto", "%Kyoto 1%"),
                 ("京都抹茶拿铁配方", "%配方 3%")]
        filters = [{}, {"subject": "s0"}, {"subject": ["s1"]}, {"subject": ["s0", "s2"]}]
        seen = 0
        for _ in range(3):  # the static statements' plans are kept after the first calls
            for n, (query, like) in enumerate(cases):
                v = vectors[5 * n + 1] + 0.05 * _units(1, 10 + n)[0]
                for flt in filters:
                    for route, call in ROUTE_CALLS.items():
                        got = conn.execute(call, {"q": query, "v": v, "like": like,
                                                  "f": json.dumps(flt)}).fetchall()
                        general = conn.execute(call, {
                            "q": query, "v": v, "like": like,
                            "f": json.dumps({**flt, "include_expired": False})}).fetchall()
                        assert got == general, (route, query, flt)
                        seen += bool(got)
                        got_ids = {r[0] for r in got}
                        assert not got_ids & set(ids[:10]), (route, query, flt)  # none current
        assert seen > 200  # the routes found something in most cases


def test_search_reads_use_counts_only_for_the_hotness_weight(store, fresh_db):
    """memdb.search_hybrid looks a candidate's use count up only under the hotness weight (the
    decay and importance weights never read it), one candidate at a time: as a join, its
    generic plan read the tenant's whole usage table in every search (a search as the
    application role went from 2.6 to 18 ms with 90,000 usage rows). With a hotness weight the
    counts still rank: the memory the subject used most comes first among equals, whatever
    other subjects used."""
    vectors = _units(30, 7)
    added = store.add_many([MemoryInput(content=f"tea note {i} 茶的笔记 {i}", subject="alice",
                                        embedding=vectors[i]) for i in range(30)])
    ids = [str(r.id) for r in added]
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        register_vector(conn)
        conn.execute("INSERT INTO memdb.memory_usage (tenant, memory_id, subject, use_count) "
                     "SELECT 'default', m.id, 'other' || g, 50 FROM memdb.memories m, "
                     "generate_series(1, 40) g")  # other subjects' use: not alice's
        conn.execute("INSERT INTO memdb.memory_usage (tenant, memory_id, subject, use_count) "
                     "VALUES ('default', %s, 'alice', 9)", (ids[17],))
        conn.execute("ANALYZE memdb.memory_usage")

        def search(options: dict) -> list:
            return conn.execute(
                "SELECT id FROM memdb.search_hybrid('default', 'tea note', %s, 5, %s, %s)",
                (vectors[3], json.dumps({"subject": "alice"}), json.dumps(options))).fetchall()

        for _ in range(8):  # past the custom plans: the generic plan is the one kept
            search({})
        usage = "memdb.memory_usage"
        before = table_reads(conn, usage)
        assert search({}) and search({"decay_weight": 0.5, "importance_weight": 0.5})
        assert table_reads(conn, usage) == before
        hot = search({"hotness_weight": 1, "routes": ["bm25"]})
        assert table_reads(conn, usage) > before
        assert str(hot[0][0]) == ids[17]
