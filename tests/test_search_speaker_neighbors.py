"""Speaker neighbours (search option ``speaker_neighbors``, memdb.search_speaker_neighbors)
against a real database: a hit that is a transcript line "Name: text" in a session brings the
nearest line of the same speaker before and after it in that session (within 10 memories),
scored weight times the hit's score; on by default at 0.4 (0 = off); none for a line without
a speaker or a session; never outside the tenant, subject, session or filter; bad options
refused in SQL and in Python; the CLI switches it. English and Chinese.

Searches run the BM25 route alone with session neighbours off, so which memories match is
decided by their words and the only other way in is a speaker neighbour.
"""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest
from psycopg.types.json import Jsonb

from memdb import InvalidInput, MemoryStore
from memdb.retrieval.search import SearchOptions
from tests.cli_helpers import ok_json, run
from tests.test_search_neighbors import BM25, CHINESE, ENGLISH, T0, session

CASES = [(ENGLISH, "Lisbon"), (CHINESE, "火锅")]


def search(store: MemoryStore, query: str, weight: float | None, **kw) -> dict:
    options = SearchOptions(neighbors=0, speaker_neighbors=weight)
    return {h.memory.id: h for h in store.search(query, k=10, routes=BM25, options=options,
                                                  **kw)}


@pytest.mark.parametrize("lines, query", CASES)
def test_a_hit_brings_its_speakers_lines_only_when_on(store: MemoryStore, lines, query):
    turns = session(store, "amy", "s1", lines)
    off = search(store, query, 0, subject="amy")
    assert list(off) == [turns[2]]  # the words match one line only
    hit_score = off[turns[2]].score
    assert list(search(store, query, False, subject="amy")) == [turns[2]]
    default = search(store, query, None, subject="amy")  # on by default, at 0.4
    assert set(default) == {turns[0], turns[2], turns[4]}
    assert default[turns[0]].score == pytest.approx(0.4 * hit_score)

    on = search(store, query, 0.5, subject="amy")
    assert set(on) == {turns[0], turns[2], turns[4]}  # the same speaker's lines, not the other's
    assert on[turns[2]].score == pytest.approx(hit_score) and on[turns[2]].rank == 1
    for neighbour in (turns[0], turns[4]):
        assert on[neighbour].score == pytest.approx(0.5 * hit_score)
        assert on[neighbour].details["bm25_rank"] is None  # no route found it
    # True is weight 0.4
    assert search(store, query, True, subject="amy")[turns[4]].score == pytest.approx(
        0.4 * hit_score)
    # with session neighbours on as well: both kinds
    both = store.search(query, k=10, subject="amy", routes=BM25,
                        options=SearchOptions(neighbors=1, neighbor_weight=0.5,
                                              speaker_neighbors=0.5))
    assert {h.memory.id for h in both} == set(turns)


@pytest.mark.parametrize("lines, query", CASES)
def test_no_speaker_or_no_session_no_speaker_neighbours(store: MemoryStore, raw, lines, query):
    loose = session(store, "amy", None, lines)  # transcript lines, but no session
    assert list(search(store, query, 0.5, subject="amy")) == [loose[2]]
    # a session whose memories are not transcript lines: no speaker to follow
    plain = [line.split(":", 1)[-1].split("：", 1)[-1] for line in lines]
    notes = session(store, "bo", "s1", plain)
    assert list(search(store, query, 0.5, subject="bo")) == [notes[2]]
    rows = raw.execute("SELECT * FROM memdb.search_speaker_neighbors('default', %s::uuid[],"
                       " ARRAY[1.0, 1.0]::float8[], 0.5, '{}')",
                       ([loose[2], notes[2]],)).fetchall()
    assert rows == []


