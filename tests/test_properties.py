"""Property-based tests (hypothesis) over the public API of MemoryStore.

Whatever a caller passes, every call either succeeds, with the text stored and returned
byte-for-byte, or raises a typed ``memdb.core.errors.MemdbError``; a failed call leaves the database
unchanged, and no driver exception leaks. Inputs: arbitrary Unicode (emoji, RTL, combining
marks, CJK, NUL, lone surrogates), SQL and tsquery metacharacters in every string field, texts
near and above the 65,536-character limit, deeply nested or huge metadata, NaN/inf/
wrong-dimension vectors and out-of-range numbers. The example-based twin is test_bad_input.py.

One database and one store serve the whole module (hypothesis runs hundreds of examples), with
a tiny deterministic hash embedder: the real model is not the point here. Each write goes to
its own session scope, so dedup never folds one example's memory onto another's.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import uuid
import warnings
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from memdb import DimensionMismatch, InvalidInput, MemdbError, MemoryStore
from memdb.core.models import Category, Kind, Scope, SourceType
from memdb.core.validate import (
    MAX_CONTENT_CHARS,
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    MAX_NAME_CHARS,
    RESERVED_NAMES,
)
from memdb.retrieval.search import ROUTES
from memdb.write.importance import score_importance

DIMS = 8
MAX_K = 1000
_seq = itertools.count()

# -- the embedder and the shared database ---------------------------------------------------------


class HashEmbedder:
    """Deterministic float32 unit vectors from a hash of the text (lone surrogates allowed)."""

    model = "prop-hash"
    dims = DIMS

    def _embed(self, texts: Sequence[str], salt: bytes) -> np.ndarray:
        out = np.empty((len(texts), DIMS), dtype=np.float32)
        for i, text in enumerate(texts):
            digest = hashlib.sha256(salt + text.encode("utf-8", "surrogatepass")).digest()
            vec = np.frombuffer(digest[:DIMS], dtype=np.uint8).astype(np.float32) - 127.5
            out[i] = vec / np.linalg.norm(vec)
        return out

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, b"p")

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, b"p")  # same space: a query finds its own text


@pytest.fixture(scope="module")
def prop_dsn(module_db: str) -> str:
    return module_db


# Known memories, so that filters drawn from these pools match something.
POOL_SUBJECTS = ["alice", "'; drop table memdb.memories; --", "前端工程师", "%", "_", "مرحبا"]
POOL_TAGS = ["drink", "&", "|", ":*", "e\u0301", "😀"]
POOL_META = [{"lang": "en"}, {"n": 1, "nested": {"a": [1, 2]}}, {"q": "'\"%_$$"}, {"f": 0.5}]


@pytest.fixture(scope="module")
def ps(prop_dsn: str) -> Iterator[MemoryStore]:
    with MemoryStore(prop_dsn, embedder=HashEmbedder(), gate=None) as store:
        for n, subject in enumerate(POOL_SUBJECTS):
            store.add(f"seed memory {n} about {subject} and green tea", subject=subject,
                      tags=POOL_TAGS[n % len(POOL_TAGS):][:3],
                      metadata=POOL_META[n % len(POOL_META)],
                      kind=list(Kind)[n % len(Kind)], category=list(Category)[n % len(Category)],
                      importance=n / len(POOL_SUBJECTS), agent=POOL_SUBJECTS[-1 - n])
        store.add("an expired seed memory", subject="alice", expires_at="2000-01-01T00:00:00Z")
        yield store


@pytest.fixture(scope="module")
def praw(prop_dsn: str, ps: MemoryStore) -> Iterator[psycopg.Connection]:
    with psycopg.connect(prop_dsn, autocommit=True) as conn:
        yield conn


def snapshot(raw: psycopg.Connection) -> tuple:
    """What a failed call must leave alone: rows, versions, counters, history, BM25 stats."""
    return raw.execute(
        """SELECT (SELECT count(*) FROM memdb.memories),
                  (SELECT coalesce(sum(version), 0) FROM memdb.memories),
                  (SELECT coalesce(sum(access_count), 0) FROM memdb.memories),
                  (SELECT coalesce(max(id), 0) FROM memdb.memory_history),
                  (SELECT coalesce(string_agg(s::text, '|' ORDER BY tenant), '')
                     FROM memdb.bm25_stats s),
                  (SELECT coalesce(sum(df), 0) FROM memdb.bm25_terms),
                  (SELECT count(*) FROM memdb.embedding_spaces)"""
    ).fetchone()


def fresh_session() -> str:
    return f"prop-{os.getpid()}-{next(_seq)}-{uuid.uuid4().hex[:8]}"


# -- strategies -----------------------------------------------------------------------------------
SPECIAL = [
    "😀", "👩\u200d👩\u200d👧", "🇺🇳", "مرحبا بالعالم", "שלום", "\u202e", "\u200f", "e\u0301",
    "a\u0308\u0301\u0323", "前端工程师", "日本語のテキスト", "한국어", "𠜎𠜱", "\x00", "\ud800",
    "\udfff", "\ufeff", "\u200b", "\ufffe", "\U0010ffff", " ", "\t", "\n", "\r\n", "\u3000",
    "\u00a0", "\u2028", "\x1c", "Ｒｅａｃｔ", "ﬁ", "İ", "ß",
]
METACHARS = [
    "'; drop table memdb.memories; --", "&", "|", "!", ":*", "<->", "<2>", "\\", "'", '"', "%",
    "_", "$$", "$1", "%(x)s", "%s", "{}", "()", "\\u0000", "\\x00", "!(a & b) | c:*",
    "a <-> b", "' | '", "*", "?", "[", "]", "\\\\", "--", "/*", "*/", ";",
]
HOSTILE = SPECIAL + METACHARS
ANY_CHAR = st.characters(codec=None)  # every category, lone surrogates included

pieces = st.one_of(st.text(ANY_CHAR, max_size=12), st.sampled_from(HOSTILE))
texts = st.lists(pieces, max_size=6).map("".join)
clean_pieces = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12),
    st.sampled_from([h for h in HOSTILE if h not in ("\x00", "\ud800", "\udfff")]),
)
clean_texts = st.lists(clean_pieces, min_size=1, max_size=6).map("".join)
any_text = st.one_of(clean_texts, texts)
WHITESPACE = [chr(c) for c in range(0x110000) if chr(c).isspace()]


def _has_surrogate(s: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in s)


def deep(depth: int) -> dict[str, Any]:
    value: Any = "bottom"
    for level in range(depth):
        value = {"k": value} if level % 2 else [value]
    return {"deep": value}


json_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True), any_text,
)
json_values = st.recursive(
    json_leaves,
    lambda children: (st.lists(children, max_size=4)
                      | st.dictionaries(any_text, children, max_size=4)),
    max_leaves=20,
)
metadatas = st.one_of(
    st.none(),
    st.sampled_from(POOL_META),
    st.dictionaries(any_text, json_values, max_size=5),
    st.integers(1, 3000).map(deep),  # deeper than ~900: RecursionError in json.dumps
    st.integers(MAX_METADATA_DEPTH - 3, MAX_METADATA_DEPTH + 1).map(deep),
    st.integers(MAX_METADATA_BYTES - 40, MAX_METADATA_BYTES + 40).map(lambda n: {"big": "x" * n}),
    st.sampled_from([[], "k=v", 5, {"bad": object()}, {"nan": math.nan}, {1: "int key"},
                     {"n": {1: "a", "1": "b"}}, {"t": ("a", (1, 2.5))}]),
)
numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.floats(0, 1),
    st.integers(-(10**12), 10**12), st.sampled_from([True, False, "0.5", None, 1e-50, 5e-324]),
)
timestamps = st.one_of(
    st.none(),
    st.datetimes(timezones=st.none() | st.just(UTC) | st.builds(
        timezone, st.timedeltas(min_value=timedelta(hours=-23, minutes=-59),
                                max_value=timedelta(hours=23, minutes=59)))),
    st.sampled_from(["2024-01-01T00:00:00Z", "yesterday", "", 12345, "9999-12-31T23:59:59+00:00",
                     "0001-01-01T00:00:00+00:00", "2024-13-45"]),
)

# created_at for memories that stay in the shared database: not centuries old, which breaks
# every later search (test_search_over_a_very_old_memory)
recent_timestamps = st.one_of(
    st.datetimes(min_value=datetime(2000, 1, 1), timezones=st.none() | st.just(UTC)),
    st.sampled_from(["2024-01-01T00:00:00Z", "yesterday", "", 12345, "9999-12-31T23:59:59+00:00",
                     "2024-13-45", "2024-01-01T00:00:00+23:59"]),
)


def enum_values(enum_type: type) -> st.SearchStrategy:
    return st.sampled_from([e.value for e in enum_type] + ["bogus", "", "SEMANTIC", "'--"])


def one_or_many(strategy: st.SearchStrategy) -> st.SearchStrategy:
    return strategy | st.lists(strategy, max_size=3)


# -- oracles --------------------------------------------------------------------------------------
def ok_text(value: object, limit: int, blank_ok: bool = True) -> bool:
    return (isinstance(value, str) and len(value) <= limit and "\x00" not in value
            and not _has_surrogate(value) and (blank_ok or bool(value.strip())))


def ok_name(value: object) -> bool:
    return ok_text(value, MAX_NAME_CHARS, blank_ok=False)


def ok_scope_name(value: object) -> bool:
    """A subject or agent name: a name that is not one memdb reserves ('*')."""
    return ok_name(value) and value not in RESERVED_NAMES


def _walk(value: Any) -> Iterator[Any]:
    stack = [value]
    while stack:
        item = stack.pop()
        yield item
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)


def _depth(value: Any) -> int:
    """Levels of nested dicts and lists."""
    depth, level = 0, [value]
    while level:
        depth += 1
        level = [c for x in level for c in (x.values() if isinstance(x, dict) else x)
                 if isinstance(c, (dict, list, tuple))]
    return depth


def ok_metadata(value: object) -> bool | None:
    """True/False if metadata must be accepted/refused; None if either is fine."""
    if value is None:
        return True
    if not isinstance(value, dict):
        return False
    if _depth(value) > MAX_METADATA_DEPTH:
        return False
    for item in _walk(value):
        if isinstance(item, float) and not math.isfinite(item):
            return False
        if isinstance(item, str) and not ok_text(item, 10**9):
            return False
        if not isinstance(item, (dict, list, tuple, str, int, float, type(None))):
            return False
        if isinstance(item, dict) and not all(isinstance(k, str) for k in item):
            return False  # json.dumps would turn 1 into "1": not a round trip
    return len(json.dumps(value, ensure_ascii=False).encode()) <= MAX_METADATA_BYTES


def canon(value: Any) -> Any:
    """JSON value up to number representation (jsonb prints 1e308 as a 309-digit integer)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if isinstance(value, dict):
        return {k: canon(v) for k, v in value.items()}
    return [canon(v) for v in value]


