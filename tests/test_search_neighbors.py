"""Neighbour expansion (search option ``neighbors``, memdb.search_neighbors) against a real
database: a hit brings the memories before and after it in its session, scored
neighbor_weight ** distance times the hit's score; on by default in the store (window 1,
weight 0.4: the cross-validated choice; the SQL default is off), neighbors=0 turns it off;
none for a memory without a session_id; never outside the tenant, the subject, the session
or the search's filter; bad options refused; the index serves the lookup; explain names the
neighbours.

Searches run the BM25 route alone, so which memories match is decided by their words and the
only other way in is a neighbour.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from psycopg.types.json import Jsonb

from memdb import InvalidInput, MemoryStore
from memdb.retrieval.search import SearchOptions
from tests.cli_helpers import ok_json, run

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
BM25 = ["bm25"]

ENGLISH = ["Amy: I finally booked the trip.",
           "Bob: Where are you going?",
           "Amy: To Lisbon, in the spring.",
           "Bob: Nice, I loved the pastries there.",
           "Amy: Can't wait to see the ocean."]
CHINESE = ["李雷：我下个月去成都出差。",
           "韩梅梅：去几天？",
           "李雷：大概一周，顺便吃火锅。",
           "韩梅梅：记得带胃药。",
           "李雷：好的，谢谢提醒。"]


def session(store: MemoryStore, subject: str, session_id: str | None, lines: list[str],
            start: datetime = T0, **fields) -> list:
    """The lines as one session's turns, one minute apart, in order."""
    return [store.add(text, subject=subject, session_id=session_id,
                      created_at=start + timedelta(minutes=i), **fields).id
            for i, text in enumerate(lines)]


def by_id(hits) -> dict:
    return {h.memory.id: h for h in hits}


@pytest.mark.parametrize("lines, query", [(ENGLISH, "Lisbon"), (CHINESE, "火锅")])
def test_a_hit_brings_its_neighbours_only_when_on(store: MemoryStore, lines, query):
    turns = session(store, "amy", "s1", lines)
    off = store.search(query, k=10, subject="amy", routes=BM25,
                       options=SearchOptions(speaker_neighbors=0, neighbors=0))
    assert [h.memory.id for h in off] == [turns[2]]  # the words match one turn only
    hit_score = off[0].score

    on = by_id(store.search(query, k=10, subject="amy", routes=BM25,
                            options=SearchOptions(speaker_neighbors=0,
                                                  neighbors=1, neighbor_weight=0.5)))
    assert set(on) == {turns[1], turns[2], turns[3]}
    assert on[turns[2]].score == pytest.approx(hit_score) and on[turns[2]].rank == 1
    for neighbour in (turns[1], turns[3]):
        assert on[neighbour].score == pytest.approx(0.5 * hit_score)
        assert on[neighbour].details["bm25_rank"] is None  # no route found it

    wide = by_id(store.search(query, k=10, subject="amy", routes=BM25,
                              options=SearchOptions(speaker_neighbors=0,
                                                    neighbors=2, neighbor_weight=0.8)))
    assert set(wide) == set(turns)
    assert wide[turns[3]].score == pytest.approx(0.8 * hit_score)
    assert wide[turns[4]].score == pytest.approx(0.64 * hit_score)

    # the store's default: window 1 at weight 0.4, and the speaker's own lines before and
    # after the hit (speaker_neighbors 0.4: two turns away in a two-party session)
    default = by_id(store.search(query, k=10, subject="amy", routes=BM25))
    assert set(default) == set(turns)
    assert default[turns[1]].score == pytest.approx(0.4 * hit_score)
    assert default[turns[0]].score == pytest.approx(0.4 * hit_score)
    # explicitly off, as False too
    assert [h.memory.id for h in store.search(query, k=10, subject="amy", routes=BM25,
                                              options=SearchOptions(speaker_neighbors=0,
                                                                    neighbors=False))] == [turns[2]]


