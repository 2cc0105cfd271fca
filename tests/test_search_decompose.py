"""Query decomposition (search option ``decompose``, memdb.retrieval.decompose) against a real
database:
the splitter on English and Chinese questions (and ones that must not split), a question
joining two facts that finds both evidence memories in the top k with decompose on but not
off, the sub-queries in explain and on the CLI, off by default, bad input refused.

The data make the plain search fail: one person's name is rare (high idf) and has several
painting memories, the other's is common (low idf), so the whole question's BM25 top k is all
about the first person; the second person's sub-query puts their evidence first.
"""

from __future__ import annotations

import pytest

from memdb import InvalidInput, MemoryStore
from memdb.retrieval.decompose import split_query
from memdb.retrieval.search import SearchOptions
from tests.cli_helpers import ok_json, run

SPLITS = [
    ("What do Caroline and Melanie both like?",
     ["What do Caroline like?", "What do Melanie like?"]),
    ("Which of Jon or Gina started a dance studio?",
     ["Jon started a dance studio?", "Gina started a dance studio?"]),
    ("What do Jon, Gina and Caroline have in common?",
     ["What do Jon have in common?", "What do Gina have in common?",
      "What do Caroline have in common?"]),
    ("Where did Jon go and what did he buy there?", ["Where did Jon go", "what did he buy there?"]),
    ("小明和小红都喜欢什么运动？", ["小明都喜欢什么运动？", "小红都喜欢什么运动？"]),
    ("他去了哪里以及买了什么", ["他去了哪里", "买了什么"]),
    # the sentence's first word or an auxiliary is no name
    ("Did Jon and Gina both take part in dance competitions?",
     ["Did Jon take part in dance competitions?", "Did Gina take part in dance competitions?"]),
    ("Do Jon and Gina start businesses?", ["Do Jon start businesses?",
                                           "Do Gina start businesses?"]),
    # a possessive on the last name is each one's; names of up to three words
    ("Who is Tim and John's favorite player?",
     ["Who is Tim's favorite player?", "Who is John's favorite player?"]),
    ("Would Tim enjoy books by C. S. Lewis or John Greene?",
     ["Would Tim enjoy books by C. S. Lewis?", "Would Tim enjoy books by John Greene?"]),
    ("Where did Jon go, and did he stay there?", ["Where did Jon go", "did he stay there?"]),
    ("小明和小红是否都去过北京？", ["小明是否都去过北京？", "小红是否都去过北京？"]),
    ("小明和小红有什么共同爱好？", ["小明有什么共同爱好？", "小红有什么共同爱好？"]),
]
NO_SPLIT = ["Does Caroline like rock and roll?", "What is Melanie's favorite book?",
            "salt and pepper", "When did Caroline go to the support group?",
            "中华人民共和国成立于哪一年", "我喜欢和平", "小明喜欢什么运动", "", "   ",
            # a verb phrase sharing the subject is one fact: its half would have no subject
            "What does Nate do that he loves and can make money from?",
            "When did Caroline go on a hike and have a bad time?",
            "Caroline and Melanie painted what?"]


@pytest.mark.parametrize("query, subs", SPLITS)
def test_split(query, subs):
    assert split_query(query) == subs


@pytest.mark.parametrize("query", NO_SPLIT)
def test_no_split(query):
    assert split_query(query) == []


ENGLISH = {
    "question": "What did Caroline and Melanie both paint?",
    "evidence": ["Caroline painted sunrises.", "Melanie painted a horse."],
    "first": ["Caroline painted the old garden fence blue.",
              "Caroline painted her kitchen walls bright yellow last week."],
    "filler": [f"Melanie {x}." for x in (
        "went running in the park", "cooked pasta for dinner", "called her mother",
        "read a novel on the train", "adopted a cat", "fixed her bike", "visited the museum",
        "planted tomatoes", "watched a movie", "baked bread")],
}
CHINESE = {
    "question": "小明和小红都画了什么？",
    "evidence": ["小明画了日出。", "小红画了一匹马。"],
    "first": ["小明画了花园里那道旧篱笆。", "小明上周画了厨房那面墙。"],
    "filler": [f"小红{x}。" for x in (
        "去公园跑步", "做了意大利面", "给妈妈打电话", "在火车上看小说", "领养了一只猫",
        "修好了自行车", "参观了博物馆", "种了西红柿", "看了一部电影", "烤了面包")],
}
BM25 = ["bm25"]  # which memories match is decided by their words alone


