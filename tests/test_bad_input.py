"""Bad input raises the typed memdb error and changes nothing in the database; hostile strings
are stored and matched literally. Real PostgreSQL, real local embedder.

The calls that must change nothing share one database for the module (fixtures ``s`` and
``sraw``): each call is checked against a snapshot taken just before it, so a leak is caught
where it happens. Tests that write use the per-test ``store``/``raw`` of conftest.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from datetime import timedelta
from urllib.parse import unquote
from uuid import UUID

import numpy as np
import psycopg
import pytest
from psycopg.types.json import Jsonb

from memdb import (
    DimensionMismatch,
    Filter,
    InvalidInput,
    MemdbError,
    MemoryInput,
    MemoryStore,
    NotFound,
)

DIMS = 384
INJECTIONS = [
    "'; DROP TABLE memdb.memories; --",
    '" OR 1=1 --',
    "$$",
    "\\",
    "%s",
    "%(x)s",
    "{}",
    "'); 删除 memdb.memories; --",
]


def unit_vector(seed: int) -> list[float]:
    v = np.random.default_rng(seed).normal(size=DIMS)
    return (v / np.linalg.norm(v)).tolist()


def snapshot(raw: psycopg.Connection) -> tuple:
    """Everything a failed call must leave alone: rows, versions, counters, history, spaces."""
    return raw.execute(
        """SELECT (SELECT count(*) FROM memdb.memories),
                  (SELECT coalesce(sum(version), 0) FROM memdb.memories),
                  (SELECT coalesce(sum(access_count), 0) FROM memdb.memories),
                  (SELECT md5(coalesce(string_agg(m::text, '|' ORDER BY id), ''))
                     FROM memdb.memories m),
                  (SELECT count(*) FROM memdb.memory_history),
                  (SELECT count(*) FROM memdb.embedding_spaces)"""
    ).fetchone()


def check(raw: psycopg.Connection, error: type[MemdbError],
          call: Callable[[], object]) -> MemdbError:
    """``call`` raises exactly ``error`` (the class, not just a subclass) and writes nothing."""
    before = snapshot(raw)
    with pytest.raises(MemdbError) as info:
        call()
    assert type(info.value) is error, f"{type(info.value).__name__}: {info.value}"
    assert snapshot(raw) == before
    return info.value


@pytest.fixture(scope="module")
def shared_dsn(module_db: str) -> str:
    return module_db


@pytest.fixture(scope="module")
def s(shared_dsn: str, embedder) -> Iterator[MemoryStore]:
    """A store with one memory already in it (so the space exists and counts are not 0)."""
    with MemoryStore(shared_dsn, embedder=embedder, gate=None) as st:
        st.add("Alice prefers green tea", subject="alice", tags=["drink"])
        yield st


@pytest.fixture(scope="module")
def sraw(shared_dsn: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(shared_dsn, autocommit=True) as conn:
        yield conn


# -- content -------------------------------------------------------------------------------------
@pytest.mark.parametrize("content", ["", "   ", "\n\t  \r\n", "\u3000\u3000", None, 42, b"bytes"])
def test_blank_or_non_string_content(s, sraw, content):
    check(sraw, InvalidInput, lambda: s.add(content))


def test_content_length_limit(store, raw):
    words = " ".join(f"w{i}" for i in range(20000))
    longest = words[:65_536]
    assert len(longest) == 65_536
    check(raw, InvalidInput, lambda: store.add(longest + "x"))
    check(raw, InvalidInput, lambda: store.add("长" * 65_537))
    # exactly the limit is accepted: Python and the table's CHECK agree (a precomputed
    # embedding: the local model embeds a text this long window by window, for minutes)
    r = store.add(longest, embedding=unit_vector(0))
    assert r.created and len(store.get(r.id).content) == 65_536


@pytest.mark.parametrize(
    "fields",
    [
        {"content": "nul \x00 in content"},
        {"content": "ok", "subject": "bad\x00subject"},
        {"content": "ok", "tags": ["fine", "bad\x00tag"]},
        {"content": "ok", "metadata": {"k": "bad\x00value"}},
        {"content": "ok", "metadata": {"bad\x00key": 1}},
        {"content": "ok", "metadata": {"nested": ["a", {"deep": "x\x00"}]}},
        {"content": "ok", "source_id": "src\x00"},
        {"content": "ok", "agent": "\x00"},
        {"content": "ok", "search_context": "ctx \x00"},
        {"content": "lone \ud800 surrogate"},
        {"content": "ok", "subject": "\udfff"},
        {"content": "ok", "tags": ["\ud83d"]},
        {"content": "ok", "metadata": {"k": "\ud800"}},
        {"content": "ok", "metadata": {"\udc00": "v"}},
    ],
)
def test_nul_bytes_and_lone_surrogates(s, sraw, fields):
    check(sraw, InvalidInput, lambda: s.add(**fields))


@pytest.mark.parametrize(
    "fields",
    [
        {"subject": ""},
        {"subject": "   "},
        {"subject": 7},
        {"subject": "x" * 257},
        {"tags": "single-string"},
        {"tags": ["ok", ""]},
        {"tags": [1, 2]},
        {"metadata": ["not", "a", "dict"]},
        {"metadata": {"f": float("nan")}},
        {"metadata": {"f": object()}},
        {"metadata": {"big": "x" * 70_000}},
        {"source_id": "s" * 1025},
        {"scope": "project"},  # needs a project_id
        {"scope": "session"},  # needs a session_id
        {"ttl": -1},
        {"ttl": 0},
        {"ttl": float("inf")},
        {"ttl": 1e300},
        {"ttl": 251_606_339_263},  # year 10000: PostgreSQL stores it, Python cannot read it
        {"ttl": "10"},
        {"ttl": 5, "expires_at": "2999-01-01T00:00:00+00:00"},
        {"expires_at": "next tuesday"},
        {"created_at": 12345},
    ],
)
def test_other_bad_fields(s, sraw, fields):
    check(sraw, InvalidInput, lambda: s.add("a perfectly fine memory", **fields))


def test_unknown_field(s, sraw):
    check(sraw, InvalidInput, lambda: s.add("a fine memory", bogus=1))
    check(sraw, InvalidInput, lambda: s.add("a fine memory", tenant="other"))
    check(sraw, InvalidInput, lambda: s.add_many([{"content": "a fine memory", "bogus": 1}]))
    check(sraw, InvalidInput, lambda: s.add_many([42]))


# -- embeddings -----------------------------------------------------------------------------------
def test_wrong_embedding_dimensions(s, sraw):
    err = check(sraw, DimensionMismatch, lambda: s.add("x", embedding=[0.1] * 383))
    assert isinstance(err, InvalidInput)  # a DimensionMismatch is also an InvalidInput
    check(sraw, DimensionMismatch, lambda: s.add("x", embedding=[0.1] * 385))
    check(sraw, DimensionMismatch, lambda: s.add("x", embedding=[]))
    check(sraw, DimensionMismatch, lambda: s.search_by_vector([0.1] * 383))
    check(sraw, DimensionMismatch, lambda: s.search("tea", embedding=[0.1] * 383))
    [mid] = [m.id for m in s.list()]
    check(sraw, DimensionMismatch, lambda: s.update(mid, embedding=[0.1] * 383))


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_inf_in_embedding(s, sraw, bad):
    vector = unit_vector(1)
    vector[17] = bad
    check(sraw, InvalidInput, lambda: s.add("x", embedding=vector))
    check(sraw, InvalidInput, lambda: s.search_by_vector(vector))
    check(sraw, InvalidInput, lambda: s.add("x", embedding=np.asarray(vector, dtype=np.float64)))


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_unusable_embeddings(s, sraw):
    check(sraw, InvalidInput, lambda: s.add("x", embedding=[0.0] * DIMS))
    check(sraw, InvalidInput, lambda: s.add("x", embedding="not a vector"))
    check(sraw, InvalidInput, lambda: s.add("x", embedding=[[0.1] * DIMS]))
    check(sraw, InvalidInput, lambda: s.add("x", embedding=[1e39] * DIMS))  # float32 overflow


# -- enums and numbers ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fields",
    [
        {"kind": "long-term"},
        {"kind": "SEMANTIC"},
        {"category": "hobbies"},
        {"category": ""},  # None means "classify from the content" (memdb.write.classify)
        {"scope": "team"},
        {"source_type": "rumour"},
        {"source_type": ""},
    ],
)
def test_unknown_vocabulary(s, sraw, fields):
    check(sraw, InvalidInput, lambda: s.add("a fine memory", **fields))


@pytest.mark.parametrize("field", ["importance", "confidence"])
@pytest.mark.parametrize("value", [-0.1, 1.1, math.nan, math.inf, True, False, "0.5", None])
def test_importance_and_confidence_out_of_range(s, sraw, field, value):
    if field == "importance" and value is None:  # None is "unset": scored from the text
        before = snapshot(sraw)
        result = s.add("a fine memory", importance=None, dry_run=True)
        assert result.outcome == "created" and snapshot(sraw) == before
        assert MemoryInput("a fine memory", importance=None).to_item()["importance"] == 0.5
        return
    check(sraw, InvalidInput, lambda: s.add("a fine memory", **{field: value}))


def test_bad_updates_change_nothing(s, sraw):
    [mid] = [m.id for m in s.list()]
    for changes in [
        {"content": ""},
        {"content": "x\x00"},
        {"importance": 1.1},
        {"confidence": math.nan},
        {"kind": "bogus"},
        {"tags": "one"},
        {"metadata": {"k": "\ud800"}},
        {"subject": "bob"},
        {"ttl": -5},
        {"ttl": 1e300},
        {"ttl": timedelta(days=999_999_000)},
    ]:
        check(sraw, InvalidInput, lambda c=changes: s.update(mid, **c))
    check(sraw, InvalidInput, lambda: s.update(mid))
    check(sraw, InvalidInput, lambda: s.update("not-a-uuid", importance=0.5))
    check(sraw, NotFound, lambda: s.update(UUID(int=1), importance=0.5))
    check(sraw, NotFound, lambda: s.delete(UUID(int=1)))
    check(sraw, InvalidInput, lambda: s.delete(12345))


# -- filters, k and limits ------------------------------------------------------------------------
BAD_FILTERS = [
    {"bogus": 1},
    {"subject": []},
    {"kind": []},
    {"subject": 5},
    {"subject": ["alice", 5]},
    {"subject": ""},
    {"kind": "long-term"},
    {"category": ["preferences", "hobbies"]},
    {"tags": "drink"},
    {"tags": [1]},
    {"tags_any": "drink"},
    {"created_after": "yesterday"},
    {"created_before": 5},
    {"as_of": [2024]},
    {"min_importance": 1.5},
    {"min_importance": "high"},
    {"min_importance": True},
    {"metadata": "lang=en"},
    {"metadata": {"k": math.nan}},
    {"include_expired": "yes"},
]


@pytest.mark.parametrize("flt", BAD_FILTERS, ids=lambda f: repr(f)[:40])
def test_malformed_filters(s, sraw, flt):
    check(sraw, InvalidInput, lambda: s.list(flt))
    check(sraw, InvalidInput, lambda: s.list(**flt))
    check(sraw, InvalidInput, lambda: s.search("green tea", filter=flt))
    check(sraw, InvalidInput, lambda: s.search_by_vector(unit_vector(2), filter=flt))


def test_filter_must_be_filter_or_dict(s, sraw):
    check(sraw, InvalidInput, lambda: s.list("subject=alice"))
    check(sraw, InvalidInput, lambda: s.list(["alice"]))
    check(sraw, InvalidInput, lambda: s.search("tea", filter="subject=alice"))
    check(sraw, InvalidInput, lambda: s.list(Filter(subject="alice"), bogus=1))


@pytest.mark.parametrize(
    "bad",
    ['{"bogus": 1}', '{"subject": 5}', '{"subject": []}', '{"kind": [1]}',
     '{"min_importance": 2}', '{"created_after": "soon"}', '"alice"'],
)
def test_malformed_filters_in_sql(s, sraw, bad):
    before = snapshot(sraw)
    for query in (
        "SELECT * FROM memdb.list_memories('default', %s::jsonb)",
        "SELECT * FROM memdb.search_vector('default', %s::vector, 5, %s::jsonb)",
        "SELECT * FROM memdb.search_hybrid('default', 'tea', NULL, 5, %s::jsonb)",
    ):
        params = (bad,) if "search_vector" not in query else (str(unit_vector(3)), bad)
        with pytest.raises(psycopg.Error) as info:
            sraw.execute(query, params)
        assert info.value.sqlstate == "22023", (query, bad)
    assert snapshot(sraw) == before


def test_literal_bad_filter_in_sql(s, sraw):
    with pytest.raises(psycopg.Error) as info:
        sraw.execute("""SELECT * FROM memdb.list_memories('default', '{"bogus": 1}')""")
    assert info.value.sqlstate == "22023"


@pytest.mark.parametrize("k", [0, -1, 1001, 10**9, True, 2.5, "3", None])
def test_bad_k(s, sraw, k):
    check(sraw, InvalidInput, lambda: s.search("green tea", k=k))
    check(sraw, InvalidInput, lambda: s.search_by_vector(unit_vector(4), k=k))


def test_k_at_the_limits_is_fine(s):
    assert len(s.search("green tea", k=1)) == 1
    assert len(s.search("green tea", k=1000)) == 1


def test_bad_list_paging(s, sraw):
    for kwargs in ({"limit": 0}, {"limit": -1}, {"limit": 10**9}, {"limit": True},
                   {"offset": -1}, {"offset": 1.5}, {"offset": True}):
        check(sraw, InvalidInput, lambda kw=kwargs: s.list(**kw))


def test_bad_query(s, sraw):
    check(sraw, InvalidInput, lambda: s.search(None))
    check(sraw, InvalidInput, lambda: s.search(["green tea"]))
    check(sraw, InvalidInput, lambda: s.search("tea \x00"))
    check(sraw, InvalidInput, lambda: s.search("tea \ud800"))
    check(sraw, InvalidInput, lambda: s.search("tea", routes=["telepathy"]))


# -- batches are all or nothing -------------------------------------------------------------------
GOOD = ["Bob plays chess", "Carol owns a cat", None, "Dan likes jazz", "Eve runs marathons"]
BAD_ITEMS = [
    ({"content": "   "}, InvalidInput),
    ({"content": "bad kind", "kind": "bogus"}, InvalidInput),
    ({"content": "nul \x00"}, InvalidInput),
    ({"content": "bad importance", "importance": math.nan}, InvalidInput),
    ({"content": "bad dims", "embedding": [0.5] * 383}, DimensionMismatch),
    ({"content": "bad vector", "embedding": [math.nan] * DIMS}, InvalidInput),
    ({"content": "unknown field", "colour": "blue"}, InvalidInput),
    (MemoryInput(content="no project", scope="project"), InvalidInput),
    ("", InvalidInput),
    # passes Python's checks, fails in PostgreSQL (timestamp out of range): with batch_size 2
    # the first items were already written in the transaction, and are rolled back with it
    ({"content": "expires after the end of time", "ttl": 8e13}, InvalidInput),
]


def test_add_many_third_of_five_bad_writes_nothing(store, raw):
    store.add("an earlier memory")
    for bad, error in BAD_ITEMS:
        items: list = [{"content": c} if c else bad for c in GOOD]
        for batch_size in (500, 2):
            check(raw, error, lambda i=items, b=batch_size: store.add_many(i, batch_size=b))
    assert [m.content for m in store.list()] == ["an earlier memory"]
    # the same batch without the bad item goes through, in one transaction
    results = store.add_many([{"content": c} for c in GOOD if c], batch_size=2)
    assert [r.created for r in results] == [True] * 4
    assert store.count() == 5


# -- hostile strings are data ---------------------------------------------------------------------
def test_injection_strings_round_trip(store, raw):
    made = {}
    for n, text in enumerate(INJECTIONS):
        r = store.add(
            text,
            subject=text,
            tags=[text, "t"],
            metadata={text: text, "n": n, "nested": {text: [text]}},
            source_id=text,
            agent=text,
            created_by=text,
            search_context=text,
        )
        assert r.created
        made[text] = r.id
    assert len(set(made.values())) == len(INJECTIONS)
    for text, mid in made.items():
        m = store.get(mid)
        assert m.content == text and m.subject == text and m.source_id == text
        assert m.agent == text and m.created_by == text and m.search_context == text
        assert set(m.tags) == {text, "t"}
        assert m.metadata == {text: text, "n": INJECTIONS.index(text), "nested": {text: [text]}}
        assert unquote(m.uri.split("/")[2]) == text
        assert m.uri.endswith(f"/general/{mid}")
        # as filter values they match literally, and only themselves
        assert [x.id for x in store.list(subject=text)] == [mid]
        assert [x.id for x in store.list(tags=[text])] == [mid]
        assert [x.id for x in store.list(tags_any=[text, "nothing"])] == [mid]
        assert [x.id for x in store.list(metadata={text: text})] == [mid]
        assert [x.id for x in store.list(metadata={"nested": {text: [text]}})] == [mid]
        assert [x.id for x in store.list(agent=text)] == [mid]
        hits = store.search("alice tea memory", filter={"subject": text})
        assert [h.memory.id for h in hits] == [mid]
        store.search(text)  # a hostile query is just a query
        # re-adding is a dedup, not a second row
        again = store.add(text, subject=text)
        assert again.id == mid and not again.created
    assert store.list(subject="%") == [] and store.list(subject="'") == []
    assert raw.execute("SELECT to_regclass('memdb.memories') IS NOT NULL").fetchone()[0]
    assert raw.execute("SELECT count(*) FROM memdb.memories").fetchone()[0] == len(INJECTIONS)
    # the stored bytes are exactly the input's
    stored = dict(raw.execute("SELECT id, content FROM memdb.memories").fetchall())
    for text, mid in made.items():
        assert stored[mid].encode() == text.encode()


def test_injection_strings_through_memory_input_and_update(store, raw):
    results = store.add_many([MemoryInput(content=f"memo {t}", subject="inj", tags=[t])
                          for t in INJECTIONS])
    assert all(r.created for r in results)
    for text, r in zip(INJECTIONS, results, strict=True):
        m = store.update(r.id, content=f"updated {text}", metadata={text: text}, source_id=text,
                     reason=text)
        assert m.content == f"updated {text}" and m.metadata == {text: text}
        assert store.history(r.id)[-1].reason == text
    assert len(store.list(subject="inj")) == len(INJECTIONS)


def test_injection_strings_as_tenant_and_actor(fresh_db, embedder, raw):
    for text in INJECTIONS[:4]:
        with MemoryStore(fresh_db, tenant=text, actor=text, embedder=embedder, gate=None) as st:
            r = st.add("tenant scoped memory", embedding=unit_vector(5))
            assert st.get(r.id).tenant == text
            assert st.history(r.id)[0].actor == text
            assert [m.id for m in st.list()] == [r.id]
    assert raw.execute("SELECT count(DISTINCT tenant) FROM memdb.memories").fetchone()[0] == 4


def test_jsonb_filter_values_are_parameters(store, raw):
    """Through SQL too, a hostile filter value is a value."""
    store.add("bobby tables", subject=INJECTIONS[0])
    rows = raw.execute(
        "SELECT content FROM memdb.list_memories('default', %s)",
        (Jsonb({"subject": INJECTIONS[0]}),),
    ).fetchall()
    assert rows == [("bobby tables",)]


# -- issue 14: wrong or untyped errors, each refused before anything is written ----------------
def test_list_offset_past_a_postgres_integer_is_invalid_input(s, sraw):
    error = check(sraw, InvalidInput, lambda: s.list(offset=2**31))
    assert "offset" in str(error) and "2147483647" in str(error)
    assert s.list(offset=2**31 - 1) == []


@pytest.mark.parametrize("items", [None, 5, "Alice prefers tea", b"bytes",
                                   {"content": "a dict is one memory, not a list"}])
def test_add_many_needs_a_list(s, sraw, items):
    error = check(sraw, InvalidInput, lambda: s.add_many(items))
    assert "items" in str(error)


@pytest.mark.parametrize("size", [0, -1, True, 2.5, "4", 10**6])
def test_pool_size_is_checked_before_connecting(shared_dsn, embedder, size):
    with pytest.raises(MemdbError) as info:  # a server that is not there is never asked
        MemoryStore("postgresql://nobody@127.0.0.1:1/x?connect_timeout=2", pool_size=size)
    assert type(info.value) is InvalidInput and "pool_size" in str(info.value)
    with pytest.raises(InvalidInput, match="pool_size"):
        MemoryStore(shared_dsn, embedder=embedder, pool_size=size)


def test_reason_with_nul_or_too_long_is_refused_naming_it(s, sraw):
    mid = s.list()[0].id
    for reason in ("why \x00 not", "lone \ud800", "r" * 1_001, "长" * 1_001, 42):
        for call in (lambda r=reason: s.add("a memory with a bad reason", reason=r),
                     lambda r=reason: s.add_many(["a memory with a bad reason"], reason=r),
                     lambda r=reason: s.update(mid, importance=0.3, reason=r),
                     lambda r=reason: s.delete(mid, reason=r)):
            error = check(sraw, InvalidInput, call)
            assert "reason" in str(error)


def test_reason_of_a_thousand_characters_is_kept(store):
    r = store.add("a memory with a long reason", reason="理" * 1_000)
    assert store.history(r.id)[0].reason == "理" * 1_000


def test_working_state_errors_name_the_working_state(s, sraw):
    for state, named in (({"notes": {"x": "a" * 70_000}}, "working state notes"),
                         ({"notes": {"x": "nul \x00"}}, "working state notes"),
                         ({"goal": "g" * 70_000}, "working state goal"),
                         ({"plan": ["ok", "nul \x00"]}, "working state plan")):
        error = check(sraw, InvalidInput,
                      lambda st=state: s.sessions.set_state("bad-state", st, expected_version=0))
        assert named in str(error) and "metadata" not in str(error)


def test_cli_add_from_stdin_drops_a_utf8_bom(fresh_db, raw, tmp_path, monkeypatch):
    from tests.cli_helpers import run

    monkeypatch.setenv("MEMDB_HOME", str(tmp_path / "home"))
    result = run(fresh_db, "add", "--no-gate", "-", "--json",
                 input="\ufeff王五喜欢喝乌龙茶\n")
    assert result.exit_code == 0, result.output
    (content,) = raw.execute("SELECT content FROM memdb.memories").fetchone()
    assert content == "王五喜欢喝乌龙茶\n" and not content.startswith("\ufeff")


@pytest.mark.parametrize(("item", "named"), [
    ({"content": "born expired", "ttl_seconds": -5}, "ttl_seconds"),
    ({"content": "born expired", "ttl_seconds": 0}, "ttl_seconds"),
    ({"content": 5}, "content"),
    ({"content": None}, "content"),
    ({"content": {"text": "nested"}}, "content"),
    ({"subject": "alice"}, "content"),
    ({"content": "unknown key", "bogus": 1}, "bogus"),
    ({"content": "typo", "ttl": 60}, "ttl"),
    ({"content": "wrong type", "subject": 5}, "subject"),
    ({"content": "wrong type", "importance": "high"}, "importance"),
    ({"content": "wrong type", "tags": "a,b"}, "tags"),
    ({"content": "wrong type", "metadata": [1, 2]}, "metadata"),
])
def test_sql_add_memories_refuses_bad_items_naming_the_key(sraw, item, named):
    """From psql: a malformed item raises invalid_parameter_value (22023) naming its key, and
    nothing of the batch is written (the good item before it neither)."""
    for fn in ("add_memories", "write_memories"):
        before = snapshot(sraw)
        with pytest.raises(psycopg.Error) as info:
            sraw.execute(f"SELECT * FROM memdb.{fn}(%s)",
                         (Jsonb([{"content": "a good item first"}, item]),))
        assert info.value.sqlstate == "22023", info.value
        assert named in str(info.value) and "item 2" in str(info.value)
        assert snapshot(sraw) == before


def test_sql_add_memories_refuses_an_item_that_is_no_object(sraw):
    before = snapshot(sraw)
    with pytest.raises(psycopg.Error) as info:
        sraw.execute("SELECT * FROM memdb.add_memories(%s)", (Jsonb(["just a string"]),))
    assert info.value.sqlstate == "22023" and "JSON object" in str(info.value)
    assert snapshot(sraw) == before