def test_a_hit_keeps_its_own_score_when_a_neighbour_lends_less(store: MemoryStore):
    turns = session(store, "amy", "s1", ["Lisbon trip planning started.",
                                         "We will fly to Lisbon and then Porto.", "Porto wine."])
    plain = by_id(store.search("Lisbon Porto", k=10, subject="amy", routes=BM25,
                               options=SearchOptions(speaker_neighbors=0, neighbors=0)))
    on = by_id(store.search("Lisbon Porto", k=10, subject="amy", routes=BM25,
                            options=SearchOptions(speaker_neighbors=0,
                                                  neighbors=1, neighbor_weight=0.5)))
    assert set(on) == set(turns) == set(plain)
    for mid in turns:
        lent = max(0.5 * plain[n].score for n in turns
                   if abs(turns.index(n) - turns.index(mid)) == 1)
        assert on[mid].score == pytest.approx(max(plain[mid].score, lent))


@pytest.mark.parametrize("lines, query", [(ENGLISH, "Lisbon"), (CHINESE, "火锅")])
def test_memories_without_a_session_have_no_neighbours(store: MemoryStore, raw, lines, query):
    # notes written one after the other outside a conversation are not a stream: a hit among
    # them lends nothing, and a session's hit lends nothing to the notes around it in time
    loose = session(store, "amy", None, lines)
    off = [h.memory.id for h in store.search(query, k=10, subject="amy", routes=BM25,
                                            options=SearchOptions(speaker_neighbors=0,
                                                                  neighbors=0))]
    assert off == [loose[2]]
    for options in (SearchOptions(speaker_neighbors=0, neighbors=1),
                    SearchOptions(speaker_neighbors=0, neighbors=2, neighbor_weight=0.8)):
        on = store.search(query, k=10, subject="amy", routes=BM25, explain=True, options=options)
        assert [h.memory.id for h in on] == off
        assert not on.explain.get("neighbors")  # explain lists none
    rows = raw.execute("SELECT * FROM memdb.search_neighbors('default', %s::uuid[],"
                       " ARRAY[1.0]::float8[], 2, 0.5, '{}')", ([loose[2]],)).fetchall()
    assert rows == []

    # one session turn amid the notes (in time): its neighbours are its session's, not the notes
    turn = store.add(lines[2], subject="amy", session_id="s1",
                     created_at=T0 + timedelta(minutes=2, seconds=30)).id
    rows = raw.execute("SELECT id FROM memdb.search_neighbors('default', %s::uuid[],"
                       " ARRAY[1.0]::float8[], 2, 0.5, '{}')", ([turn],)).fetchall()
    assert rows == []
    on = {h.memory.id for h in store.search(query, k=10, subject="amy", routes=BM25,
                                             options=SearchOptions(speaker_neighbors=0,
                                                                   neighbors=2))}
    assert on == {loose[2], turn}


def test_neighbours_stay_in_tenant_subject_session_and_filter(store: MemoryStore, fresh_db,
                                                              embedder):
    turns = session(store, "amy", "s1", ENGLISH)
    # interleaved in time with amy's turns: another subject in a session of the same name,
    # another session of amy's, memories without a session, and a memory the filter excludes
    bob = session(store, "bob", "s1", ["bob one", "bob two", "bob three", "bob four", "bob five"],
                  start=T0 + timedelta(seconds=30))
    other = session(store, "amy", "s2", ["s2 one", "s2 two", "s2 three", "s2 four", "s2 five"],
                    start=T0 + timedelta(seconds=20))
    loose = session(store, "amy", None, ["no session one", "no session two", "no session three"],
                    start=T0 + timedelta(seconds=40))
    skipped = store.add("Amy: a note between the turns", subject="amy", session_id="s1",
                        kind="episodic", created_at=T0 + timedelta(minutes=2, seconds=30)).id
    with MemoryStore(fresh_db, tenant="globex", embedder=embedder, gate=None) as elsewhere:
        foreign = session(elsewhere, "amy", "s1", ["globex one", "globex two", "globex three"],
                          start=T0 + timedelta(minutes=2, seconds=10))

    found = by_id(store.search("Lisbon", k=20, routes=BM25, kind="semantic",
                               options=SearchOptions(speaker_neighbors=0, neighbors=2)))
    assert set(found) == set(turns)  # turns[3] comes after the filtered-out note: stepped over
    assert not set(found) & set(bob + other + loose + foreign + [skipped])

    # without the kind filter the note is turns[2]'s next neighbour
    found = by_id(store.search("Lisbon", k=20, routes=BM25,
                               options=SearchOptions(speaker_neighbors=0, neighbors=1)))
    assert set(found) == {turns[1], turns[2], skipped}


