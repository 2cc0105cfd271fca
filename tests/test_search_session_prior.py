"""The session prior (search option ``session_prior``, memdb.search_hybrid step 3f) against a
real database: a memory in a session (subject, session_id) that holds much of the candidates'
fused score scores (1 + w * share) times as much, so a turn among several matching turns of
one session passes a lone, slightly better match in another session; a memory without a
session gets no prior; off by default; bad weights refused in SQL and in Python; the CLI
switches it. English and Chinese, three sessions and one session-less memory each.

Searches run the BM25 route alone with neighbour expansion (on by default) switched off, so
the word matches are fixed and only the option moves the ranking (a neighbour's lent score
would change a hit's multiplier, and a neighbour no route found has no fused score).
"""

from __future__ import annotations

from collections import defaultdict

import psycopg
import pytest
from psycopg.types.json import Jsonb

from memdb import InvalidInput, MemoryStore
from memdb.retrieval.search import SearchOptions
from tests.cli_helpers import ok_json, run

ROUTES = ["bm25"]
CASES = {
    "english": {
        "query": "camping trip at the lake",
        # a lone turn of session s1 that matches the query best
        "lone": ("s1", "Caroline: a camping trip at the lake, the lake camping trip of my dreams"),
        # session s2 talks about the trip: its best turn matches a little less than the lone one
        "target": ("s2", "Melanie: we went on a camping trip at the lake"),
        "topic": [("s2", "Melanie: the kids loved the lake"),
                  ("s2", "Melanie: camping again next summer")],
        "filler": [("s1", "Caroline: the parade was great"), ("s3", "Caroline: pottery class"),
                   ("s3", "Melanie: I painted a sunset")],
        "no_session": "a camping checklist",
    },
    "chinese": {
        "query": "湖边露营旅行",
        "lone": ("s1", "卡罗琳：湖边露营旅行，湖边露营旅行是我的梦想"),
        "target": ("s2", "梅兰妮：我们去湖边露营旅行了"),
        "topic": [("s2", "梅兰妮：孩子们很喜欢湖边"), ("s2", "梅兰妮：明年夏天还去露营")],
        "filler": [("s1", "卡罗琳：游行很精彩"), ("s3", "卡罗琳：陶艺课"),
                   ("s3", "梅兰妮：我画了日落")],
        "no_session": "露营装备清单",
    },
}


def setup(store: MemoryStore, case: dict) -> dict[str, object]:
    """The case's memories for subject amy; returns the ids of lone, target and no_session and
    every id's session."""
    session = {}
    out = {}
    for key in ("lone", "target"):
        sid, text = case[key]
        out[key] = store.add(text, subject="amy", session_id=sid).id
        session[out[key]] = sid
    for sid, text in case["topic"] + case["filler"]:
        session[store.add(text, subject="amy", session_id=sid).id] = sid
    out["no_session"] = store.add(case["no_session"], subject="amy").id
    session[out["no_session"]] = None
    out["session"] = session
    return out


def ids(hits) -> list:
    return [h.memory.id for h in hits]


def search(store: MemoryStore, case: dict, **options):
    return store.search(case["query"], k=20, subject="amy", routes=ROUTES,
                        options=SearchOptions(**{"neighbors": 0, "speaker_neighbors": 0,
                                                 **options}))


@pytest.mark.parametrize("lang", CASES)
def test_the_prior_lifts_a_turn_among_matching_turns_of_its_session(store: MemoryStore, lang):
    case = CASES[lang]
    m = setup(store, case)
    off = search(store, case)
    assert ids(off)[0] == m["lone"] and m["target"] in ids(off)
    assert all(h.details["multiplier"] == pytest.approx(1.0) for h in off)

    on = search(store, case, session_prior=2.0)
    assert ids(on)[0] == m["target"]
    assert set(ids(on)) == set(ids(off))  # a reordering: no candidate comes or goes
    # as documented: multiplier = 1 + w * (summed fused of the candidates of the hit's session /
    # summed fused of all candidates); every candidate is returned here (k 20)
    total = sum(h.details["fused"] for h in on)
    per_session: dict[str, float] = defaultdict(float)
    for h in on:
        if m["session"][h.memory.id] is not None:
            per_session[m["session"][h.memory.id]] += h.details["fused"]
    for h in on:
        sid = m["session"][h.memory.id]
        share = 0.0 if sid is None else per_session[sid] / total
        assert h.details["multiplier"] == pytest.approx(1 + 2.0 * share)
        assert h.score == pytest.approx(h.details["fused"] * (1 + 2.0 * share))
    no_session = on[ids(on).index(m["no_session"])]
    assert no_session.details["multiplier"] == pytest.approx(1.0)