def test_speaker_neighbours_stay_in_tenant_subject_session_and_filter(store: MemoryStore,
                                                                      fresh_db, embedder):
    turns = session(store, "amy", "s1", ENGLISH)
    # Amy's lines interleaved in time: another subject, another session of amy's, another
    # tenant, and one line the kind filter excludes
    bob = session(store, "bob", "s1", ["Amy: bob one", "Amy: bob two"],
                  start=T0 + timedelta(seconds=30))
    other = session(store, "amy", "s2", ["Amy: s2 one", "Amy: s2 two", "Amy: s2 three"],
                    start=T0 + timedelta(seconds=20))
    with MemoryStore(fresh_db, tenant="globex", embedder=embedder, gate=None) as elsewhere:
        foreign = session(elsewhere, "amy", "s1", ["Amy: globex one", "Amy: globex two"],
                          start=T0 + timedelta(minutes=2, seconds=10))
    skipped = store.add("Amy: a note between the turns", subject="amy", session_id="s1",
                        kind="episodic", created_at=T0 + timedelta(minutes=2, seconds=30)).id

    found = search(store, "Lisbon", 0.5, kind="semantic")
    assert set(found) == {turns[0], turns[2], turns[4]}  # the filtered-out note stepped over
    assert not set(found) & set(bob + other + foreign + [skipped])
    # without the filter the note is Amy's next line
    assert set(search(store, "Lisbon", 0.5)) == {turns[0], turns[2], skipped}


def test_a_speaker_line_more_than_ten_memories_away_is_not_followed(store: MemoryStore):
    lines = ["Amy: Lisbon in the spring."] + [f"Bob: line {i}" for i in range(10)] \
        + ["Amy: too far away."]
    turns = session(store, "amy", "s1", lines)
    assert list(search(store, "Lisbon", 0.5, subject="amy")) == [turns[0]]
    near = session(store, "cy", "s1", lines[:10] + lines[11:])  # nine of Bob's lines between
    assert set(search(store, "Lisbon", 0.5, subject="cy")) == {near[0], near[-1]}


@pytest.mark.parametrize("options", [{"speaker_neighbors": 1.5}, {"speaker_neighbors": -0.1},
                                     {"speaker_neighbors": "half"}])
def test_bad_options_are_refused_in_sql(raw, options):
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        raw.execute("SELECT * FROM memdb.search_hybrid('default', 'Lisbon', NULL, 5, '{}', %s)",
                    (Jsonb(options),))


@pytest.mark.parametrize("weight", [1.5, -0.1, float("nan"), "half"])
def test_bad_options_are_refused_in_python(store: MemoryStore, weight):
    turns = session(store, "amy", "s1", ENGLISH)
    with pytest.raises(InvalidInput):
        store.search("Lisbon", routes=BM25, options=SearchOptions(speaker_neighbors=weight))
    assert store.get(turns[0]).access_count == 0  # nothing changed


def test_the_cli_switches_it_and_explain_names_the_neighbours(store: MemoryStore, fresh_db,
                                                              monkeypatch, tmp_path):
    monkeypatch.setenv("MEMDB_HOME", str(tmp_path / "home"))
    turns = session(store, "amy", "s1", CHINESE)
    off = ok_json(fresh_db, "search", "火锅", "--route", "bm25", "--subject", "amy",
                  "--neighbors", "0", "--speaker-neighbors", "0")["hits"]
    assert [h["memory"]["id"] for h in off] == [str(turns[2])]
    default = ok_json(fresh_db, "search", "火锅", "--route", "bm25", "--subject", "amy",
                      "--neighbors", "0")["hits"]  # on by default
    assert [h["memory"]["id"] for h in default][0] == str(turns[2]) and len(default) == 3
    on = ok_json(fresh_db, "search", "火锅", "--route", "bm25", "--subject", "amy",
                 "--neighbors", "0", "--speaker-neighbors", "0.5", "--explain")
    assert {h["memory"]["id"] for h in on["hits"]} == {str(t) for t in turns[0::2]}
    assert on["explain"]["params"]["options"]["speaker_neighbors"] == 0.5
    assert set(on["explain"]["neighbors"]) == {str(turns[0]), str(turns[4])}
    bad = run(fresh_db, "search", "火锅", "--speaker-neighbors", "2")
    assert bad.exit_code == 1 and "speaker_neighbors" in bad.stderr