def test_turns_of_one_batch_are_ordered_by_their_created_at(store: MemoryStore):
    lines = ["first turn", "second turn about Lisbon", "third turn"]
    results = store.add_many([{"content": text, "subject": "amy", "session_id": "s9",
                               "created_at": T0 + timedelta(seconds=i)}
                              for i, text in enumerate(lines)])
    found = by_id(store.search("Lisbon", k=10, subject="amy", routes=BM25,
                               options=SearchOptions(speaker_neighbors=0, neighbors=1)))
    assert set(found) == {r.id for r in results}


@pytest.mark.parametrize("options", [
    {"neighbors": 11}, {"neighbors": -1}, {"neighbors": 1.5}, {"neighbors": "1"},
    {"neighbor_weight": 1.5}, {"neighbor_weight": -0.1}, {"neighbor_weight": "half"},
])
def test_bad_neighbour_options_are_refused_in_sql(raw, options):
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        raw.execute("SELECT * FROM memdb.search_hybrid('default', 'Lisbon', NULL, 5, '{}', %s)",
                    (Jsonb(options),))


@pytest.mark.parametrize("options", [
    SearchOptions(neighbors=11), SearchOptions(neighbors=1.5), SearchOptions(neighbor_weight=2.0),
    SearchOptions(neighbor_weight=float("nan")),
])
def test_bad_neighbour_options_are_refused_in_python(store: MemoryStore, options):
    turns = session(store, "amy", "s1", ENGLISH)
    with pytest.raises(InvalidInput):
        store.search("Lisbon", options=options, routes=BM25)
    assert store.get(turns[0]).access_count == 0  # nothing changed


def test_explain_names_the_neighbours(store: MemoryStore):
    turns = session(store, "amy", "s1", ENGLISH)
    hits = store.search("Lisbon", k=10, subject="amy", routes=BM25, explain=True,
                        options=SearchOptions(speaker_neighbors=0, neighbors=1))
    assert hits.explain["params"]["options"]["neighbors"] == 1
    assert set(hits.explain["neighbors"]) == {turns[1], turns[3]}
    plain = store.search("Lisbon", k=10, subject="amy", routes=BM25, explain=True,
                         options=SearchOptions(speaker_neighbors=0, neighbors=0))
    assert "neighbors" not in plain.explain


@pytest.mark.local_only("EXPLAIN on the coordinator shows the distributed plan, not the shard's")
def test_the_lookup_descends_the_stream_index(store: MemoryStore, raw):
    turns = session(store, "amy", "s1", ENGLISH)
    plans: list[str] = []
    raw.add_notice_handler(lambda diag: plans.append(diag.message_primary or ""))
    raw.execute("LOAD 'auto_explain'")
    raw.execute("SET auto_explain.log_min_duration = 0")
    raw.execute("SET auto_explain.log_nested_statements = on")
    raw.execute("SET client_min_messages = log")
    raw.execute("SET enable_seqscan = off")
    raw.execute("SELECT * FROM memdb.search_neighbors('default', %s::uuid[],"
                " ARRAY[1.0]::float8[], 1, 0.5, '{}')", ([turns[2]],))
    lookup = next(p for p in plans if "LATERAL" in p)
    # before (b) and after (a): one descent each (the hit's own row is found by its key, through
    # whichever index the planner prefers for a table this small)
    assert "memories_stream_idx on memories b" in lookup, lookup
    assert "memories_stream_idx on memories a" in lookup, lookup


