"""Short-term and working memory per session (memdb.families.session; tables memdb.sessions and
memdb.session_messages, revision 0008), against the real embedded PostgreSQL.

The LLM of the running summary is faked only by tests/canned_openai.py behind the real openai
client (memdb.core.llm.ChatLLM); everything else is real: the database, the SQL functions, the
offline token counter and the extractive summarizer. Chinese and English throughout.
"""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from memdb import MemoryStore
from memdb.core.errors import Conflict, Forbidden, InvalidInput, NotFound
from memdb.core.llm import ChatLLM
from memdb.core.tokens import count_tokens, estimate_tokens
from memdb.families.session import SessionWindow, WorkingState
from tests.canned_openai import CannedOpenAI, Reply, Status

EN_TURNS = [("user", "We decided to use PostgreSQL 18 for the memory layer."),
            ("assistant", "Noted: PostgreSQL 18 with pgvector."),
            ("user", "Backups of the database run nightly at 02:00."),
            ("assistant", "Okay, nightly backups at 02:00."),
            ("user", "Now let us plan the context builder.")]
ZH_TURNS = [("user", "我们决定记忆层使用PostgreSQL 18。"),
            ("assistant", "好的，使用PostgreSQL 18和pgvector。"),
            ("user", "数据库每天凌晨两点备份。"),
            ("assistant", "明白，每天凌晨两点备份数据库。"),
            ("user", "现在我们来设计上下文构建器。")]


def test_token_counter_counts_chinese_and_english():
    """The offline counter (the model's tokenizer) and the estimator agree roughly, and count
    a CJK character and a Latin word each as about one token."""
    for text in ("我喜欢绿茶，不加糖。", "Alice prefers green tea without sugar."):
        exact, guess = count_tokens(text), estimate_tokens(text)
        assert exact > 0 and 0.5 * exact <= guess <= 2.5 * exact, (text, exact, guess)
    assert estimate_tokens("数据库") == 3
    assert estimate_tokens("database backups") == 3  # ceil(1.3 * 2)
    assert count_tokens("") == 0


@pytest.mark.parametrize("turns", [EN_TURNS, ZH_TURNS], ids=["en", "zh"])
def test_window_by_message_count_folds_the_rest_into_a_summary(store, turns):
    window = SessionWindow(max_tokens=None, max_messages=2)
    results = [store.sessions.append("s1", role, text, window=window, llm=None)
               for role, text in turns]
    assert [r.folded for r in results] == [0, 0, 1, 1, 1]
    assert all(r.tokens == count_tokens(t) for r, (_, t) in zip(results, turns, strict=True))
    assert results[2].summary_path == "extractive"
    assert results[2].fallback_reason == "no LLM configured"
    view = store.sessions.get("s1", window=window)
    assert [m.content for m in view.messages] == [t for _, t in turns[-2:]]
    assert view.buffered == 2  # folded turns are deleted from the buffer
    # the summary holds the scrolled-out turns' content (the backup time, in either language)
    assert "02:00" in view.summary or "两点" in view.summary
    assert view.summary_path == "extractive" and view.summary_tokens == count_tokens(view.summary)


def test_window_by_token_budget_keeps_the_newest_turn_even_if_alone_too_big(store):
    window = SessionWindow(max_tokens=30, max_messages=None)
    for role, text in EN_TURNS + ZH_TURNS:
        store.sessions.append("s", role, text, window=window, llm=None)
    view = store.sessions.get("s", window=window)
    assert sum(m.tokens for m in view.messages) <= 30
    assert view.messages[-1].content == ZH_TURNS[-1][1]
    big = "很长的一句话。" * 40
    r = store.sessions.append("s", "user", big, window=window, llm=None)
    assert r.tokens > 30
    view = store.sessions.get("s", window=window)
    assert [m.content for m in view.messages] == [big] and view.buffered == 1


