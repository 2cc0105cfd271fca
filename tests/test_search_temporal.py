"""Temporal search (search option ``temporal``, memdb.temporal_boost) against a real database:
relative time words in a memory resolve against the memory's own time (memdb.time_range),
questions about time are recognised (memdb.temporal_intent), a memory that carries a time
passes one that only shares the words, and a time the query names (resolved against as_of)
picks the memory whose event falls in it; on by default in the store (weight 1: the
cross-validated choice; the SQL default is off), temporal=0 turns it off; bad options refused.

Searches run the BM25 route alone, so the word matches are fixed and only the option moves
the ranking; the distractors match the query's words better on purpose.
"""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest
from psycopg.types.json import Jsonb

from memdb import InvalidInput, MemoryStore
from memdb.retrieval.search import SearchOptions
from tests.cli_helpers import ok_json

BM25 = ["bm25"]
AS_OF = datetime(2023, 10, 1, tzinfo=UTC)


@pytest.mark.parametrize("text, said, expected", [
    ("I went to a support group yesterday", "2023-05-08 13:56+00", ("2023-05-07", "2023-05-08")),
    ("I ran a charity race last Saturday", "2023-05-25 13:14+00", ("2023-05-20", "2023-05-21")),
    ("we went camping two weekends ago", "2023-07-17 14:31+00", ("2023-06-30", "2023-07-07")),
    ("my school event last week was awesome", "2023-06-09 19:55+00", ("2023-05-29", "2023-06-05")),
    ("a friend made it ten years ago", "2023-06-27 10:37+00", ("2013-01-01", "2014-01-01")),
    ("We had a blast last year at the Pride fest", "2023-08-17+00", ("2022-01-01", "2023-01-01")),
    ("I'm going to a conference this month", "2023-07-03+00", ("2023-07-01", "2023-08-01")),
    ("we met on 7 May 2023", "2024-01-01+00", ("2023-05-07", "2023-05-08")),
    ("back in June, we moved", "2023-10-01+00", ("2023-06-01", "2023-07-01")),
    ("in December we moved", "2023-10-01+00", ("2022-12-01", "2023-01-01")),
    ("the book I read in 2022", "2023-07-12+00", ("2022-01-01", "2023-01-01")),
    ("我昨天去了互助小组", "2023-05-08 13:56+00", ("2023-05-07", "2023-05-08")),
    ("上周五我们去做陶艺", "2023-07-15+00", ("2023-07-14", "2023-07-15")),
    ("我们三天前去露营了", "2023-07-17+00", ("2023-07-14", "2023-07-15")),
    ("上周学校有个活动", "2023-06-09+00", ("2023-05-29", "2023-06-05")),
    ("去年我们一起去了骄傲节", "2023-08-17+00", ("2022-01-01", "2023-01-01")),
    ("两年前搬到这里", "2023-08-17+00", ("2021-01-01", "2022-01-01")),
    ("2023年5月7日见面", "2024-01-01+00", ("2023-05-07", "2023-05-08")),
    ("六月我们搬家了", "2023-10-01+00", ("2023-06-01", "2023-07-01")),
    ("I like camping with the kids", "2023-07-17+00", None),
    ("我喜欢和孩子们露营", "2023-07-17+00", None),
    ("it may rain, this may be hard", "2023-07-17+00", None),
])
def test_time_words_resolve_against_the_time_they_were_said(raw, text, said, expected):
    got = raw.execute("SELECT lower(r)::date::text, upper(r)::date::text"
                      " FROM memdb.time_range(%s, %s::timestamptz) r", (text, said)).fetchone()
    assert (got if got != (None, None) else None) == expected


@pytest.mark.parametrize("query, expected", [
    ("When did Caroline go to the LGBTQ support group?", True),
    ("How long ago was Caroline's 18th birthday?", True),
    ("What did Melanie do after the race?", True),
    ("张三什么时候去露营的？", True),
    ("李四搬家多久了？", True),
    ("What is Caroline's favourite book?", False),
    ("张三喜欢什么运动？", False),
])
def test_temporal_intent(raw, query, expected):
    assert raw.execute("SELECT memdb.temporal_intent(%s)", (query,)).fetchone()[0] is expected


def add(store: MemoryStore, text: str, when: datetime, subject: str = "mel"):
    return store.add(text, subject=subject, created_at=when).id


