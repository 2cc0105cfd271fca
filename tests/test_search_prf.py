"""Pseudo-relevance feedback (search option ``prf``; memdb.prf_terms, memdb.search_bm25_weighted)
against a real database: the BM25 route's query is expanded with terms of the first pass's top
memories, so a memory that shares no word with the query but shares the expansion term is
found; off by default; prf_weight 1 is plain BM25; the feedback stays inside the filter and
the tenant; bad options refused; explain shows the expanded query. English and Chinese.
"""

from __future__ import annotations

import psycopg
import pytest
from psycopg.types.json import Jsonb

from memdb import InvalidInput, MemoryStore
from memdb.retrieval.search import SearchOptions
from tests.cli_helpers import ok_json, run

BM25 = ["bm25"]
FILLER = ["Melanie painted a sunrise over the lake.", "The printer on the third floor jammed.",
          "Jon bought new running shoes.", "梅兰妮画了湖上的日出。", "三楼的打印机卡纸了。",
          "老王买了新跑鞋。"]
CASES = {
    "english": {
        "query": "support group",
        "feedback": ["Caroline went to the support group at the community center.",
                     "The support group met at the community center again."],
        "target": "The community center hosts a pride parade every June.",
        "term": "communiti",  # the English stem of "community"
        "elsewhere": "The support group of the bowling league meets at the bowling alley.",
        "elsewhere_term": "bowl",
    },
    "chinese": {
        "query": "互助小组",
        "feedback": ["卡罗琳参加了社区中心的互助小组。", "互助小组每周在社区中心聚会。"],
        "target": "社区中心六月举办游行。",
        "term": "社区",
        "elsewhere": "保龄球馆的互助小组在保龄球馆聚会。",
        "elsewhere_term": "保龄",
    },
}


def setup(store: MemoryStore, case: dict) -> tuple[list, object]:
    feedback = [store.add(text, subject="amy").id for text in case["feedback"]]
    target = store.add(case["target"], subject="amy").id
    for text in FILLER:
        store.add(text, subject="amy")
    store.add(case["elsewhere"], subject="bob")
    return feedback, target


@pytest.mark.parametrize("lang", CASES)
def test_prf_finds_a_memory_through_an_expansion_term(store: MemoryStore, raw, lang):
    case = CASES[lang]
    feedback, target = setup(store, case)
    assert not set(raw.execute("SELECT memdb.query_terms(%s)", (case["query"],)).fetchone()[0]) \
        & set(raw.execute("SELECT memdb.query_terms(%s)", (case["target"],)).fetchone()[0])

    off = [h.memory.id for h in store.search(case["query"], k=10, subject="amy", routes=BM25)]
    assert set(off) == set(feedback) and target not in off

    hits = store.search(case["query"], k=10, subject="amy", routes=BM25,
                        options=SearchOptions(prf=True))
    found = [h.memory.id for h in hits]
    assert set(found[:2]) == set(feedback)  # the original terms still rank first
    assert target in found
    target_hit = hits[found.index(target)]
    assert target_hit.details["bm25_rank"] is not None and target_hit.details["bm25_score"] > 0

    terms = {r[0]: r for r in raw.execute(
            "SELECT term, weight, original FROM memdb.prf_terms('default', %s,"
            " '{\"subject\": \"amy\"}', '{\"prf\": 10}')", (case["query"],)).fetchall()}
    assert case["term"] in terms and terms[case["term"]][2] is False
    assert all(terms[t][2] for t in raw.execute("SELECT memdb.query_terms(%s)",
                                                (case["query"],)).fetchone()[0])
    # feedback comes only from the filter's memories: bob's words are no expansion term
    assert case["elsewhere_term"] not in terms


@pytest.mark.parametrize("lang", CASES)
def test_prf_weight_one_is_plain_bm25(store: MemoryStore, lang):
    case = CASES[lang]
    setup(store, case)
    plain = store.search(case["query"], k=10, subject="amy", routes=BM25)
    same = store.search(case["query"], k=10, subject="amy", routes=BM25,
                        options=SearchOptions(prf=5, prf_weight=1.0))
    assert [h.memory.id for h in same] == [h.memory.id for h in plain]
    assert [h.details["bm25_score"] for h in same] == pytest.approx(
        [h.details["bm25_score"] for h in plain])
    off = store.search(case["query"], k=10, subject="amy", routes=BM25,
                       options=SearchOptions(prf=0))
    assert [h.memory.id for h in off] == [h.memory.id for h in plain]


