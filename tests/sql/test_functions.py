"""The SQL functions of sql/functions/, called directly (no Python DAL) with fixed small vectors.

Every test uses the ``raw`` fixture: a plain autocommit psycopg connection (pgvector registered)
to a fresh migrated database of its own.
"""

from __future__ import annotations

import hashlib
import unicodedata
from uuid import UUID

import numpy as np
import psycopg
import pytest
from psycopg.types.json import Jsonb

DOC = "李四是前端工程师，擅长React和Vue.js开发"


@pytest.fixture(scope="module")
def pure(module_db):
    """One migrated database shared by this module's read-only tests of pure functions
    (creating a database per test costs more than such a test itself)."""
    with psycopg.connect(module_db, autocommit=True) as conn:
        yield conn


# -- helpers ---------------------------------------------------------------------------------
def one(raw: psycopg.Connection, query: str, params: tuple | None = None):
    return raw.execute(query, params).fetchone()[0]


def add(raw: psycopg.Connection, items: list[dict], embeddings=None, space_id=None):
    """memdb.add_memories → [(ord, id, created)] as returned (in the function's order)."""
    return raw.execute(
        "SELECT ord, id, created FROM memdb.add_memories(%s, %s, %s)",
        (Jsonb(items), embeddings, space_id),
    ).fetchall()


def space(raw: psycopg.Connection, model: str = "fixed-3d", dims: int = 3) -> int:
    return one(raw, "SELECT memdb.ensure_embedding_space(%s, %s)", (model, dims))


def vec(*xs: float) -> np.ndarray:
    return np.asarray(xs, dtype=np.float32)


def counts(raw: psycopg.Connection) -> tuple[int, int]:
    return raw.execute(
        "SELECT (SELECT count(*) FROM memdb.memories), (SELECT count(*) FROM memdb.memory_history)"
    ).fetchone()


def lexemes(raw: psycopg.Connection, text: str) -> set[str]:
    return set(one(raw, "SELECT tsvector_to_array(memdb.tokenize(%s))", (text,)))


def sqlstate_of(raw: psycopg.Connection, query: str, params: tuple | None = None) -> str | None:
    with pytest.raises(psycopg.Error) as info:
        raw.execute(query, params)
    return info.value.sqlstate


# -- normalize_text / content_hash -----------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  Alice   likes\tGREEN\n tea  ", "alice likes green tea"),
        ("Ｒｅａｃｔ　和　Ｖｕｅ", "react 和 vue"),  # full-width letters and ideographic space
        ("李四是前端工程师", "李四是前端工程师"),
        ("ﬁle №５", "file no5"),  # NFKC compatibility forms
    ],
)
def test_normalize_text(pure, text, expected):
    assert one(pure, "SELECT memdb.normalize_text(%s)", (text,)) == expected


def test_normalize_text_is_strict(pure):
    assert one(pure, "SELECT memdb.normalize_text(NULL)") is None
    assert one(pure, "SELECT memdb.content_hash(NULL)") is None


def test_content_hash_equal_for_case_whitespace_and_width_variants(pure):
    variants = ["I love React", "  i   LOVE react ", "Ｉ ｌｏｖｅ Ｒｅａｃｔ", "i\tlove\nreact"]
    hashes = {bytes(one(pure, "SELECT memdb.content_hash(%s)", (t,))) for t in variants}
    assert len(hashes) == 1
    expected = hashlib.sha256(b"i love react").digest()
    assert hashes == {expected}
    other = bytes(one(pure, "SELECT memdb.content_hash(%s)", ("I love Vue",)))
    assert other != expected


def test_content_hash_matches_python_nfkc(pure):
    text = "Ｔｅａ　ｔｉｍｅ 下午茶"
    py = " ".join(unicodedata.normalize("NFKC", text).lower().split())
    assert bytes(one(pure, "SELECT memdb.content_hash(%s)", (text,))) == hashlib.sha256(
        py.encode()
    ).digest()


