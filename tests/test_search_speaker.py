"""Speaker match (search option ``speaker`` / SQL ``speaker_boost``; memdb.speaker_of) against a
real database: a memory written as a transcript line "Name: text" whose speaker the query
names scores (1 + weight) times as much, so what the named person said passes what the other
person said about the same words; off by default; a query naming nobody is unchanged; bad
options refused in SQL and in Python; the CLI switches it. English and Chinese.
"""

from __future__ import annotations

import psycopg
import pytest
from psycopg.types.json import Jsonb

from memdb import InvalidInput, MemoryStore
from memdb.retrieval.search import SearchOptions
from tests.cli_helpers import ok_json, run

ROUTES = ["bm25", "exact"]
CASES = {
    "english": {
        "query": "What books has Melanie read?",
        "unnamed": "What books were read?",
        "target": "Melanie: I read a book about the ocean last month.",
        "other": "Caroline: Books, books, books! I read so many books this year.",
        "filler": ["Melanie: The kids loved the camping trip.", "Caroline: I went to the parade.",
                   "Melanie: Pottery class was fun.", "Caroline: The support group helped me.",
                   "Melanie: We went to the beach."],
    },
    "chinese": {
        "query": "梅兰妮读过什么书？",
        "unnamed": "读过什么书？",
        "target": "梅兰妮：上个月看完了一本关于大海的书。",
        "other": "卡罗琳：我读过什么书？读过很多书，读过的书都记得。",
        "filler": ["梅兰妮：孩子们很喜欢露营。", "卡罗琳：我去参加了游行。",
                   "梅兰妮：陶艺课很有趣。", "卡罗琳：互助小组帮了我。", "梅兰妮：我们去了海边。"],
    },
}


def setup(store: MemoryStore, case: dict) -> tuple[object, object]:
    target = store.add(case["target"], subject="amy").id
    other = store.add(case["other"], subject="amy").id
    for text in case["filler"]:
        store.add(text, subject="amy")
    return target, other


def ids(hits) -> list:
    return [h.memory.id for h in hits]


@pytest.mark.parametrize("lang", CASES)
def test_the_named_speaker_passes_the_other(store: MemoryStore, lang):
    case = CASES[lang]
    target, other = setup(store, case)
    off = ids(store.search(case["query"], k=5, subject="amy", routes=ROUTES))
    assert off.index(other) < off.index(target)  # the other speaker's line matches more words

    hits = store.search(case["query"], k=5, subject="amy", routes=ROUTES,
                        options=SearchOptions(speaker=True))
    assert ids(hits)[0] == target and other in ids(hits)
    top = hits[0]
    assert top.details["multiplier"] == pytest.approx(1.5)  # default weight 0.5
    assert top.score == pytest.approx(1.5 * top.details["fused"])
    assert hits[ids(hits).index(other)].details["multiplier"] == pytest.approx(1.0)

    heavier = store.search(case["query"], k=5, subject="amy", routes=ROUTES,
                           options=SearchOptions(speaker=True, speaker_weight=2.0))
    assert heavier[0].details["multiplier"] == pytest.approx(3.0)
    for off_options in (SearchOptions(speaker=False), SearchOptions(speaker_weight=2.0),
                        SearchOptions(speaker=True, speaker_weight=0.0)):
        same = store.search(case["query"], k=5, subject="amy", routes=ROUTES,
                            options=off_options)
        assert ids(same) == off


@pytest.mark.parametrize(("content", "boosted"), [
    ("Melanie: books!", True), ("  melanie ：books!", True), ("Melanie loves books", False),
    ("Melanie, about the books you read: tell me", False),
    ("Melanie" + " " * 40 + ": books", False),  # the colon past the 42 characters read
    ("Caroline: Melanie read books", False),
])
def test_only_a_line_the_named_speaker_says_is_boosted(store: MemoryStore, content, boosted):
    store.add(content, subject="amy")
    hit = store.search("What books has Melanie read?", k=1, subject="amy", routes=ROUTES,
                       options=SearchOptions(speaker=True, speaker_weight=1.0))[0]
    assert hit.details["multiplier"] == pytest.approx(2.0 if boosted else 1.0)