CASES = {
    "english": dict(
        plain="Melanie loves camping. Camping with the kids is Melanie's favourite thing.",
        timed="Melanie: we went camping last week.",
        query="When did Melanie go camping?"),
    "chinese": dict(
        plain="张三爱去露营，张三总去露营。",
        timed="张三上周和朋友们一起去露营了，玩得很开心。",
        query="张三什么时候去露营？"),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES)
def test_a_memory_that_carries_a_time_answers_a_when_question(store: MemoryStore, case):
    plain = add(store, case["plain"], datetime(2023, 7, 20, tzinfo=UTC))
    timed = add(store, case["timed"], datetime(2023, 6, 27, tzinfo=UTC))
    off = store.search(case["query"], k=5, subject="mel", routes=BM25, as_of=AS_OF,
                       options=SearchOptions(temporal=0))
    assert [h.memory.id for h in off] == [plain, timed]  # the words favour the plain memory
    on = store.search(case["query"], k=5, subject="mel", routes=BM25, as_of=AS_OF,
                      options=SearchOptions(temporal=1.0))
    assert [h.memory.id for h in on] == [timed, plain]
    assert on[0].score == pytest.approx(2 * off[1].score)
    # the store's default is weight 1
    default = store.search(case["query"], k=5, subject="mel", routes=BM25, as_of=AS_OF)
    assert [(h.memory.id, h.score) for h in default] == [(h.memory.id, h.score) for h in on]
    # a question that is not about time: the option changes nothing
    other = "张三的爱好是露营吗" if "张三" in case["query"] else "Does Melanie like camping?"
    assert ([h.score for h in store.search(other, k=5, subject="mel", routes=BM25,
                                           options=SearchOptions(temporal=1.0))]
            == [h.score for h in store.search(other, k=5, subject="mel", routes=BM25,
                                              options=SearchOptions(temporal=0))])


RANGE_CASES = {
    "english": dict(july="Melanie: camping yesterday was fun, camping by the lake with the kids.",
                    june="Melanie: we went camping last week.",
                    query="When did Melanie go camping in June?"),
    "chinese": dict(july="张三：昨天去露营了，露营真好玩，张三很开心。",
                    june="张三：上周去露营了。",
                    query="张三六月什么时候去露营？"),
}


@pytest.mark.parametrize("case", RANGE_CASES.values(), ids=RANGE_CASES)
def test_a_time_the_query_names_picks_the_memory_of_that_time(store: MemoryStore, case):
    july = add(store, case["july"], datetime(2023, 7, 16, 12, tzinfo=UTC))
    june = add(store, case["june"], datetime(2023, 6, 27, 10, tzinfo=UTC))  # last week: June 19-25
    off = store.search(case["query"], k=5, subject="mel", routes=BM25, as_of=AS_OF,
                       options=SearchOptions(temporal=False))
    assert [h.memory.id for h in off] == [july, june]
    on = store.search(case["query"], k=5, subject="mel", routes=BM25, as_of=AS_OF,
                      options=SearchOptions(temporal=0.5))
    assert [h.memory.id for h in on] == [june, july]
    assert on[0].details["multiplier"] == pytest.approx(2.0)
    assert on[1].details["multiplier"] == pytest.approx(1.5)
    default = store.search(case["query"], k=5, subject="mel", routes=BM25, as_of=AS_OF)
    assert [h.memory.id for h in default] == [june, july]  # weight 1: 3 and 2
    assert [h.details["multiplier"] for h in default] == pytest.approx([3.0, 2.0])


def test_the_query_time_resolves_against_as_of(store: MemoryStore):
    """"last year" asked in 2024 is 2023; asked in 2023 it is 2022."""
    old = add(store, "Melanie painted a sunrise, a lovely sunrise over the lake, in 2022.",
              datetime(2023, 3, 1, tzinfo=UTC))
    new = add(store, "Melanie painted a sunrise in March 2023.", datetime(2023, 3, 1, tzinfo=UTC))
    query, on = "What did Melanie paint last year?", SearchOptions(temporal=1.0)
    hits = store.search(query, k=5, subject="mel", routes=BM25, options=on,
                        as_of=datetime(2024, 1, 5, tzinfo=UTC))
    assert [h.memory.id for h in hits] == [new, old]
    hits = store.search(query, k=5, subject="mel", routes=BM25, options=on,
                        as_of=datetime(2023, 6, 1, tzinfo=UTC))
    assert [h.memory.id for h in hits] == [old, new]


