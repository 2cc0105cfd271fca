"""The context builder (memdb.families.context): priority order, citations, whole items, and a
budget
that is never exceeded — in Chinese and English, with a property test over random budgets.

Real database (the embedded PostgreSQL), real embedder and token counter; no LLM is needed.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdb import MemoryStore
from memdb.core.errors import InvalidInput
from memdb.core.tokens import MESSAGE_OVERHEAD, count_tokens, message_tokens
from memdb.families.context import INSTRUCTIONS, TEXTS, Item, assemble, language_of
from memdb.families.session import SessionWindow

RULES = ["Always answer in the user's language.", "回答要简洁，不超过三句话。"]
FACTS = [
    ("Alice prefers green tea without sugar.", "preferences"),
    ("Alice lives in Berlin and works as a nurse.", "entities"),
    ("爱丽丝喜欢喝不加糖的绿茶。", "preferences"),
    ("爱丽丝住在柏林，是一名护士。", "entities"),
    ("The team decided to use PostgreSQL 18 for the memory layer.", "events"),
    ("团队决定记忆层使用PostgreSQL 18。", "events"),
    ("Bob's favourite drink is black coffee.", "preferences"),
]
TURNS = [("user", "Hi, I'm planning a trip."), ("assistant", "Great, where to?"),
         ("user", "我想去柏林看爱丽丝。"), ("assistant", "好的，柏林很美。"),
         ("user", "What should I bring her?")]
MEM_LINE = re.compile(r"^\[mem:([0-9a-f-]{36})\] (.*)$")


@pytest.fixture(scope="module")
def world(module_db, embedder):
    """alice: two system rules, seven facts, one session with a summary and five turns."""
    store = MemoryStore(module_db, embedder=embedder, gate=None)
    ids = {}
    for text in RULES:
        ids[text] = str(store.add(text, subject="alice", category="system",
                                  importance=0.9).id)
    for text, category in FACTS:
        ids[text] = str(store.add(text, subject="alice", category=category).id)
    store.add("Carol's rule: never mention Alice.", subject="carol", category="system")
    window = SessionWindow(max_tokens=None, max_messages=5)
    store.sessions.append("trip", "user", "Earlier we talked about the weather in Berlin.",
                          subject="alice", window=window, llm=None)
    for role, text in TURNS:
        store.sessions.append("trip", role, text, subject="alice", window=window, llm=None)
    yield store, ids
    store.close()


def _recount(ctx) -> int:
    return sum(message_tokens(m) for m in ctx.messages)


def _check_whole(ctx, ids: dict[str, str]) -> None:
    """Every memory line is one whole stored memory with its own id; turns are whole."""
    by_id = {v: k for k, v in ids.items()}
    for m in ctx.messages:
        for line in m["content"].splitlines():
            found = MEM_LINE.match(line.removeprefix("- "))
            if found:
                assert by_id[found.group(1)] == found.group(2)
    turn_texts = {t for _, t in TURNS}
    for m in ctx.messages:
        if m["role"] in ("user", "assistant"):
            assert m["content"] in turn_texts


@pytest.mark.parametrize("query", ["What does Alice like to drink?", "爱丽丝喜欢喝什么？"])
def test_priority_order_citations_and_language(world, query):
    store, ids = world
    ctx = store.context(query, session="trip", budget_tokens=4000, subject="alice", k=4)
    lang = language_of(query)
    first = ctx.messages[0]
    assert first["role"] == "system" and first["content"].startswith(INSTRUCTIONS[lang])
    for rule in RULES:  # both rules, each with its id, in the first message
        assert f"[mem:{ids[rule]}] {rule}" in first["content"]
    assert "Carol" not in str(ctx.messages)  # another subject's rules are not hers
    memories = ctx.messages[1]["content"].splitlines()
    assert memories[0] == TEXTS[lang]["memories"]
    cited = [MEM_LINE.match(x).group(1) for x in memories[1:]]
    assert cited == list(ctx.memory_ids) and len(cited) == 4
    tea = ids["爱丽丝喜欢喝不加糖的绿茶。"] if lang == "zh" else ids[FACTS[0][0]]
    assert tea in cited  # the relevant memory is there, citable by its id
    assert not set(cited) & {ids[r] for r in RULES}  # rules are not repeated as memories
    assert ctx.messages[2]["content"].startswith(TEXTS[lang]["summary"])
    assert "weather" in ctx.messages[2]["content"]
    assert [(m["role"], m["content"]) for m in ctx.messages[3:]] == TURNS
    assert ctx.included == {"rules": 2, "memories": 4, "summary": 1, "turns": 5}
    assert ctx.tokens == _recount(ctx) <= 4000
    _check_whole(ctx, ids)


def test_instructions_are_configurable(world):
    store, _ = world
    own = store.context("tea?", budget_tokens=2000, subject="alice",
                        instructions="Use only the notes.")
    assert own.messages[0]["content"].startswith("Use only the notes.\n\nRules:")
    none = store.context("tea?", budget_tokens=2000, subject="alice", instructions=None)
    assert none.messages[0]["content"].startswith("Rules:")
    bare = store.context("tea?", budget_tokens=2000, subject="nobody", instructions=None)
    assert bare.messages == [] and bare.tokens == 0
    told = store.context("量子物理", budget_tokens=2000, subject="nobody")
    assert [m["content"] for m in told.messages] == [INSTRUCTIONS["zh"], TEXTS["zh"]["none"]]
    with pytest.raises(InvalidInput):
        store.context("tea?", budget_tokens=2000, instructions="")


def test_small_budgets_drop_whole_items_by_priority(world):
    store, ids = world
    full = store.context("Alice tea", session="trip", budget_tokens=4000,
                         subject="alice", k=7)
    mandatory = message_tokens(full.messages[0])
    with pytest.raises(InvalidInput, match=f"need {mandatory} tokens"):
        store.context("Alice tea", session="trip", budget_tokens=mandatory - 1,
                      subject="alice")
    only_rules = store.context("Alice tea", session="trip", budget_tokens=mandatory,
                               subject="alice", k=7)
    assert only_rules.messages == full.messages[:1] and only_rules.tokens == mandatory
    # room for the memories but not the summary and turns: turns go first, then the summary
    mem_cost = message_tokens(full.messages[1])
    ctx = store.context("Alice tea", session="trip", budget_tokens=mandatory + mem_cost,
                        subject="alice", k=7)
    assert ctx.messages == full.messages[:2]
    assert ctx.dropped["summary"] == 1 and ctx.dropped["turns"] == 5
    # a few tokens more than the memories + summary: only the newest turn(s) that fit, whole
    last = message_tokens({"content": TURNS[-1][1]})
    budget = mandatory + mem_cost + message_tokens(full.messages[2]) + last
    ctx = store.context("Alice tea", session="trip", budget_tokens=budget,
                        subject="alice", k=7)
    assert ctx.messages[-1]["content"] == TURNS[-1][1] and ctx.included["turns"] == 1
    assert ctx.tokens == budget
    _check_whole(ctx, ids)


def test_include_query_and_memory_cap(world):
    store, _ = world
    ctx = store.context("爱丽丝住在哪里？", session="trip", budget_tokens=3000,
                        subject="alice", include_query=True, max_memory_tokens=40)
    assert ctx.messages[-1] == {"role": "user", "content": "爱丽丝住在哪里？"}
    memory_msgs = [m for m in ctx.messages if m["content"].startswith(TEXTS["zh"]["memories"])]
    assert all(message_tokens(m) <= 40 for m in memory_msgs)
    assert ctx.dropped["memories"] > 0


def test_assemble_skips_a_large_memory_but_takes_a_smaller_one():
    big = Item("x " * 300, "00000000-0000-0000-0000-000000000001")
    small = Item("small fact", "00000000-0000-0000-0000-000000000002")
    ctx = assemble(100, instructions=None, memories=[big, small])
    assert ctx.memory_ids == (small.id,) and ctx.dropped["memories"] == 1
    assert ctx.tokens == _recount(ctx) <= 100


def test_turns_stay_contiguous():
    turns = [Item("short one", role="user"), Item("长" * 200, role="assistant"),
             Item("short two", role="user")]
    ctx = assemble(60, instructions=None, turns=turns)
    assert [m["content"] for m in ctx.messages] == ["short two"]  # never skips the long one
    assert ctx.dropped["turns"] == 2


_TEXT = st.one_of(
    st.text(alphabet="的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年",
            min_size=1, max_size=80),
    st.lists(st.sampled_from("alice tea berlin nurse postgres memory budget the a of".split()),
             min_size=1, max_size=40).map(" ".join),
)


@settings(max_examples=300, deadline=None)
@given(budget=st.integers(1, 1500), rules=st.lists(_TEXT, max_size=3),
       memories=st.lists(_TEXT, max_size=12), summary=st.one_of(st.just(""), _TEXT),
       turns=st.lists(_TEXT, max_size=12), with_instructions=st.booleans(),
       language=st.sampled_from(["en", "zh"]))
def test_assemble_never_exceeds_the_budget(budget, rules, memories, summary, turns,
                                           with_instructions, language):
    """Random Chinese and English items and budgets: the total is exact and within budget,
    or the mandatory part alone is too big and InvalidInput says so."""
    ids = [f"00000000-0000-0000-0000-{n:012d}" for n in range(len(memories))]
    try:
        ctx = assemble(budget, instructions=INSTRUCTIONS[language] if with_instructions else None,
                       rules=[Item(r, f"r{n}") for n, r in enumerate(rules)],
                       memories=[Item(m, i) for m, i in zip(memories, ids, strict=True)],
                       summary=summary, turns=[Item(t, role="user") for t in turns],
                       language=language)
    except InvalidInput:
        head = "\n\n".join(([INSTRUCTIONS[language]] if with_instructions else [])
                           + (["\n".join([TEXTS[language]["rules"],
                                          *(f"- {Item(r, f'r{n}').line()}"
                                            for n, r in enumerate(rules))])] if rules else []))
        assert MESSAGE_OVERHEAD + count_tokens(head) > budget
        return
    assert ctx.tokens == _recount(ctx) <= budget
    kept = set(ctx.memory_ids)
    assert len(kept) + ctx.dropped["memories"] == len(memories)
    assert ctx.included["turns"] + ctx.dropped["turns"] == len(turns)
    if ctx.included["turns"]:
        tail = [m["content"] for m in ctx.messages[-ctx.included["turns"]:]]
        assert tail == turns[-ctx.included["turns"]:]  # whole, newest, in order


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(budget=st.integers(1, 1200), query=st.sampled_from(
    ["What does Alice drink?", "爱丽丝住在哪里？", "PostgreSQL 18", "柏林 trip"]))
def test_build_context_never_exceeds_random_budgets(world, budget, query):
    store, ids = world
    try:
        ctx = store.context(query, session="trip", budget_tokens=budget,
                            subject="alice", k=7)
    except InvalidInput as exc:
        assert "too small" in str(exc)
        return
    assert ctx.tokens == _recount(ctx) <= budget
    _check_whole(ctx, ids)


def test_build_context_rejects_bad_arguments(world):
    store, _ = world
    for kwargs in ({"budget_tokens": 0}, {"budget_tokens": "10"}, {"k": 0},
                   {"max_memory_tokens": 0}, {"subject": ""}):
        with pytest.raises(InvalidInput):
            store.context("q", **{"budget_tokens": 100, **kwargs})
    with pytest.raises(InvalidInput):
        store.context(None, budget_tokens=100)  # type: ignore[arg-type]


def test_a_counter_that_is_not_subadditive_still_fits():
    """The fast packing bound assumes a join adds at most one token; a counter breaking that
    (here: cost grows with the square of the line count) makes assemble recount exactly."""
    def quadratic(text: str) -> int:
        return text.count("\n") ** 2 + 1

    items = [Item(f"fact {n}", f"00000000-0000-0000-0000-{n:012d}") for n in range(10)]
    ctx = assemble(30, instructions=None, memories=items, counter=quadratic)
    assert 0 < len(ctx.memory_ids) < 10
    assert ctx.tokens == sum(MESSAGE_OVERHEAD + quadratic(m["content"])
                             for m in ctx.messages) <= 30