def contains(container: Any, part: Any) -> bool:
    """jsonb's @> on canonical values."""
    if isinstance(part, dict):
        return isinstance(container, dict) and all(
            k in container and contains(container[k], v) for k, v in part.items())
    if isinstance(part, list):
        if not isinstance(container, list):
            return False
        return all(any(contains(c, p) if isinstance(p, (dict, list)) else c == p
                       and type(c) is type(p) for c in container) for p in part)
    return type(container) is type(part) and container == part


def expect_typed(error: BaseException) -> None:
    event(f"refused: {type(error).__name__}")
    assert isinstance(error, MemdbError), f"untyped {type(error).__name__}: {error}"
    assert not isinstance(error, psycopg.Error)


# MEMDB_PROP_SCALE=10 runs ten times the examples (a bug hunt; the default run takes ~40 s).
SCALE = float(os.environ.get("MEMDB_PROP_SCALE", "1"))


def n(examples: int) -> int:
    return max(1, int(examples * SCALE))


SETTINGS = dict(deadline=None, derandomize=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large])


# -- (1) add round-trips or fails typed, changing nothing ----------------------------------------
def add_args(text: st.SearchStrategy, meta: st.SearchStrategy, num: st.SearchStrategy,
             stamps: st.SearchStrategy) -> st.SearchStrategy:
    return st.fixed_dictionaries({
        "content": text, "subject": text, "tags": st.none() | st.lists(text, max_size=4),
        "metadata": meta, "source_id": st.none() | text,
        "extra": st.fixed_dictionaries({}, optional={
            "agent": text, "created_by": text, "norm_key": text, "search_context": text,
            "importance": num, "confidence": num, "ttl": num, "created_at": stamps}),
    })