def test_running_summary_uses_the_llm_and_falls_back_when_it_fails(store):
    """LLM faked by the canned OpenAI-compatible server behind the real openai client."""
    window = SessionWindow(max_tokens=None, max_messages=1)
    with CannedOpenAI([Reply('{"summary": "用户选定了PostgreSQL 18。"}'), Status(500)]) as api:
        llm = ChatLLM(api.base_url, model="canned", timeout=5)
        store.sessions.append("s", "user", ZH_TURNS[0][1], window=window, llm=llm)
        r = store.sessions.append("s", "assistant", ZH_TURNS[1][1], window=window, llm=llm)
        assert (r.folded, r.summary_path) == (1, "llm")
        assert store.sessions.get("s", window=window).summary == "用户选定了PostgreSQL 18。"
        prompt = api.requests[-1]["body"]["messages"][-1]["content"]
        assert "user: 我们决定记忆层使用PostgreSQL 18。" in prompt
        r = store.sessions.append("s", "user", ZH_TURNS[2][1], window=window, llm=llm)
        assert (r.summary_path, r.fallback_reason) == ("extractive", "LLM http: status 500")
        view = store.sessions.get("s", window=window)
        # the extractive fold keeps the previous summary's content and adds the new turn's
        assert "PostgreSQL 18" in view.summary and "pgvector" in view.summary


def test_bad_messages_are_refused(store):
    with pytest.raises(InvalidInput):
        store.sessions.append("s", "robot", "hi")
    with pytest.raises(InvalidInput):
        store.sessions.append("", "user", "hi")
    with pytest.raises(InvalidInput):
        store.sessions.append("s", "user", "x\x00y")
    with pytest.raises(InvalidInput):
        store.sessions.append("s", "user", "a" * 70_000)
    with pytest.raises(NotFound):
        store.sessions.get("never")
    assert store.sessions.recent("never") == ()


def test_working_state_round_trip_and_optimistic_concurrency(store):
    assert store.sessions.get_state("s") == WorkingState()  # version 0, nothing stored
    s1 = store.sessions.set_state("s", {"goal": "发布 v1", "constraints": ["不用 Redis"],
                                        "plan": ["写表", "写测试"], "budget": {"tool_calls": 10}},
                                  expected_version=0)
    assert s1.version == 1 and s1.goal == "发布 v1"
    read = store.sessions.get_state("s")
    assert read == s1 and read.to_json()["plan"] == ["写表", "写测试"]
    # worker A and worker B both read version 1; A writes first, B's write is refused
    a = store.sessions.set_state("s", read.replace(steps_done=("写表",), plan=("写测试",)),
                                 expected_version=read.version)
    assert a.version == 2
    with pytest.raises(Conflict, match="version 2, not 1"):
        store.sessions.set_state("s", read.replace(goal="B's goal"), expected_version=read.version)
    assert store.sessions.get_state("s").goal == "发布 v1"  # B changed nothing
    with pytest.raises(Conflict):
        store.sessions.update_state("s", expected_version=1, goal="stale")
    c = store.sessions.update_state("s", steps_done=["写表", "写测试"], plan=[])
    assert (c.version, c.steps_done, c.plan) == (3, ("写表", "写测试"), ())
    with pytest.raises(Conflict):  # creating when one exists is also a stale write
        store.sessions.set_state("s", {}, expected_version=0)


def test_working_state_validation(store):
    for bad in ({"goal": 3}, {"plan": "one string"}, {"budget": {"usd": "a lot"}},
                {"budget": {"x": float("nan")}}, {"unknown": 1}, {"notes": {"a": "\x00"}}):
        with pytest.raises(InvalidInput):
            store.sessions.set_state("s", bad, expected_version=0)
    with pytest.raises(InvalidInput):
        store.sessions.set_state("s", {}, expected_version=-1)
    with pytest.raises(InvalidInput):
        store.sessions.update_state("s", version=5)
    with pytest.raises(InvalidInput):
        store.sessions.update_state("s", color="red")


def test_concurrent_state_writers_never_lose_an_update(fresh_db, embedder):
    """Eight threads each add one step with read-modify-write, retrying on Conflict: all eight
    steps land, and the version counts every write."""
    store = MemoryStore(fresh_db, embedder=embedder, gate=None, pool_size=8)
    store.sessions.set_state("job", {"steps_done": []}, expected_version=0)
    conflicts = []

    def worker(n: int) -> None:
        while True:
            st = store.sessions.get_state("job")
            try:
                store.sessions.set_state(
                    "job", st.replace(steps_done=(*st.steps_done, f"step {n}")),
                    expected_version=st.version)
                return
            except Conflict:
                conflicts.append(n)
                time.sleep(0.001 * n)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = store.sessions.get_state("job")
    assert sorted(final.steps_done) == sorted(f"step {n}" for n in range(8))
    assert final.version == 9
    store.close()