@pytest.mark.parametrize("lang", CASES)
def test_a_query_naming_nobody_is_unchanged(store: MemoryStore, lang):
    case = CASES[lang]
    setup(store, case)
    plain = store.search(case["unnamed"], k=5, subject="amy", routes=ROUTES)
    on = store.search(case["unnamed"], k=5, subject="amy", routes=ROUTES,
                      options=SearchOptions(speaker=True, speaker_weight=5.0))
    assert ids(on) == ids(plain)
    assert [h.score for h in on] == pytest.approx([h.score for h in plain])


@pytest.mark.parametrize(("content", "speaker"), [
    ("Melanie: I read a book", "melanie"), ("  Dr. Jane O'Neil : hello", "dr. jane o'neil"),
    ("梅兰妮：我读了一本书", "梅兰妮"), ("张三: 我下周去杭州", "张三"),
    ("no speaker here", None), ("Ten o'clock: we meet", "ten o'clock"),
    ("a b c d e: five words are no name", None), (": empty", None), ("1999: a year", None),
])
def test_speaker_of(raw, content, speaker):
    assert raw.execute("SELECT memdb.speaker_of(%s)", (content,)).fetchone()[0] == speaker


def test_speaker_boost_in_sql_and_fused(store: MemoryStore, raw):
    case = CASES["english"]
    target, other = setup(store, case)
    sql = ("SELECT id FROM memdb.search_hybrid('default', %s, NULL, 5, '{\"subject\": \"amy\"}',"
           " %s) ORDER BY rank")
    off = [r[0] for r in raw.execute(sql, (case["query"], Jsonb({"routes": ROUTES}))).fetchall()]
    on = [r[0] for r in raw.execute(sql, (case["query"], Jsonb({"routes": ROUTES,
                                                                  "speaker_boost": 1}))).fetchall()]
    assert off.index(other) < off.index(target) and on[0] == target
    fused = [r[0] for r in raw.execute(
        "SELECT id FROM memdb.search_fused('default', %s, NULL, 5, '{\"subject\": \"amy\"}', %s)"
        " ORDER BY rank", (Jsonb([{"query": case["query"]}]),
                           Jsonb({"routes": ROUTES, "speaker_boost": 1}))).fetchall()]
    assert fused[0] == target


@pytest.mark.parametrize("options", [
    {"speaker_boost": 11}, {"speaker_boost": -1}, {"speaker_boost": "high"},
    {"speaker_boost": True},
])
def test_bad_speaker_options_are_refused_in_sql(raw, options):
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        raw.execute("SELECT * FROM memdb.search_hybrid('default', 'books', NULL, 5, '{}', %s)",
                    (Jsonb(options),))


@pytest.mark.parametrize("options", [
    SearchOptions(speaker=True, speaker_weight=11.0),
    SearchOptions(speaker=True, speaker_weight=-1),
    SearchOptions(speaker="yes"), SearchOptions(speaker=1), SearchOptions(speaker_weight="x"),
])
def test_bad_speaker_options_are_refused_in_python(store: MemoryStore, options):
    with pytest.raises(InvalidInput):
        store.search("books", options=options, routes=ROUTES)


def test_the_cli_switches_speaker_on(store: MemoryStore, fresh_db, monkeypatch, tmp_path):
    monkeypatch.setenv("MEMDB_HOME", str(tmp_path / "home"))
    case = CASES["chinese"]
    target, other = setup(store, case)
    args = ("search", case["query"], "--route", "bm25", "--route", "exact", "--subject", "amy")
    off = [h["memory"]["id"] for h in ok_json(fresh_db, *args)["hits"]]
    assert off.index(str(other)) < off.index(str(target))
    on = ok_json(fresh_db, *args, "--speaker", "1", "--explain")
    assert on["hits"][0]["memory"]["id"] == str(target)
    assert on["explain"]["params"]["options"]["speaker_boost"] == 1.0
    bad = run(fresh_db, *args, "--speaker", "11")
    assert bad.exit_code == 1 and "speaker_weight" in bad.stderr


def test_recall_takes_the_option_too(store: MemoryStore):
    case = CASES["english"]
    target, other = setup(store, case)
    hits = store.recall(case["query"], k=5, subject="amy",
                        options=SearchOptions(routes=tuple(ROUTES), speaker=True))
    assert ids(hits)[0] == target
