"""Equal scores come out in the order the memories were written, on every run (revision 0018,
memdb.new_memory_id): rankings break ties by id, and on PostgreSQL 18 new ids are time-ordered
(uuidv7). With random ids the order of tied memories changed from one fresh write to the next,
and so did an evaluation's figures between two runs of the same command.

Each test writes the same memories afresh several times (a new subject each round: new ids)
and checks every round's ranking. The embedder gives every text the same vector, so the vector
route ties everything and the words decide the rest; local and on the Citus cluster.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from memdb import MemoryStore
from memdb.retrieval.search import SearchOptions
from tests.fixed_embedder import FixedEmbedder

ROUNDS = 6
T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)

# four texts the query matches equally (same words, same length): equal scores on every route
TIED = {
    "en": (["tea note alpha", "tea note bravo", "tea note delta", "tea note gamma"], "tea"),
    "zh": (["喝茶记一", "喝茶记二", "喝茶记三", "喝茶记四"], "喝茶"),
}
# a session whose middle turn alone matches the query: its two neighbours get equal scores
SESSION = {
    "en": (["Amy: I booked the trip.", "Bob: Lisbon in spring?", "Amy: Yes, the ocean."],
           "Lisbon"),
    "zh": (["李雷：我订好了票。", "韩梅梅：是去成都吗？", "李雷：对，去吃火锅。"], "成都"),
}


@pytest.fixture
def fixed_store(fresh_db: str):
    with MemoryStore(fresh_db, embedder=FixedEmbedder(), gate=None) as s:
        yield s


@pytest.mark.parametrize("batch", [True, False], ids=["one-batch", "one-by-one"])
@pytest.mark.parametrize("lang", sorted(TIED))
def test_equal_scores_come_back_in_write_order(fixed_store: MemoryStore, lang, batch):
    texts, query = TIED[lang]
    for n in range(ROUNDS):
        subject = f"{lang}-{n}"
        if batch:  # one transaction: the memories share created_at
            ids = [r.id for r in fixed_store.add_many(
                [{"content": t, "subject": subject} for t in texts])]
        else:
            ids = [fixed_store.add(t, subject=subject).id for t in texts]
        hits = fixed_store.search(query, k=10, subject=subject)
        for route in ("vector", "bm25"):  # each route ties them; the fused ranks follow the ids
            assert len({round(h.details[f"{route}_score"], 12) for h in hits}) == 1, route
        assert [h.memory.id for h in hits] == ids, f"round {n}"


@pytest.mark.parametrize("lang", sorted(SESSION))
def test_tied_neighbours_come_back_in_turn_order(fixed_store: MemoryStore, lang):
    """Neighbour expansion gives a hit's previous and next turn the same score: the previous
    one (written first) ranks first, every time."""
    lines, query = SESSION[lang]
    for n in range(ROUNDS):
        subject = f"{lang}-{n}"
        turns = [fixed_store.add(t, subject=subject, session_id="s1",
                                 created_at=T0 + timedelta(minutes=i)).id
                 for i, t in enumerate(lines)]
        hits = fixed_store.search(query, k=10, subject=subject, routes=["bm25"],
                                  options=SearchOptions(neighbors=1, neighbor_weight=0.4))
        assert [h.memory.id for h in hits] == [turns[1], turns[0], turns[2]], f"round {n}"
        assert hits[1].score == pytest.approx(hits[2].score)


def test_new_ids_are_time_ordered_on_postgresql_18(fixed_store: MemoryStore, fresh_db: str):
    """memdb's writes and the column default (a plain INSERT) both make increasing uuidv7 ids
    on PostgreSQL 18 (the embedded server and the cluster run 18)."""
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        if conn.execute("SHOW server_version_num").fetchone()[0] < "180000":
            pytest.skip("time-ordered ids need PostgreSQL 18")
        ids = [r.id for r in fixed_store.add_many(
            [{"content": f"note {i} 笔记", "subject": "ids"} for i in range(20)])]
        ids += [fixed_store.add("one more 再一条", subject="ids").id]
        ids += [conn.execute(
            "INSERT INTO memdb.memories (tenant, subject, uri, content, content_hash, tsv)"
            " VALUES ('default', 'ids', 'mem://ids/x', 'by hand 手写', '\\x00', '')"
            " RETURNING id").fetchone()[0]]
    assert {i.version for i in ids} == {7}
    assert ids == sorted(ids)