@settings(max_examples=n(150), **SETTINGS)
@given(args=add_args(any_text, metadatas, numbers, recent_timestamps)
       | add_args(clean_texts, st.none() | st.dictionaries(clean_texts, json_values, max_size=4),
                  st.floats(0, 1), st.datetimes(min_value=datetime(2000, 1, 1))))
@example(args=dict(content="a\\u0000b", subject="s", tags=None, metadata={"k": "\\u0000"},
                   source_id=None, extra={}))  # a literal backslash-u-0000 is not a NUL
@example(args=dict(content="0", subject="0", tags=None, metadata={1: "int key"},
                   source_id=None, extra={}))  # json.dumps would store the key as "1"
@example(args=dict(content="0", subject="0", tags=None, metadata=None, source_id=None,
                   extra={"importance": 5.30795510035176e-227}))  # underflows real
@example(args=dict(content="0", subject="0", tags=None, metadata=None, source_id=None,
                   extra={"importance": 1e-45, "confidence": 1e-40}))  # subnormal real
@example(args=dict(content="0", subject="*", tags=None, metadata=None, source_id=None,
                   extra={}))  # '*' is reserved: refused, typed
@example(args=dict(content="0", subject="0", tags=None, metadata=None, source_id=None,
                   extra={"agent": "*"}))