def load(store: MemoryStore, data: dict) -> list:
    evidence = [store.add(t, subject="u").id for t in data["evidence"]]
    for t in data["first"] + data["filler"]:
        store.add(t, subject="u")
    return evidence


@pytest.mark.parametrize("data", [ENGLISH, CHINESE], ids=["en", "zh"])
def test_two_fact_question_finds_both_only_with_decompose(store: MemoryStore, data):
    evidence = load(store, data)
    k = 3
    off = [h.memory.id for h in store.search(data["question"], k=k, subject="u", routes=BM25)]
    assert not set(evidence) <= set(off)  # off by default: one person crowds out the other
    on = store.search(data["question"], k=k, subject="u", routes=BM25, explain=True,
                      options=SearchOptions(decompose=True))
    assert set(evidence) <= {h.memory.id for h in on}
    assert on.explain["params"]["embeddings"] is None  # no vector route, nothing embedded
    assert on.explain["subqueries"] == split_query(data["question"])
    assert [v["query"] for v in on[0].details["variants"]] == [
        data["question"], *on.explain["subqueries"]]
    explicit_off = store.search(data["question"], k=k, subject="u", routes=BM25,
                                options=SearchOptions(decompose=False))
    assert [h.memory.id for h in explicit_off] == off


def test_a_query_that_does_not_split_runs_the_plain_search(store: MemoryStore):
    load(store, ENGLISH)
    plain = store.search("Caroline painted a sunrise", k=5, subject="u")
    on = store.search("Caroline painted a sunrise", k=5, subject="u",
                      options=SearchOptions(decompose=True))
    assert [(h.memory.id, h.score) for h in on] == [(h.memory.id, h.score) for h in plain]
    assert "vector_rank" in on[0].details


@pytest.mark.parametrize("data", [ENGLISH, CHINESE], ids=["en", "zh"])
def test_all_routes_with_decompose(store: MemoryStore, data):
    evidence = load(store, data)
    on = store.search(data["question"], k=3, subject="u", explain=True,
                      options=SearchOptions(decompose=True))
    assert on.explain["params"]["embeddings"].startswith("<3 vectors")  # one per variant
    assert set(evidence) <= {h.memory.id for h in on}


@pytest.mark.parametrize("bad", ["yes", 1, 0.5])
def test_bad_decompose_is_refused(store: MemoryStore, bad):
    with pytest.raises(InvalidInput, match="decompose"):
        store.search("What did Caroline and Melanie paint?",
                     options=SearchOptions(decompose=bad))


def test_cli_decompose(store: MemoryStore, fresh_db, monkeypatch, tmp_path):
    monkeypatch.setenv("MEMDB_HOME", str(tmp_path / "home"))
    evidence = {str(e) for e in load(store, ENGLISH)}
    args = ("search", ENGLISH["question"], "--route", "bm25", "-k", "3", "--subject", "u")
    off = ok_json(fresh_db, *args)["hits"]
    assert not evidence <= {h["memory"]["id"] for h in off}
    on = ok_json(fresh_db, *args, "--decompose", "--explain")
    assert evidence <= {h["memory"]["id"] for h in on["hits"]}
    assert on["explain"]["subqueries"] == ["What did Caroline paint?", "What did Melanie paint?"]
    text = run(fresh_db, *args, "--decompose", "--sql")
    assert "-- sub-queries: What did Caroline paint? | What did Melanie paint?" in text.output


def test_async_driver(fresh_db, embedder):
    from tests.drivers import OnAsyncDriver

    with OnAsyncDriver(fresh_db, embedder=embedder, gate=None) as store:
        evidence = load(store, CHINESE)
        on = store.search(CHINESE["question"], k=3, subject="u", routes=BM25,
                          options=SearchOptions(decompose=True))
        assert set(evidence) <= {h.memory.id for h in on}