# -- tokenize ----------------------------------------------------------------------------------
def test_tokenize_chinese_query_tokens_all_in_document(pure):
    query = lexemes(pure, "前端工程师")
    doc = lexemes(pure, DOC)
    assert {"前端", "端工", "工程", "程师"} <= query
    assert query <= doc
    assert one(pure, "SELECT memdb.tokenize(%s) @@ %s::tsquery", (DOC, "前端 & 工程 & 程师"))
    # English words inside Chinese text are analyzed too
    assert {"react", "vue.js"} & doc
    assert "react" in doc


def test_tokenize_cjk_ngrams(pure):
    ngrams = one(pure, "SELECT memdb.cjk_ngrams('前端工程师')")
    assert ngrams == "前 前端 端 端工 工 工程 程 程师 师"
    assert one(pure, "SELECT memdb.cjk_ngrams('猫')") == "猫"


def test_tokenize_english_stemming_and_stop_words(pure):
    lex = lexemes(pure, "The dogs were running in the park")
    assert "run" in lex and "running" not in lex
    assert "dog" in lex
    assert "the" not in lex and "were" not in lex and "in" not in lex
    # a query stems the same way, so it matches the stored vector
    assert one(
        pure, "SELECT memdb.tokenize('running dogs') @@ plainto_tsquery('english', 'run dog')"
    )


def test_tokenize_full_width_latin(pure):
    assert "react" in lexemes(pure, "擅长Ｒｅａｃｔ")


def test_tokenize_keeps_term_frequency(pure):
    tsv = one(pure, "SELECT memdb.tokenize('apple apple apple pear')::text")
    assert "'appl':1,2,3" in tsv


# -- jtext_array / check_filter -----------------------------------------------------------------
def test_jtext_array(pure):
    assert one(pure, """SELECT memdb.jtext_array('"a"')""") == ["a"]
    assert one(pure, """SELECT memdb.jtext_array('["a", "b"]')""") == ["a", "b"]


BAD_FILTERS = [
    '{"bogus": 1}',
    '{"subject": 5}',
    '{"subject": []}',
    '{"kind": [1]}',
    '{"created_after": "yesterday-ish"}',
    '{"created_after": 5}',
    '{"min_importance": 1.5}',
    '{"min_importance": "high"}',
    '{"metadata": [1]}',
    '{"include_expired": "yes"}',
    '[1, 2]',
]


def test_list_memories_bad_filter_raises_22023(raw):
    query = "SELECT * FROM memdb.list_memories('default', %s::jsonb)"
    for bad in BAD_FILTERS:  # even on an empty table the filter is checked
        assert sqlstate_of(raw, query, (bad,)) == "22023", bad
    add(raw, [{"content": "something"}])
    for bad in BAD_FILTERS:
        assert sqlstate_of(raw, query, (bad,)) == "22023", bad


def test_list_memories_bad_filter_literal(pure):
    assert (
        sqlstate_of(pure, """SELECT * FROM memdb.list_memories('default', '{"bogus": 1}')""")
        == "22023"
    )


# -- ensure_embedding_space ----------------------------------------------------------------------
def test_ensure_embedding_space_idempotent_and_indexed_on_demand(raw):
    hnsw = "SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'memories_hnsw_space_%%'"
    sid = space(raw, "fixed-3d", 3)
    assert space(raw, "fixed-3d", 3) == sid
    assert one(raw, "SELECT count(*) FROM memdb.embedding_spaces") == 1
    # an empty database: no search could use an HNSW index, so none is kept up to date yet
    assert one(raw, hnsw) == 0
    assert one(raw, "SELECT memdb.ensure_vector_index(%s)", (sid,)) is False
    # the admin builds it now (memdb.ensure_vector_index's p_force)
    assert one(raw, "SELECT memdb.ensure_vector_index(%s, true)", (sid,)) is True
    index = one(
        raw,
        "SELECT indexdef FROM pg_indexes WHERE schemaname = 'memdb' AND indexname = %s",
        (f"memories_hnsw_space_{sid}",),
    )
    assert "hnsw" in index and "vector_cosine_ops" in index and "vector(3)" in index
    assert f"WHERE (space_id = {sid})" in index
    # with memdb.hnsw_min_rows = 0 a space's index is built when the space is registered
    raw.execute("SET memdb.hnsw_min_rows = 0")
    other = space(raw, "fixed-5d", 5)
    assert other != sid
    assert one(raw, hnsw) == 2


