"""A LangGraph graph whose node reads and writes memdb through the store, end to end.

The chat model is langchain-openai's ChatOpenAI, the real openai client underneath, talking
to the canned OpenAI-compatible server (tests/canned_openai.py, the only allowed fake); the
store is a real MemdbStore (sync graph) or AsyncMemdbStore (async graph) on the test
database. Two threads of one user: what the first turn stored, the second turn's prompt
contains; another user's turn sees none of it.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, TypedDict

import pytest

pytest.importorskip("langgraph.graph")
pytest.importorskip("langchain_openai")

from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.config import get_store  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.runtime import Runtime  # noqa: E402

from memdb.integrations.langgraph import AsyncMemdbStore, MemdbStore  # noqa: E402
from tests.canned_openai import CHAT, CannedOpenAI, Reply  # noqa: E402


class Chat(TypedDict, total=False):
    user: str
    message: str
    reply: str


def _prompt(user: str, message: str, found: list[Any]) -> list[tuple[str, str]]:
    known = "\n".join(f"- {item.value['text']}" for item in found) or "(nothing yet)"
    return [("system", f"You are {user}'s assistant. What you remember about them:\n{known}"),
            ("user", message)]


def _remember(message: str) -> dict[str, str] | None:
    return {"text": message.split(":", 1)[1].strip()} if message.startswith("Remember:") \
        else None


def sync_graph(llm: ChatOpenAI, store: MemdbStore) -> Any:
    def respond(state: Chat) -> Chat:
        store = get_store()
        namespace = ("memories", state["user"])
        found = store.search(namespace, query=state["message"], limit=3)
        reply = llm.invoke(_prompt(state["user"], state["message"], found)).content
        fact = _remember(state["message"])
        if fact:
            store.put(namespace, str(uuid.uuid4()), fact)
        return {"reply": reply}

    builder = StateGraph(Chat)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    builder.add_edge("respond", END)
    return builder.compile(store=store)


def async_graph(llm: ChatOpenAI, store: AsyncMemdbStore) -> Any:
    async def respond(state: Chat, runtime: Runtime) -> Chat:
        namespace = ("memories", state["user"])
        found = await runtime.store.asearch(namespace, query=state["message"], limit=3)
        reply = (await llm.ainvoke(_prompt(state["user"], state["message"], found))).content
        fact = _remember(state["message"])
        if fact:
            await runtime.store.aput(namespace, str(uuid.uuid4()), fact)
        return {"reply": reply}

    def count(state: Chat) -> Chat:  # a sync node in the async graph: batch() from a thread
        n = len(get_store().search(("memories", state["user"])))
        return {"reply": f"{state['reply']} ({n})"}

    builder = StateGraph(Chat)
    builder.add_node("respond", respond)
    builder.add_node("count", count)
    builder.add_edge(START, "respond")
    builder.add_edge("respond", "count")
    builder.add_edge("count", END)
    return builder.compile(store=store)


SCRIPT = [Reply("Noted, green tea."), Reply("You like green tea."), Reply("I know nothing.")]
TURNS = [("alice", "Remember: I like green tea, 我喜欢喝绿茶"),
         ("alice", "What do I like to drink?"),
         ("bob", "What do I like to drink?")]


def _system_prompts(api: CannedOpenAI) -> list[str]:
    return [r["body"]["messages"][0]["content"] for r in api.requests if r["path"] == CHAT]


def _check(api: CannedOpenAI, replies: list[str]) -> None:
    prompts = _system_prompts(api)
    assert len(prompts) == 3
    assert "(nothing yet)" in prompts[0]
    assert "I like green tea, 我喜欢喝绿茶" in prompts[1]  # stored by turn 1, found by turn 2
    assert "green tea" not in prompts[2] and "(nothing yet)" in prompts[2]  # bob: nothing
    assert replies[1].startswith("You like green tea.")


def test_sync_graph_reads_and_writes_memdb(fresh_db: str, embedder: Any) -> None:
    with CannedOpenAI(SCRIPT) as api, \
            MemdbStore(fresh_db, tenant="acme", embedder=embedder) as store:
        llm = ChatOpenAI(model="canned", base_url=api.base_url, api_key="sk-test",
                         max_retries=0)
        graph = sync_graph(llm, store)
        replies = [graph.invoke({"user": u, "message": m})["reply"] for u, m in TURNS]
        _check(api, replies)
        (item,) = store.search(("memories", "alice"))
        assert item.value == {"text": "I like green tea, 我喜欢喝绿茶"}
        assert store.memory_store.get(store.memory_store.list()[0].id).metadata == item.value


def test_async_graph_reads_and_writes_memdb(fresh_db: str, embedder: Any) -> None:
    async def main() -> list[str]:
        async with AsyncMemdbStore(fresh_db, tenant="acme", embedder=embedder) as store:
            llm = ChatOpenAI(model="canned", base_url=api.base_url, api_key="sk-test",
                             max_retries=0)
            graph = async_graph(llm, store)
            replies = [(await graph.ainvoke({"user": u, "message": m}))["reply"]
                       for u, m in TURNS]
            (item,) = await store.asearch(("memories", "alice"), query="tea")
            assert item.value == {"text": "I like green tea, 我喜欢喝绿茶"}
            with pytest.raises(asyncio.InvalidStateError):
                store.get(("memories", "alice"), "x")  # sync call on the loop's thread
            return replies

    with CannedOpenAI(SCRIPT) as api:
        replies = asyncio.run(main())
        _check(api, replies)
        assert [r.rsplit(" ", 1)[1] for r in replies] == ["(1)", "(1)", "(0)"]