def test_add_round_trips_or_fails_typed(ps, praw, args):
    content, subject, tags, metadata, source_id, extra = (
        args["content"], args["subject"], args["tags"], args["metadata"], args["source_id"],
        args["extra"])
    before = snapshot(praw)
    session = fresh_session()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            result = ps.add(content, subject=subject, tags=tags, metadata=metadata,
                            source_id=source_id, scope="session", session_id=session, **extra)
    except Exception as exc:  # noqa: BLE001 - the property is about the exception's type
        expect_typed(exc)
        assert snapshot(praw) == before, f"a failed add changed the database: {exc}"
        expected = _add_expected(content, subject, tags, metadata, source_id, extra)
        assert expected is not True, f"valid input refused: {type(exc).__name__}: {exc}"
        return
    assert _add_expected(content, subject, tags, metadata, source_id, extra) is not False, \
        "invalid input accepted"
    assert result.created
    event("stored")
    # a tiny ttl may already have expired: list(include_expired=True) still sees the row
    [m] = ps.list(session_id=session, include_expired=True)
    assert m.id == result.id
    assert m.content.encode() == content.encode()
    assert m.subject.encode() == subject.encode()
    assert set(m.tags) == set(tags or ())
    assert canon(m.metadata) == canon(metadata or {})
    assert m.source_id == source_id
    for key in ("agent", "created_by", "norm_key", "search_context"):
        if key in extra:
            assert getattr(m, key).encode() == extra[key].encode()
    for key in ("importance", "confidence"):
        if key in extra:
            want = extra[key]
            if key == "importance" and want is None:  # unset: scored from the text
                want = score_importance(m.content)
            assert math.isclose(getattr(m, key), want, rel_tol=1e-6, abs_tol=1e-38)
    assert m.version == 1 and m.has_embedding


def _add_expected(content, subject, tags, metadata, source_id, extra) -> bool | None:
    checks = [ok_text(content, MAX_CONTENT_CHARS, blank_ok=False), ok_scope_name(subject),
              tags is None or all(ok_name(t) for t in tags),
              source_id is None or ok_text(source_id, 1024)]
    for key, limit in (("agent", None), ("created_by", None), ("norm_key", 1024),
                       ("search_context", MAX_CONTENT_CHARS)):
        if key in extra:
            if key == "agent":
                checks.append(ok_scope_name(extra[key]))
            else:
                checks.append(ok_name(extra[key]) if limit is None else ok_text(extra[key], limit))
    for key in ("importance", "confidence"):
        if key in extra:
            x = extra[key]
            if key == "importance" and x is None:  # unset: scored from the text
                continue
            checks.append(isinstance(x, (int, float)) and not isinstance(x, bool)
                          and math.isfinite(x) and 0 <= x <= 1)
    if "ttl" in extra or "created_at" in extra:
        return None if all(checks) else False  # range of timestamps: PostgreSQL decides
    if not all(checks):
        return False
    return ok_metadata(metadata)