@pytest.mark.parametrize("options", [{"temporal": -0.1}, {"temporal": 11}, {"temporal": "on"}])
def test_bad_temporal_options_are_refused_in_sql(raw, options):
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        raw.execute("SELECT * FROM memdb.search_hybrid('default', 'when', NULL, 5, '{}', %s)",
                    (Jsonb(options),))


@pytest.mark.parametrize("value", [-1.0, 10.5, "on", float("nan")])
def test_bad_temporal_options_are_refused_in_python(store: MemoryStore, value):
    mid = add(store, "we went camping last week", datetime(2023, 6, 27, tzinfo=UTC))
    with pytest.raises(InvalidInput):
        store.search("when did we go camping", routes=BM25, options=SearchOptions(temporal=value))
    assert store.get(mid).access_count == 0  # nothing changed


def test_the_cli_switches_temporal_off_and_on(store: MemoryStore, fresh_db, monkeypatch, tmp_path):
    monkeypatch.setenv("MEMDB_HOME", str(tmp_path / "home"))
    case = CASES["chinese"]
    plain = add(store, case["plain"], datetime(2023, 7, 20, tzinfo=UTC))
    timed = add(store, case["timed"], datetime(2023, 6, 27, tzinfo=UTC))
    args = ("search", case["query"], "--route", "bm25", "--subject", "mel")
    off = ok_json(fresh_db, *args, "--temporal", "0", "--explain")
    assert [h["memory"]["id"] for h in off["hits"]] == [str(plain), str(timed)]
    assert off["explain"]["params"]["options"]["temporal"] == 0.0
    for on in (ok_json(fresh_db, *args, "--temporal", "1", "--explain"),
               ok_json(fresh_db, *args, "--explain")):  # the default: weight 1
        assert [h["memory"]["id"] for h in on["hits"]] == [str(timed), str(plain)]
        assert on["explain"]["params"]["options"]["temporal"] == 1.0


def test_true_is_the_cross_validated_weight():
    assert SearchOptions(temporal=True).to_json() == {"temporal": 1.0}
    assert SearchOptions(temporal=False).to_json() == {"temporal": 0.0}
    assert "temporal" not in SearchOptions().to_json()


# -- the event time stored at write time (revision 0017) ---------------------------------------
# memories.event_time = memdb.time_range(content, valid_from) and memories.names_time (content
# carries a time) are derived by the memories_before_write trigger; the search reads them.
STORED = """SELECT lower(event_time)::date::text, upper(event_time)::date::text, names_time
            FROM memdb.memories WHERE id = %s"""
# what resolving the content at query time gives (the search before revision 0017)
DERIVED = """SELECT lower(r)::date::text, upper(r)::date::text,
                    r IS NOT NULL OR memdb.time_words(content)
             FROM memdb.memories, memdb.time_range(content, valid_from) r WHERE id = %s"""
JUNE_27 = datetime(2023, 6, 27, 10, tzinfo=UTC)
LAST_WEEK = ("2023-06-19", "2023-06-26")  # said on 27 June 2023: Monday 19 to Sunday 25
WRITES = {
    "english": dict(timed="we went camping last week", duration="I have known them for 4 years",
                    plain="I like camping with the kids", yesterday="we went camping yesterday"),
    "chinese": dict(timed="张三上周去露营了", duration="我们是三年的朋友",
                    plain="我喜欢和孩子们露营", yesterday="张三昨天去露营了"),
}


def stored(raw, mid):
    row = raw.execute(STORED, (mid,)).fetchone()
    assert row == raw.execute(DERIVED, (mid,)).fetchone()  # never out of step with the content
    return row


@pytest.mark.parametrize("case", WRITES.values(), ids=WRITES)
def test_the_event_time_is_stored_on_add_and_add_many(store: MemoryStore, raw, case):
    timed, duration, plain = (add(store, case[k], JUNE_27) for k in ("timed", "duration", "plain"))
    assert stored(raw, timed) == (*LAST_WEEK, True)
    assert stored(raw, duration) == (None, None, True)  # a duration: carries a time, no range
    assert stored(raw, plain) == (None, None, False)
    batch = store.add_many([{"content": case[k] + " (batch)", "subject": "batch",
                             "created_at": JUNE_27} for k in ("timed", "duration", "plain")])
    assert [stored(raw, r.id) for r in batch] == [
        (*LAST_WEEK, True), (None, None, True), (None, None, False)]