@pytest.mark.local_only("session-level set_config() does not reach Citus workers")
def test_the_app_role_gets_no_neighbours_of_another_tenant(store: MemoryStore, raw):
    turns = session(store, "amy", "s1", ENGLISH)
    raw.execute("SET ROLE memdb_app")
    raw.execute("SELECT set_config('memdb.tenant', 'globex', false)")
    rows = raw.execute("SELECT * FROM memdb.search_neighbors('default', %s::uuid[],"
                       " ARRAY[1.0]::float8[], 2, 0.5, '{}')", ([turns[2]],)).fetchall()
    assert rows == []
    rows = raw.execute("SELECT * FROM memdb.search_hybrid('default', 'Lisbon', NULL, 5, '{}',"
                       " '{\"neighbors\": 2}')").fetchall()
    assert rows == []
    raw.execute("SELECT set_config('memdb.tenant', 'default', false)")
    rows = raw.execute("SELECT id FROM memdb.search_neighbors('default', %s::uuid[],"
                       " ARRAY[1.0]::float8[], 2, 0.5, '{}')", ([turns[2]],)).fetchall()
    assert {r[0] for r in rows} == {turns[0], turns[1], turns[3], turns[4]}


def test_the_cli_switches_neighbours_off_and_on(store: MemoryStore, fresh_db, monkeypatch,
                                                tmp_path):
    monkeypatch.setenv("MEMDB_HOME", str(tmp_path / "home"))
    turns = session(store, "amy", "s1", CHINESE)
    off = ok_json(fresh_db, "search", "火锅", "--route", "bm25", "--subject", "amy",
                  "--neighbors", "0", "--speaker-neighbors", "0")["hits"]
    assert [h["memory"]["id"] for h in off] == [str(turns[2])]
    on = ok_json(fresh_db, "search", "火锅", "--route", "bm25", "--subject", "amy",
                 "--neighbors", "2", "--neighbor-weight", "0.5", "--speaker-neighbors", "0",
                 "--explain")
    assert {h["memory"]["id"] for h in on["hits"]} == {str(t) for t in turns}
    assert on["explain"]["params"]["options"]["neighbor_weight"] == 0.5
    default = ok_json(fresh_db, "search", "火锅", "--route", "bm25", "--subject", "amy",
                      "--explain")  # the default: window 1, weight 0.4 (+ speaker's lines)
    assert {h["memory"]["id"] for h in default["hits"]} == {str(t) for t in turns}
    assert default["explain"]["params"]["options"]["neighbor_weight"] == 0.4
    text = run(fresh_db, "search", "火锅", "--route", "bm25", "--neighbors", "1",
               "--speaker-neighbors", "0", "--sql")
    assert "brought by neighbour expansion: 2" in text.stdout
    bad = run(fresh_db, "search", "火锅", "--neighbors", "11")
    assert bad.exit_code == 1 and "neighbors" in bad.stderr


def test_recall_takes_the_option_too(store: MemoryStore):
    turns = session(store, "amy", "s1", ENGLISH)
    plain = {h.memory.id for h in store.recall("Lisbon", k=5, subject="amy",
                                                options=SearchOptions(routes=("bm25",),
                                                                      speaker_neighbors=0,
                                                                      neighbors=0))}
    assert plain == {turns[2]}
    near = {h.memory.id for h in store.recall("Lisbon", k=5, subject="amy",
                                               options=SearchOptions(routes=("bm25",),
                                                                     speaker_neighbors=0,
                                                                     neighbors=2))}
    assert near == set(turns)
    default = {h.memory.id for h in store.recall("Lisbon", k=5, subject="amy",
                                                  options=SearchOptions(routes=("bm25",),
                                                                    speaker_neighbors=0))}
    assert default == {turns[1], turns[2], turns[3]}  # recall starts from the defaults
    everything = {h.memory.id for h in store.recall("Lisbon", k=5, subject="amy",
                                                     options=SearchOptions(routes=("bm25",)))}
    assert everything == set(turns)  # with the speaker's own lines two turns away