@settings(max_examples=n(40), **SETTINGS)
@given(blank=st.text(st.sampled_from(WHITESPACE), max_size=20))
def test_whitespace_only_content_is_refused(ps, praw, blank):
    before = snapshot(praw)
    with pytest.raises(InvalidInput):
        ps.add(blank, scope="session", session_id=fresh_session())
    assert snapshot(praw) == before


# Huge texts, CJK included: memdb.cjk_ngrams is linear (it once took ~25 s per 64K CJK memory).
HUGE_UNITS = ["a b ", "😀", "e\u0301", "'&|!:*", "مرحبا ", "𠜎", "长", "前端工程师 React "]


@settings(max_examples=n(6), **SETTINGS)
@given(size=st.integers(MAX_CONTENT_CHARS - 3, MAX_CONTENT_CHARS + 3),
       unit=st.sampled_from(HUGE_UNITS), with_context=st.booleans())
def test_huge_texts(ps, praw, size, unit, with_context):
    text = (unit * (size // len(unit) + 1))[:size]
    before = snapshot(praw)
    extra = {"search_context": text} if with_context else {}
    try:
        r = ps.add(text, scope="session", session_id=fresh_session(), **extra)
    except MemdbError as exc:
        assert size > MAX_CONTENT_CHARS, f"{size} characters refused: {exc}"
        assert isinstance(exc, InvalidInput)
        assert snapshot(praw) == before
    else:
        assert size <= MAX_CONTENT_CHARS
        assert ps.get(r.id).content == text
    hits = ps.search(text[:MAX_CONTENT_CHARS], k=3)
    assert len(hits) <= 3


@settings(max_examples=n(2), **SETTINGS)
@given(seed=st.integers(0, 2**32 - 1), cjk=st.sampled_from([(0x4E00, 0x9FFF), (0xAC00, 0xD7AF)]))
def test_huge_random_cjk_text(ps, praw, seed, cjk):
    """Mostly distinct bigrams: the biggest tsvector a memory of the limit's length can make."""
    codes = np.random.default_rng(seed).integers(cjk[0], cjk[1] + 1, size=MAX_CONTENT_CHARS)
    text = "".join(map(chr, codes.tolist()))
    r = ps.add(text, scope="session", session_id=fresh_session())
    assert ps.get(r.id).content == text
    assert len(ps.search(text[:500], k=5)) <= 5


# -- (2) list with arbitrary filters ---------------------------------------------------------------
names_or_pool = st.sampled_from(POOL_SUBJECTS) | any_text | st.sampled_from([5, None, b"x"])
tag_lists = st.lists(st.sampled_from(POOL_TAGS) | any_text, max_size=3) | st.sampled_from(
    ["drink", [1], None])
filters = st.fixed_dictionaries({}, optional={
    "subject": one_or_many(names_or_pool), "agent": one_or_many(names_or_pool),
    "scope": one_or_many(enum_values(Scope)), "project_id": one_or_many(any_text),
    "session_id": one_or_many(any_text), "kind": one_or_many(enum_values(Kind)),
    "category": one_or_many(enum_values(Category)),
    "source_type": one_or_many(enum_values(SourceType)),
    "tags": tag_lists, "tags_any": tag_lists,
    "created_after": timestamps, "created_before": timestamps,
    "min_importance": numbers, "metadata": metadatas,
    "include_expired": st.booleans() | st.sampled_from(["yes", 1]),
    "bogus": st.just(1),
})


def _as_tuple(value: Any) -> tuple:
    return (value,) if isinstance(value, str) else tuple(value)


def _aware(stamp: datetime | str) -> datetime:
    stamp = datetime.fromisoformat(stamp) if isinstance(stamp, str) else stamp
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def check_matches(m: Any, flt: dict[str, Any], now: datetime) -> None:
    for key in ("subject", "agent", "scope", "project_id", "session_id", "kind", "category",
                "source_type"):
        if flt.get(key) is not None:
            assert getattr(m, key) in _as_tuple(flt[key]), (key, m)
    if flt.get("tags") is not None:
        assert set(flt["tags"]) <= set(m.tags)
    if flt.get("tags_any") is not None:
        assert set(flt["tags_any"]) & set(m.tags)
    if flt.get("created_after") is not None:
        assert m.created_at >= _aware(flt["created_after"])
    if flt.get("created_before") is not None:
        assert m.created_at < _aware(flt["created_before"])
    if flt.get("min_importance") is not None:
        # both sides as real (psycopg reads a real as its shortest decimal text)
        assert np.float32(m.importance) >= np.float32(flt["min_importance"])
    if flt.get("metadata") is not None:
        assert contains(canon(m.metadata), canon(flt["metadata"]))
    assert m.valid_to is None
    if not flt.get("include_expired"):
        assert m.expires_at is None or m.expires_at > now - timedelta(seconds=5)


valid_filters = st.fixed_dictionaries({}, optional={
    "subject": st.sampled_from(POOL_SUBJECTS) | st.lists(st.sampled_from(POOL_SUBJECTS),
                                                         min_size=1, max_size=3),
    "agent": st.sampled_from(POOL_SUBJECTS),
    "kind": st.sampled_from([e.value for e in Kind]),
    "tags": st.lists(st.sampled_from(POOL_TAGS), max_size=2),
    "tags_any": st.lists(st.sampled_from(POOL_TAGS), min_size=1, max_size=3),
    "created_after": st.datetimes(min_value=datetime(2000, 1, 1), timezones=st.just(UTC)),
    "min_importance": st.floats(0, 1),
    "metadata": st.sampled_from(POOL_META + [{"nested": {"a": [2]}}, {}]),
    "include_expired": st.booleans(),
})


@settings(max_examples=n(150), **SETTINGS)
@given(flt=filters | valid_filters, as_dict=st.booleans())
@example(flt={"min_importance": 1 / 3}, as_dict=False)
@example(flt={"min_importance": 1.401298464324817e-45}, as_dict=False)  # subnormal real
@example(flt={"min_importance": 5e-227}, as_dict=False)  # underflows real
def test_list_matches_filter_or_refuses(ps, praw, flt, as_dict):
    before = snapshot(praw)
    now = datetime.now(UTC)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            found = ps.list(flt, limit=1000) if as_dict else ps.list(limit=1000, **flt)
    except Exception as exc:  # noqa: BLE001
        expect_typed(exc)
        assert isinstance(exc, InvalidInput), f"{type(exc).__name__}: {exc}"
        assert snapshot(praw) == before
        return
    assert "bogus" not in flt
    event("listed: some" if found else "listed: none")
    for m in found:
        check_matches(m, flt, now)
    assert snapshot(praw) == before  # listing is read-only


# -- (3) search with arbitrary arguments ----------------------------------------------------------
ks = st.integers(-3, MAX_K + 3) | st.sampled_from([0, True, 2.5, "3", None, 10**12, MAX_K])
routes = st.none() | st.lists(st.sampled_from(list(ROUTES) + ["graph", "", "VECTOR"]), max_size=4)
weights = st.none() | st.dictionaries(st.sampled_from(list(ROUTES) + ["graph"]), numbers,
                                      max_size=3)
mmrs = st.none() | st.booleans() | numbers
decays = st.none() | st.dictionaries(
    st.sampled_from(["decay_weight", "half_life_days", "hotness_weight", "importance_weight",
                     "bogus"]), numbers, max_size=3) | st.sampled_from([[], "half"])


@settings(max_examples=n(120), **SETTINGS)
@given(query=any_text | st.sampled_from(["green tea", "seed memory", "前端", "alice"]),
       k=st.integers(1, MAX_K) | ks,
       routes=st.none() | st.sampled_from([("vector",), ("bm25", "exact"), ROUTES]) | routes,
       weights=st.none() | st.dictionaries(st.sampled_from(ROUTES), st.floats(0, 10)) | weights,
       mmr=st.none() | st.floats(0, 1) | mmrs, decay=st.none() | decays,
       subject=st.none() | st.sampled_from(POOL_SUBJECTS))
@example(query="green tea", k=True, routes=None, weights=None, mmr=None, decay=None,
         subject=None)
def test_search_returns_at_most_k_or_refuses(ps, praw, query, k, routes, weights, mmr, decay,
                                             subject):
    before_rows = snapshot(praw)[:2]
    try:
        hits = ps.search(query, k=k, routes=routes, weights=weights, mmr=mmr, decay=decay,
                         subject=subject)
    except Exception as exc:  # noqa: BLE001
        expect_typed(exc)
        assert isinstance(exc, InvalidInput), f"{type(exc).__name__}: {exc}"
        assert snapshot(praw)[:2] == before_rows
        return
    assert not isinstance(k, bool) and isinstance(k, int) and 1 <= k <= MAX_K
    assert len(hits) <= k
    event("searched: hits" if hits else "searched: none")
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(math.isfinite(h.score) for h in hits)
    if subject is not None:
        assert all(h.memory.subject == subject for h in hits)


metachar_queries = st.lists(st.sampled_from(METACHARS + ["tea", "green", "前端", "alice"]),
                            min_size=1, max_size=8).map(" ".join) | st.lists(
    st.sampled_from(METACHARS), min_size=1, max_size=8).map("".join)


@settings(max_examples=n(80), **SETTINGS)
@given(query=metachar_queries, k=st.integers(1, MAX_K),
       routes=st.none() | st.sampled_from([("bm25",), ("exact",), ("bm25", "exact"), ROUTES]))
@example(query="'; drop table memdb.memories; --", k=5, routes=("bm25",))
@example(query="!(a & b) | c:* <-> \\", k=1, routes=None)
def test_metacharacter_queries_never_fail(ps, query, k, routes):
    hits = ps.search(query, k=k, routes=routes)
    assert len(hits) <= k


# memdb.time_decay runs for every candidate (even at decay_weight 0); PostgreSQL's power()
# raises "value out of range: underflow" past an exponent of ~1075, so the exponent is capped.
# These two searches once failed on it.
def test_search_over_a_very_old_memory(ps):
    session = fresh_session()
    r = ps.add("a memory from the eighteenth century", created_at="1700-01-01T00:00:00Z",
               scope="session", session_id=session)
    try:
        assert len(ps.search("eighteenth century memory", k=5, session_id=session)) == 1
    finally:
        ps.delete(r.id)


def test_search_with_a_short_half_life(ps):
    session = fresh_session()
    ps.add("a memory from 2020", created_at="2020-01-01T00:00:00Z", scope="session",
           session_id=session)
    hits = ps.search("memory from 2020", k=5, session_id=session,
                     decay={"decay_weight": 0.5, "half_life_days": 1})
    assert len(hits) == 1


# Content and search_context are indexed together (memdb.tokenize), and PostgreSQL caps a
# tsvector at 1 MB: two texts within their 65,536-character limits, of mostly distinct CJK
# bigrams, make a 1.2 MB tsvector (SQLSTATE 54000 if written). MemoryStore asks
# memdb.keyword_index_fits first: refused, typed, before the gate and embedding (it used to
# fail after 12.7 s of work, a known xfail here); each text with half the other still fits.


def cjk_runs(seed: int, run: int = 8) -> str:
    chars = [chr(c) for c in np.random.default_rng(seed).integers(
        0x4E00, 0x9FFF + 1, size=MAX_CONTENT_CHARS).tolist()]
    for i in range(run, MAX_CONTENT_CHARS, run + 1):
        chars[i] = " "  # short runs: cjk_ngrams is quadratic in the run length only
    return "".join(chars)


def test_biggest_tsvector_is_refused_before_embedding_and_half_of_it_is_stored(ps, praw,
                                                                              monkeypatch):
    text, context = cjk_runs(1), cjk_runs(2)
    embedded: list[int] = []
    real = ps.embedder.embed_passages
    monkeypatch.setattr(ps.embedder, "embed_passages",
                        lambda texts: embedded.append(len(texts)) or real(texts))
    before = snapshot(praw)
    with pytest.raises(InvalidInput, match="1 MB tsvector limit"):
        ps.add(text, search_context=context, scope="session", session_id=fresh_session())
    assert embedded == [] and snapshot(praw) == before
    mid = ps.add("a memory to update", scope="session", session_id=fresh_session()).id
    embedded.clear()
    updated = snapshot(praw)
    with pytest.raises(InvalidInput, match="1 MB tsvector limit"):
        ps.update(mid, content=text, search_context=context)
    assert embedded == [] and snapshot(praw) == updated
    ps.delete(mid)
    assert snapshot(praw)[:3] == before[:3]
    r = ps.add(text, search_context=context[: MAX_CONTENT_CHARS // 2], scope="session",
               session_id=fresh_session())
    assert ps.get(r.id).content == text


# -- (4) update content ----------------------------------------------------------------------------
@settings(max_examples=n(100), **SETTINGS)
@given(content=any_text, also=st.fixed_dictionaries({}, optional={
    "importance": numbers, "metadata": metadatas,
    "tags": st.none() | st.lists(any_text, max_size=3), "source_id": st.none() | any_text}))
def test_update_content_round_trips_or_changes_nothing(ps, praw, content, also):
    original = f"update seed {next(_seq)}"
    mid = ps.add(original, scope="session", session_id=fresh_session()).id
    old = ps.get(mid)
    before = snapshot(praw)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            m = ps.update(mid, content=content, **also)
    except Exception as exc:  # noqa: BLE001
        expect_typed(exc)
        assert ps.get(mid) == old, f"a failed update changed the row: {exc}"
        assert snapshot(praw) == before
        assert not ok_text(content, MAX_CONTENT_CHARS, blank_ok=False) or also, \
            f"valid content refused: {type(exc).__name__}: {exc}"
        return
    assert ok_text(content, MAX_CONTENT_CHARS, blank_ok=False), "invalid content accepted"
    event("updated")
    assert m.content.encode() == content.encode()
    assert ps.get(mid).content.encode() == content.encode()
    if content != original:
        assert m.version == old.version + 1
    else:
        assert m.version in (old.version, old.version + 1)
    if "metadata" in also:
        assert canon(m.metadata) == canon(also["metadata"] or {})


# -- (5) vectors ----------------------------------------------------------------------------------
float_vectors = st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), max_size=12)
vectors = st.one_of(
    float_vectors,
    st.lists(st.floats(-1e6, 1e6), min_size=DIMS, max_size=DIMS),
    st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=DIMS,
             max_size=DIMS),
    st.lists(st.sampled_from([0.0, 1e-45, 1e-40, 3e38, -3e38, 1e39, 1.0]), min_size=DIMS,
             max_size=DIMS),
    st.lists(st.one_of(st.integers(-10, 10), st.booleans(), st.none(), st.text(max_size=3)),
             min_size=DIMS, max_size=DIMS),
    st.sampled_from([None, "vector", [[0.1] * DIMS], {"a": 1}, np.ones(DIMS),
                     np.ones(DIMS, dtype=np.float64) * np.nan]),
)