def test_concurrent_appends_fold_each_turn_once(fresh_db, embedder):
    """Four threads append to one session with a 3-turn window: every turn ends up either in
    the window or folded, none twice, and the buffer holds exactly the window."""
    store = MemoryStore(fresh_db, embedder=embedder, gate=None, pool_size=8)
    window = SessionWindow(max_tokens=None, max_messages=3)

    def worker(n: int) -> None:
        for i in range(5):
            store.sessions.append("busy", "user", f"worker {n} message {i}.", window=window,
                                  llm=None)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store.sessions.append("busy", "user", "last.", window=window, llm=None)
    view = store.sessions.get("busy", window=window)
    assert len(view.messages) == 3 and view.buffered == 3
    store.close()


def test_sessions_are_isolated_by_tenant_and_subject_and_erased(fresh_db, embedder):
    alice = MemoryStore(fresh_db, embedder=embedder, gate=None, subject="alice")
    other = MemoryStore(fresh_db, embedder=embedder, gate=None, tenant="other")
    admin = MemoryStore(fresh_db, embedder=embedder, gate=None)
    alice.sessions.append("s", "user", "Alice 的秘密：蓝色。", llm=None)
    alice.sessions.set_state("s", {"goal": "alice goal"}, expected_version=0)
    admin.sessions.append("s", "user", "bob here", subject="bob", llm=None)
    with pytest.raises(NotFound):
        other.sessions.get("s", subject="alice")
    with pytest.raises(NotFound):  # subject isolation: alice's store cannot read bob
        alice.sessions.get("s", subject="bob")
    with pytest.raises(Forbidden):
        alice.sessions.append("s", "user", "as bob", subject="bob", llm=None)
    assert [s["subject"] for s in admin.sessions.list()] == ["bob", "alice"]
    erased = admin.subjects.forget("alice")
    assert erased.counts["sessions"] == 1 and erased.counts["session_messages"] == 1
    with pytest.raises(NotFound):
        admin.sessions.get("s", subject="alice")
    assert admin.sessions.get("s", subject="bob").messages[0].content == "bob here"
    with psycopg.connect(fresh_db) as conn:
        n = conn.execute("SELECT count(*) FROM memdb.session_messages WHERE content LIKE "
                         "'%秘密%'").fetchone()[0]
    assert n == 0
    admin.sessions.delete("s", subject="bob")
    with pytest.raises(NotFound):
        admin.sessions.delete("s", subject="bob")
    for s in (alice, other, admin):
        s.close()


def test_session_functions_in_sql(raw):
    """The SQL functions work from psql too (as the admin login)."""
    for n, tokens in enumerate([5, 5, 5, 20]):
        raw.execute("SELECT memdb.session_append('t', 'u', 's', 'user', %s, %s)",
                    (f"m{n}", tokens))
    rows = raw.execute("SELECT content, in_window FROM memdb.session_window('t', 'u', 's', 25, "
                       "NULL)").fetchall()
    assert rows == [("m0", False), ("m1", False), ("m2", True), ("m3", True)]
    through = raw.execute("SELECT max(id) FROM memdb.session_messages WHERE content = 'm1'"
                          ).fetchone()[0]
    assert raw.execute("SELECT memdb.session_fold('t','u','s', 0, %s, 'sum', 1, 'extractive')",
                       (through,)).fetchone()[0] is True
    assert raw.execute("SELECT memdb.session_fold('t','u','s', 0, %s, 'again', 1, "
                       "'extractive')", (through,)).fetchone()[0] is False
    assert raw.execute("SELECT count(*) FROM memdb.session_messages").fetchone()[0] == 2
    assert raw.execute("SELECT * FROM memdb.session_set_state('t','u','s','{\"goal\":\"g\"}', 0)"
                       ).fetchone() == (True, 1)
    assert raw.execute("SELECT * FROM memdb.session_set_state('t','u','s','{}', 0)"
                       ).fetchone() == (False, 1)