@pytest.mark.parametrize("lang", CASES)
def test_off_by_default_and_at_zero(store: MemoryStore, lang):
    case = CASES[lang]
    setup(store, case)
    plain = search(store, case)
    for off in ({"session_prior": 0.0}, {"session_prior": False}):
        same = search(store, case, **off)
        assert ids(same) == ids(plain)
        assert [h.score for h in same] == [h.score for h in plain]


def test_the_prior_is_per_subject(store: MemoryStore):
    """A session is a subject and a session_id: another subject's turns under the same
    session_id lend nothing (searched across both subjects)."""
    case = CASES["english"]
    m = setup(store, case)
    key = {i: ("amy", sid) for i, sid in m["session"].items()}
    for text in ("Bob: camping trip at the lake", "Bob: lake camping trip", "Bob: camping"):
        key[store.add(text, subject="bob", session_id="s1").id] = ("bob", "s1")
    hits = store.search(case["query"], k=30, subject=["amy", "bob"], routes=ROUTES,
                        options=SearchOptions(session_prior=2.0, neighbors=0,
                                              speaker_neighbors=0))
    assert len(hits) < 30 and m["lone"] in ids(hits)  # every candidate returned
    total = sum(h.details["fused"] for h in hits)
    share = defaultdict(float)
    for h in hits:
        share[key[h.memory.id]] += h.details["fused"] / total
    lone = hits[ids(hits).index(m["lone"])]
    assert lone.details["multiplier"] == pytest.approx(1 + 2.0 * share[("amy", "s1")])
    assert share[("bob", "s1")] > 0.1  # keyed by session_id alone, the lone turn would gain this


def test_session_prior_in_sql(store: MemoryStore, raw):
    case = CASES["chinese"]
    m = setup(store, case)
    sql = ("SELECT id, multiplier FROM memdb.search_hybrid('default', %s, NULL, 5, "
           "'{\"subject\": \"amy\"}', %s) ORDER BY rank")
    off = raw.execute(sql, (case["query"], Jsonb({"routes": ROUTES}))).fetchall()
    on = raw.execute(sql, (case["query"], Jsonb({"routes": ROUTES,
                                                  "session_prior": 2}))).fetchall()
    assert off[0][0] == m["lone"] and on[0][0] == m["target"] and on[0][1] > 1


@pytest.mark.parametrize("options", [
    {"session_prior": 11}, {"session_prior": -0.5}, {"session_prior": "high"},
    {"session_prior": True},
])
def test_bad_weights_are_refused_in_sql(raw, options):
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        raw.execute("SELECT * FROM memdb.search_hybrid('default', 'lake', NULL, 5, '{}', %s)",
                    (Jsonb(options),))


@pytest.mark.parametrize("weight", [11.0, -1, "x", float("nan")])
def test_bad_weights_are_refused_in_python(store: MemoryStore, weight):
    with pytest.raises(InvalidInput):
        store.search("lake", routes=ROUTES, options=SearchOptions(session_prior=weight))


def test_the_cli_switches_the_prior_on(store: MemoryStore, fresh_db, monkeypatch, tmp_path):
    monkeypatch.setenv("MEMDB_HOME", str(tmp_path / "home"))
    case = CASES["english"]
    m = setup(store, case)
    args = ("search", case["query"], "--route", "bm25", "--subject", "amy")
    assert ok_json(fresh_db, *args)["hits"][0]["memory"]["id"] == str(m["lone"])
    on = ok_json(fresh_db, *args, "--session-prior", "2", "--explain")
    assert on["hits"][0]["memory"]["id"] == str(m["target"])
    assert on["explain"]["params"]["options"]["session_prior"] == 2.0
    bad = run(fresh_db, *args, "--session-prior", "11")
    assert bad.exit_code == 1 and "session_prior" in bad.stderr