def test_prf_in_hybrid_and_fused_search(store: MemoryStore, raw):
    case = CASES["english"]
    _, target = setup(store, case)
    ids = [r[0] for r in raw.execute(
        "SELECT id FROM memdb.search_fused('default', %s, NULL, 10, '{\"subject\": \"amy\"}',"
        " '{\"routes\": [\"bm25\", \"exact\"], \"prf\": 10}')",
        (Jsonb([{"query": case["query"]}]),)).fetchall()]
    assert target in ids
    ids = [r[0] for r in raw.execute(
        "SELECT id FROM memdb.search_fused('default', %s, NULL, 10, '{\"subject\": \"amy\"}',"
        " '{\"routes\": [\"bm25\", \"exact\"]}')", (Jsonb([{"query": case["query"]}]),)).fetchall()]
    assert target not in ids


def test_explain_shows_the_expanded_query(store: MemoryStore):
    case = CASES["english"]
    setup(store, case)
    hits = store.search(case["query"], k=10, subject="amy", routes=BM25, explain=True,
                        options=SearchOptions(prf=10, prf_terms=5, prf_weight=0.6))
    options = hits.explain["params"]["options"]
    assert (options["prf"], options["prf_terms"], options["prf_weight"]) == (10, 5, 0.6)
    terms = hits.explain["prf_terms"]
    assert {t["term"] for t in terms if t["original"]} == {"support", "group"}
    assert case["term"] in {t["term"] for t in terms if not t["original"]}
    assert sum(not t["original"] for t in terms) <= 5
    assert "prf_terms" not in store.search(case["query"], routes=BM25, explain=True).explain


@pytest.mark.parametrize("options", [
    {"prf": 101}, {"prf": -1}, {"prf": 2.5}, {"prf": True}, {"prf_terms": 0}, {"prf_terms": 101},
    {"prf_weight": 1.5}, {"prf_weight": "high"},
])
def test_bad_prf_options_are_refused_in_sql(raw, options):
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        raw.execute("SELECT * FROM memdb.search_hybrid('default', 'support group', NULL, 5,"
                    " '{}', %s)",
                    (Jsonb(options),))
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        raw.execute("SELECT * FROM memdb.prf_terms('default', 'support group', '{}', %s)",
                    (Jsonb(options),))


@pytest.mark.parametrize("options", [
    SearchOptions(prf=101), SearchOptions(prf=2.5), SearchOptions(prf_terms=0),
    SearchOptions(prf_terms=True), SearchOptions(prf_weight=-1.0),
])
def test_bad_prf_options_are_refused_in_python(store: MemoryStore, options):
    with pytest.raises(InvalidInput):
        store.search("support group", options=options, routes=BM25)


def test_weighted_bm25_checks_its_arguments(raw):
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        raw.execute("SELECT * FROM memdb.search_bm25_weighted('default', ARRAY['a', 'b'],"
                    " ARRAY[1.0]::float8[])")


@pytest.mark.local_only("session-level set_config() does not reach Citus workers")
def test_the_app_role_gets_no_feedback_from_another_tenant(store: MemoryStore, raw):
    case = CASES["english"]
    setup(store, case)
    raw.execute("SET ROLE memdb_app")
    raw.execute("SELECT set_config('memdb.tenant', 'globex', false)")
    rows = raw.execute("SELECT term, original FROM memdb.prf_terms('default', %s, '{}',"
                       " '{\"prf\": 10}')", (case["query"],)).fetchall()
    assert rows and all(original for _, original in rows)  # the query's own terms only
    assert raw.execute("SELECT count(*) FROM memdb.search_hybrid('default', %s, NULL, 5, '{}',"
                       " '{\"prf\": 10}')", (case["query"],)).fetchone()[0] == 0


def test_the_cli_switches_prf_on(store: MemoryStore, fresh_db, monkeypatch, tmp_path):
    monkeypatch.setenv("MEMDB_HOME", str(tmp_path / "home"))
    case = CASES["chinese"]
    _, target = setup(store, case)
    args = ("search", case["query"], "--route", "bm25", "--subject", "amy")
    assert str(target) not in {h["memory"]["id"] for h in ok_json(fresh_db, *args)["hits"]}
    on = ok_json(fresh_db, *args, "--prf", "10", "--prf-terms", "10", "--prf-weight", "0.5",
                 "--explain")
    assert str(target) in {h["memory"]["id"] for h in on["hits"]}
    assert case["term"] in {t["term"] for t in on["explain"]["prf_terms"]}
    text = run(fresh_db, *args, "--prf", "10", "--sql")
    assert "BM25 query after feedback:" in text.stdout and case["term"] in text.stdout
    bad = run(fresh_db, *args, "--prf-weight", "2")
    assert bad.exit_code == 1 and "prf_weight" in bad.stderr


def test_recall_takes_the_option_too(store: MemoryStore):
    case = CASES["english"]
    _, target = setup(store, case)
    plain = {h.memory.id for h in store.recall(case["query"], k=10, subject="amy",
                                                options=SearchOptions(routes=("bm25",)))}
    assert target not in plain
    expanded = {h.memory.id for h in store.recall(case["query"], k=10, subject="amy",
                                                   options=SearchOptions(routes=("bm25",),
                                                                         prf=10))}
    assert target in expanded