def vector_expected(vec: Any) -> bool | None:
    if not isinstance(vec, list) or not all(isinstance(x, float) for x in vec):
        return None
    if len(vec) != DIMS:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        arr = np.asarray(vec, dtype=np.float32)
    return bool(np.all(np.isfinite(arr)) and np.any(arr))


@settings(max_examples=n(120), **SETTINGS)
@given(vec=vectors, k=st.integers(1, 20))
@example(vec=[1e-45] * DIMS, k=5)
@example(vec=[3e38] * DIMS, k=5)
def test_vectors_are_used_or_refused(ps, praw, vec, k):
    expected = vector_expected(vec)
    before = snapshot(praw)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            r = ps.add(f"vector memory {next(_seq)}", embedding=vec, scope="session",
                       session_id=fresh_session())
    except Exception as exc:  # noqa: BLE001
        expect_typed(exc)
        assert isinstance(exc, InvalidInput)  # DimensionMismatch is one too
        if isinstance(vec, list) and len(vec) != DIMS and expected is False:
            assert isinstance(exc, DimensionMismatch)
        assert snapshot(praw) == before
        assert expected is not True, f"valid vector refused: {exc}"
    else:
        assert expected is not False, "invalid vector accepted"
        event("vector stored")
        assert ps.get(r.id).has_embedding
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            hits = ps.search_by_vector(vec, k=k)
    except Exception as exc:  # noqa: BLE001
        expect_typed(exc)
        assert isinstance(exc, InvalidInput)
        assert expected is not True, f"valid vector refused: {exc}"
        return
    assert expected is not False
    assert len(hits) <= k
    assert all(math.isfinite(h.score) for h in hits)