@pytest.mark.parametrize("case", WRITES.values(), ids=WRITES)
def test_the_event_time_follows_content_and_valid_from(store: MemoryStore, raw, case):
    mid = add(store, case["plain"], JUNE_27)
    assert stored(raw, mid) == (None, None, False)
    mid = store.update(mid, content=case["yesterday"]).id
    assert stored(raw, mid) == ("2023-06-26", "2023-06-27", True)
    raw.execute("UPDATE memdb.memories SET valid_from = '2023-07-10 09:00+00' WHERE id = %s",
                (mid,))
    assert stored(raw, mid) == ("2023-07-09", "2023-07-10", True)
    # an update that sets the columns re-derives them: they cannot be forged
    raw.execute("UPDATE memdb.memories SET event_time = '[2000-01-01,2000-01-02)',"
                " names_time = false WHERE id = %s", (mid,))
    assert stored(raw, mid) == ("2023-07-09", "2023-07-10", True)
    version = raw.execute("SELECT version FROM memdb.memories WHERE id = %s", (mid,)).fetchone()
    raw.execute("UPDATE memdb.memories SET names_time = NULL WHERE id = %s", (mid,))  # re-derive
    assert stored(raw, mid) == ("2023-07-09", "2023-07-10", True)
    assert raw.execute("SELECT version FROM memdb.memories WHERE id = %s",
                       (mid,)).fetchone() == version  # not a change of the memory


RANKING_MEMORIES = [
    ("Melanie: we went camping last week, camping by the lake.", JUNE_27),
    ("Melanie loves camping. Camping with the kids is Melanie's favourite thing.", JUNE_27),
    ("Melanie has been camping for 4 years, camping every summer.",
     datetime(2023, 7, 20, tzinfo=UTC)),
    ("Melanie went camping yesterday and painted the lake.", datetime(2023, 7, 16, tzinfo=UTC)),
    ("Melanie painted a sunrise in 2022, before camping.", datetime(2023, 3, 1, tzinfo=UTC)),
    ("张三上周和朋友们一起去露营了。", JUNE_27),
    ("张三爱去露营，张三总去露营。", datetime(2023, 7, 20, tzinfo=UTC)),
    ("张三露营三年了，去年夏天也去露营。", datetime(2023, 8, 1, tzinfo=UTC)),
    ("张三六月去露营了。", datetime(2023, 10, 1, tzinfo=UTC)),
]
# the factor each memory gets when its content is resolved at query time (the function path)
FUNCTION_PATH = """
SELECT memdb.temporal_boost(r, r IS NOT NULL OR memdb.time_words(m.content), m.valid_from,
                            memdb.temporal_intent(%(q)s), memdb.time_range(%(q)s, %(as_of)s), %(w)s)
FROM memdb.memories m, memdb.time_range(m.content, m.valid_from) r WHERE m.id = %(id)s"""


@pytest.mark.parametrize("query", [
    "When did Melanie go camping?", "When did Melanie go camping in June?",
    "What did Melanie paint last year?", "Does Melanie like camping?",
    "张三什么时候去露营？", "张三六月什么时候去露营？", "张三去年去露营了吗"])
def test_the_ranking_is_the_one_of_resolving_the_content_at_query_time(store: MemoryStore, raw,
                                                                       query):
    for text, when in RANKING_MEMORIES:
        add(store, text, when)
    for w in (0.5, 2.0):
        hits = store.search(query, k=20, subject="mel", routes=BM25, as_of=AS_OF,
                            options=SearchOptions(temporal=w))
        assert hits
        expected = {h.memory.id: raw.execute(FUNCTION_PATH, {
            "q": query, "as_of": AS_OF, "w": w, "id": h.memory.id}).fetchone()[0] for h in hits}
        assert {h.memory.id: h.details["multiplier"] for h in hits} == pytest.approx(expected)
        by_function = sorted(hits, key=lambda h: (-h.details["fused"] * expected[h.memory.id],
                                                  str(h.memory.id)))
        assert [h.memory.id for h in hits] == [h.memory.id for h in by_function]