def test_ensure_embedding_space_other_dims_same_model_md001(raw):
    space(raw, "fixed-3d", 3)
    assert sqlstate_of(raw, "SELECT memdb.ensure_embedding_space('fixed-3d', 4)") == "MD001"
    assert one(raw, "SELECT dims FROM memdb.embedding_spaces WHERE model = 'fixed-3d'") == 3


def test_ensure_embedding_space_rejects_bad_args(raw):
    for args in ("'', 3", "NULL, 3", "'m', 0", "'m', 2001", "'m', NULL"):
        assert sqlstate_of(raw, f"SELECT memdb.ensure_embedding_space({args})") == "22023", args
    assert one(raw, "SELECT count(*) FROM memdb.embedding_spaces") == 0


# -- add_memories ---------------------------------------------------------------------------------
def test_add_memories_returns_ord_order_and_dedups_in_batch(raw):
    items = [
        {"content": "Alice likes green tea", "subject": "alice"},
        {"content": "Bob plays chess", "subject": "bob"},
        {"content": "  ALICE likes   green TEA ", "subject": "alice"},  # dup of 1
        {"content": "李四是前端工程师", "subject": "lisi"},
        {"content": "Alice likes green tea", "subject": "bob"},  # other subject: new
        {"content": "Ａｌｉｃｅ likes green tea", "subject": "alice"},  # dup of 1 (full width)
    ]
    rows = add(raw, items)
    assert [r[0] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert [r[2] for r in rows] == [True, True, False, True, True, False]
    assert rows[0][1] == rows[2][1] == rows[5][1]
    assert len({r[1] for r in rows}) == 4
    assert one(raw, "SELECT count(*) FROM memdb.memories") == 4
    # in-batch duplicates do not bump
    assert one(raw, "SELECT access_count FROM memdb.memories WHERE id = %s", (rows[0][1],)) == 0
    # the first occurrence's text is stored
    assert one(raw, "SELECT content FROM memdb.memories WHERE id = %s", (rows[0][1],)) == (
        "Alice likes green tea"
    )


def test_add_memories_dedup_against_existing_rows(raw):
    [(_, first, created)] = add(
        raw, [{"content": "Carol owns a cat", "importance": 0.3, "tags": ["pets"]}]
    )
    assert created
    rows = add(
        raw,
        [
            {"content": "new one"},
            {"content": "carol OWNS a cat", "importance": 0.9, "confidence": 0.4, "tags": ["cat"]},
        ],
    )
    assert [(r[0], r[2]) for r in rows] == [(1, True), (2, False)]
    assert rows[1][1] == first
    row = raw.execute(
        "SELECT access_count, importance, confidence, tags, content FROM memdb.memories "
        "WHERE id = %s",
        (first,),
    ).fetchone()
    assert row[0] == 1
    assert row[1] == pytest.approx(0.9)
    assert row[2] == pytest.approx(1.0)  # higher confidence kept
    assert row[3] == ["cat", "pets"]
    assert row[4] == "Carol owns a cat"


def test_add_memories_scope_separates_duplicates(raw):
    rows = add(
        raw,
        [
            {"content": "same text", "scope": "session", "session_id": "s1"},
            {"content": "same text", "scope": "session", "session_id": "s2"},
            {"content": "same text", "scope": "project", "project_id": "p1"},
            {"content": "same text"},
            {"content": "same text", "tenant": "other"},
            {"content": "same text", "scope": "session", "session_id": "s1"},
        ],
    )
    assert [r[2] for r in rows] == [True, True, True, True, True, False]
    assert rows[5][1] == rows[0][1]
    assert one(raw, "SELECT count(*) FROM memdb.memories") == 5


def test_add_memories_sets_uri_hash_and_tsv(raw):
    [(_, mid, _)] = add(raw, [{"content": DOC, "subject": "li si/x", "category": "entities"}])
    uri, h, tsv_ok = raw.execute(
        "SELECT uri, content_hash, tsv @@ to_tsquery('simple', '工程') FROM memdb.memories "
        "WHERE id = %s",
        (mid,),
    ).fetchone()
    assert uri == f"mem://li%20si%2Fx/entities/{mid}"
    assert bytes(h) == bytes(one(raw, "SELECT memdb.content_hash(%s)", (DOC,)))
    assert tsv_ok


def test_add_memories_with_embeddings(raw):
    sid = space(raw)
    rows = add(
        raw,
        [{"content": "a"}, {"content": "b"}, {"content": "c"}],
        [vec(1, 0, 0), None, vec(0, 0, 1)],
        sid,
    )
    got = dict(
        raw.execute(
            "SELECT id, embedding IS NOT NULL AND space_id = %s FROM memdb.memories", (sid,)
        ).fetchall()
    )
    assert [got[r[1]] for r in rows] == [True, False, True]


def test_add_memories_wrong_dimension_md001_and_nothing_written(raw):
    sid = space(raw)
    with pytest.raises(psycopg.Error) as info:
        add(raw, [{"content": "ok"}, {"content": "bad"}], [vec(1, 0, 0), vec(1, 0)], sid)
    assert info.value.sqlstate == "MD001"
    assert counts(raw) == (0, 0)


# -- raw writes go through the triggers -----------------------------------------------------------
def test_raw_insert_wrong_dimension_md001(raw):
    sid = space(raw)
    assert (
        sqlstate_of(
            raw,
            "INSERT INTO memdb.memories (content, space_id, embedding) VALUES ('x', %s, %s)",
            (sid, vec(1, 2)),
        )
        == "MD001"
    )
    # an embedding without a space is refused as well
    assert (
        sqlstate_of(
            raw, "INSERT INTO memdb.memories (content, embedding) VALUES ('x', %s)", (vec(1, 2, 3),)
        )
        == "MD001"
    )
    raw.execute(
        "INSERT INTO memdb.memories (content, space_id, embedding) VALUES ('x', %s, %s)",
        (sid, vec(1, 2, 3)),
    )
    assert counts(raw) == (1, 1)


def test_raw_update_wrong_dimension_md001(raw):
    sid = space(raw)
    [(_, mid, _)] = add(raw, [{"content": "x"}], [vec(1, 0, 0)], sid)
    assert (
        sqlstate_of(raw, "UPDATE memdb.memories SET embedding = %s WHERE id = %s", (vec(1, 0), mid))
        == "MD001"
    )


def test_raw_update_content_drops_embedding_and_bumps_version(raw):
    sid = space(raw)
    [(_, mid, _)] = add(raw, [{"content": "Dave drinks coffee"}], [vec(0, 1, 0)], sid)
    before = raw.execute(
        "SELECT version, content_hash, uri, updated_at FROM memdb.memories WHERE id = %s", (mid,)
    ).fetchone()
    raw.execute("UPDATE memdb.memories SET content = 'Dave drinks tea' WHERE id = %s", (mid,))
    row = raw.execute(
        "SELECT version, embedding IS NULL, space_id, content_hash, "
        "tsv @@ to_tsquery('english', 'tea'), uri FROM memdb.memories WHERE id = %s",
        (mid,),
    ).fetchone()
    assert row[0] == before[0] + 1
    assert row[1] is True and row[2] is None
    assert bytes(row[3]) == bytes(one(raw, "SELECT memdb.content_hash('dave drinks tea')"))
    assert row[4] is True
    assert row[5] == before[2]
    # a change of the access counters only does not bump the version
    raw.execute("UPDATE memdb.memories SET access_count = 7 WHERE id = %s", (mid,))
    assert one(raw, "SELECT version FROM memdb.memories WHERE id = %s", (mid,)) == before[0] + 1


def test_raw_update_category_moves_default_uri(raw):
    [(_, mid, _)] = add(raw, [{"content": "x", "subject": "eve"}])
    raw.execute("UPDATE memdb.memories SET category = 'tools' WHERE id = %s", (mid,))
    assert one(raw, "SELECT uri FROM memdb.memories WHERE id = %s", (mid,)) == (
        f"mem://eve/tools/{mid}"
    )


# -- list_memories: the filter is folded into an index scan ---------------------------------------
def test_list_memories_explain_uses_subject_index(raw):
    items = [
        {"content": f"memory number {i} about topic {i % 37}", "subject": f"user{i % 150}"}
        for i in range(3000)
    ]
    items += [{"content": f"alice fact {i}", "subject": "alice"} for i in range(10)]
    add(raw, items)
    raw.execute("ANALYZE memdb.memories")
    plan = "\n".join(
        r[0]
        for r in raw.execute(
            """EXPLAIN SELECT * FROM memdb.list_memories('default','{"subject":"alice"}')"""
        ).fetchall()
    )
    scan = [line for line in plan.splitlines() if "Index Scan" in line and " on memories" in line]
    assert scan, plan
    conds = [line for line in plan.splitlines() if "Index Cond" in line]
    assert any("subject" in c and "alice" in c for c in conds), plan
    # absent keys were folded away: no JSON operators left in the plan
    assert "?" not in plan and "jsonb" not in plan and "check_filter" not in plan, plan
    assert "Seq Scan" not in plan, plan
    got = raw.execute(
        """SELECT subject FROM memdb.list_memories('default','{"subject":"alice"}')"""
    ).fetchall()
    assert len(got) == 10 and {r[0] for r in got} == {"alice"}


def test_list_memories_filters_in_sql(raw):
    rows = add(
        raw,
        [
            {"content": "one", "subject": "user_1", "kind": "episodic", "tags": ["a", "b"],
             "metadata": {"lang": "en", "n": 1}, "importance": 0.9},
            {"content": "two", "subject": "user_10", "kind": "semantic", "tags": ["a"],
             "metadata": {"lang": "zh"}, "importance": 0.2},
            {"content": "three", "subject": "user_1", "category": "tools", "tags": ["c"],
             "importance": 0.4},
        ],
    )
    ids = [r[1] for r in rows]

    def listed(flt: dict) -> set[UUID]:
        return {
            r[0]
            for r in raw.execute(
                "SELECT id FROM memdb.list_memories('default', %s)", (Jsonb(flt),)
            ).fetchall()
        }

    assert listed({"subject": "user_1"}) == {ids[0], ids[2]}
    assert listed({"subject": ["user_10"]}) == {ids[1]}
    assert listed({"subject": "user_"}) == set()
    assert listed({"kind": ["episodic", "procedural"]}) == {ids[0]}
    assert listed({"category": "tools"}) == {ids[2]}
    assert listed({"tags": ["a", "b"]}) == {ids[0]}
    assert listed({"tags_any": ["b", "c"]}) == {ids[0], ids[2]}
    assert listed({"metadata": {"lang": "en"}}) == {ids[0]}
    assert listed({"min_importance": 0.5}) == {ids[0]}
    assert listed({"min_importance": 0.4}) == {ids[0], ids[2]}
    assert listed({}) == set(ids)
    assert listed({"subject": "user_1"}) == listed({"subject": "user_1", "tags": []})
    # other tenants are invisible
    assert raw.execute("SELECT count(*) FROM memdb.list_memories('other')").fetchone()[0] == 0


# -- search_vector --------------------------------------------------------------------------------
def test_search_vector_nearest_by_cosine(raw):
    sid = space(raw)
    items = [{"content": c} for c in ("east", "east-north", "north", "up", "west")]
    vectors = [vec(1, 0, 0), vec(0.9, 0.2, 0), vec(0, 1, 0), vec(0, 0, 1), vec(-1, 0, 0)]
    rows = add(raw, items, vectors, sid)
    by_content = {items[r[0] - 1]["content"]: r[1] for r in rows}
    hits = raw.execute(
        "SELECT id, distance, score FROM memdb.search_vector('default', %s, 3)", (vec(2, 0.1, 0),)
    ).fetchall()
    nearest = ("east", "east-north", "north")
    assert [h[0] for h in hits] == [by_content[n] for n in nearest]
    q = np.array([2, 0.1, 0])
    for (_, distance, score), name in zip(hits, nearest, strict=True):
        v = np.asarray(vectors[[i["content"] for i in items].index(name)], dtype=float)
        cos = q @ v / np.linalg.norm(q) / np.linalg.norm(v)
        assert distance == pytest.approx(1 - cos, abs=1e-5)
        assert score == pytest.approx(1 - distance)
    # west is the farthest of all
    hits = raw.execute(
        "SELECT id, distance FROM memdb.search_vector('default', %s, 10, '{}', %s)",
        (vec(1, 0, 0), sid),
    ).fetchall()
    assert len(hits) == 5
    assert hits[-1][0] == by_content["west"] and hits[-1][1] == pytest.approx(2.0)


@pytest.mark.parametrize("force_index", [False, True], ids=["exact", "hnsw"])
def test_search_vector_filter_leaving_few_rows(raw, force_index):
    sid = space(raw)
    rng = np.random.default_rng(7)
    bulk = [{"content": f"bulk {i}", "subject": "bulk"} for i in range(300)]
    bulk_vectors = [vec(1, *(rng.normal(size=2) * 0.05)) for _ in bulk]
    rare = [{"content": "rare far", "subject": "rare"},
            {"content": "rare farther", "subject": "rare"}]
    rare_vectors = [vec(0, 1, 0.1), vec(-0.2, 0.1, 1)]
    rows = add(raw, bulk + rare, bulk_vectors + rare_vectors, sid)
    rare_ids = [r[1] for r in rows if r[0] > 300]
    raw.execute("ANALYZE memdb.memories")
    exact_limit = 10000
    if force_index:
        # skip the exact path and make the planner take the HNSW index: without pgvector's
        # iterative scan (which search_vector turns on) the filter would leave nothing among
        # the ef_search nearest candidates
        exact_limit = 0
        assert one(raw, "SELECT memdb.ensure_vector_index(%s, true)", (sid,)) is True
        raw.execute("SET enable_seqscan = off")
        raw.execute("SET enable_sort = off")
        plan = "\n".join(r[0] for r in raw.execute(
            f"""EXPLAIN SELECT m.id FROM memdb.memories m
                WHERE m.tenant = 'default' AND m.space_id = {sid}
                  AND memdb.matches(m, '{{"subject": "rare"}}')
                ORDER BY m.embedding::vector(3) <=> '[1,0,0]' LIMIT 5""").fetchall())
        assert f"memories_hnsw_space_{sid}" in plan, plan
    hits = raw.execute(
        """SELECT id FROM memdb.search_vector('default', %s, 5, '{"subject": "rare"}', %s, %s)""",
        (vec(1, 0, 0), sid, exact_limit),
    ).fetchall()
    assert [h[0] for h in hits] == rare_ids
    hits = raw.execute(
        """SELECT id FROM memdb.search_vector('default', %s, 5, '{"subject": "bulk"}', %s, %s)""",
        (vec(1, 0, 0), sid, exact_limit),
    ).fetchall()
    assert len(hits) == 5 and not set(rare_ids) & {h[0] for h in hits}


def test_search_vector_errors(raw):
    sid = space(raw)
    add(raw, [{"content": "a"}], [vec(1, 0, 0)], sid)
    assert sqlstate_of(raw, "SELECT * FROM memdb.search_vector('default', %s)", (vec(1, 0),)) == (
        "MD001"
    )
    assert (
        sqlstate_of(raw, "SELECT * FROM memdb.search_vector('default', %s, 5, '{}', %s)",
                    (vec(1, 0, 0, 0), sid))
        == "MD001"
    )
    for k in (0, -1, 10001):
        query = "SELECT * FROM memdb.search_vector('default', %s, %s)"
        assert sqlstate_of(raw, query, (vec(1, 0, 0), k)) == "22023"
    assert (
        sqlstate_of(raw, """SELECT * FROM memdb.search_vector('default', %s, 5, '{"bogus": 1}')""",
                    (vec(1, 0, 0),))
        == "22023"
    )


def test_search_vector_skips_superseded_and_expired(raw):
    sid = space(raw)
    rows = add(
        raw,
        [{"content": "current"}, {"content": "old"},
         {"content": "gone", "expires_at": "2000-01-01T00:00:00Z"}],
        [vec(1, 0, 0), vec(1, 0, 0), vec(1, 0, 0)],
        sid,
    )
    raw.execute(
        "UPDATE memdb.memories SET valid_to = now(), superseded_by = %s WHERE id = %s",
        (rows[0][1], rows[1][1]),
    )
    hits = raw.execute(
        "SELECT id FROM memdb.search_vector('default', %s, 10)", (vec(1, 0, 0),)
    ).fetchall()
    assert [h[0] for h in hits] == [rows[0][1]]


# -- purge_expired --------------------------------------------------------------------------------
def test_purge_expired(raw):
    rows = add(
        raw,
        [
            {"content": "past", "expires_at": "2001-01-01T00:00:00Z"},
            {"content": "future", "expires_at": "2999-01-01T00:00:00Z"},
            {"content": "forever"},
            {"content": "past other tenant", "tenant": "t2", "expires_at": "2001-01-01T00:00:00Z"},
            {"content": "ttl", "ttl_seconds": 3600},
        ],
    )
    raw.execute("SELECT set_config('memdb.reason', 'housekeeping', false)")
    assert one(raw, "SELECT memdb.purge_expired('default')") == 1
    left = {r[0] for r in raw.execute("SELECT content FROM memdb.memories").fetchall()}
    assert left == {"future", "forever", "past other tenant", "ttl"}
    h = raw.execute(
        "SELECT op, reason FROM memdb.memory_history WHERE memory_id = %s ORDER BY id",
        (rows[0][1],),
    ).fetchall()
    assert h == [("insert", None), ("delete", "expired")]
    # the caller's reason is restored afterwards
    assert one(raw, "SELECT current_setting('memdb.reason')") == "housekeeping"
    assert one(raw, "SELECT memdb.purge_expired()") == 1
    assert one(raw, "SELECT memdb.purge_expired()") == 0
    assert one(raw, "SELECT count(*) FROM memdb.memories") == 3


# -- history --------------------------------------------------------------------------------------
def test_history_insert_update_supersede_delete_with_actor(raw):
    raw.execute("SELECT set_config('memdb.actor', 'agent-007', false)")
    [(_, old, _), (_, new, _)] = add(
        raw, [{"content": "Frank lives in Paris"}, {"content": "Frank lives in Berlin"}]
    )
    raw.execute("UPDATE memdb.memories SET importance = 0.8 WHERE id = %s", (old,))
    raw.execute(
        "UPDATE memdb.memories SET valid_to = now(), superseded_by = %s WHERE id = %s", (new, old)
    )
    raw.execute("SELECT set_config('memdb.reason', 'user asked', false)")
    raw.execute("DELETE FROM memdb.memories WHERE id = %s", (old,))
    h = raw.execute(
        "SELECT op, actor, reason, before, after FROM memdb.memory_history "
        "WHERE memory_id = %s ORDER BY id",
        (old,),
    ).fetchall()
    assert [r[0] for r in h] == ["insert", "update", "supersede", "delete"]
    assert {r[1] for r in h} == {"agent-007"}
    assert h[3][2] == "user asked" and h[0][2] is None
    ins, upd, sup, dele = h
    assert ins[3] is None and ins[4]["content"] == "Frank lives in Paris"
    assert "embedding" not in ins[4] and "tsv" not in ins[4] and ins[4]["has_embedding"] is False
    assert upd[3]["importance"] == pytest.approx(0.5) and upd[4]["importance"] == pytest.approx(0.8)
    assert upd[4]["version"] == upd[3]["version"] + 1
    assert sup[3]["valid_to"] is None and sup[4]["valid_to"] is not None
    assert sup[4]["superseded_by"] == str(new)
    assert dele[3]["id"] == str(old) and dele[4] is None
    # the other memory only has its insert row
    assert one(raw, "SELECT count(*) FROM memdb.memory_history WHERE memory_id = %s", (new,)) == 1


def test_history_actor_defaults_to_db_user_and_counter_updates_write_nothing(raw):
    [(_, mid, _)] = add(raw, [{"content": "x"}])
    assert one(raw, "SELECT actor FROM memdb.memory_history WHERE memory_id = %s", (mid,)) == one(
        raw, "SELECT current_user"
    )
    raw.execute(
        "UPDATE memdb.memories SET access_count = access_count + 1, last_accessed_at = now() "
        "WHERE id = %s",
        (mid,),
    )
    add(raw, [{"content": "X"}])  # a pure dedup bump
    assert one(raw, "SELECT count(*) FROM memdb.memory_history WHERE memory_id = %s", (mid,)) == 1
    add(raw, [{"content": "x", "tags": ["new"]}])  # a bump that changes tags is recorded
    assert raw.execute(
        "SELECT op, reason FROM memdb.memory_history WHERE memory_id = %s ORDER BY id", (mid,)
    ).fetchall() == [("insert", None), ("update", "duplicate write")]


# -- update_memory / delete_memory ----------------------------------------------------------------
def test_update_memory_and_delete_memory(raw):
    sid = space(raw)
    [(_, mid, _)] = add(raw, [{"content": "Grace codes in Go"}], [vec(1, 0, 0)], sid)
    assert one(
        raw, "SELECT memdb.update_memory('default', %s, %s)", (mid, Jsonb({"importance": 0.7}))
    ) == mid
    assert raw.execute(
        "SELECT importance, version, embedding IS NOT NULL FROM memdb.memories WHERE id = %s",
        (mid,),
    ).fetchone() == (pytest.approx(0.7), 2, True)
    one(raw, "SELECT memdb.update_memory('default', %s, %s)",
        (mid, Jsonb({"content": "Grace codes in Rust"})))
    assert raw.execute(
        "SELECT content, version, embedding IS NULL FROM memdb.memories WHERE id = %s", (mid,)
    ).fetchone() == ("Grace codes in Rust", 3, True)
    one(raw, "SELECT memdb.update_memory('default', %s, %s, %s, %s)",
        (mid, Jsonb({"content": "Grace codes in Zig"}), vec(0, 1, 0), sid))
    stored = one(raw, "SELECT embedding FROM memdb.memories WHERE id = %s", (mid,))
    assert stored.to_list() == [0, 1, 0]
    # wrong tenant, unknown field, unknown id
    assert one(raw, "SELECT memdb.update_memory('other', %s, %s)",
               (mid, Jsonb({"importance": 0.1}))) is None
    assert sqlstate_of(raw, "SELECT memdb.update_memory('default', %s, '{\"tenant\": \"x\"}')",
                       (mid,)) == "22023"
    assert one(raw, "SELECT memdb.delete_memory('other', %s)", (mid,)) is False
    assert one(raw, "SELECT memdb.delete_memory('default', %s)", (mid,)) is True
    assert one(raw, "SELECT memdb.delete_memory('default', %s)", (mid,)) is False
