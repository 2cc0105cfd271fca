"""Pure logic of session summaries and sedimentation (no database): sentence splitting in
Chinese and English, extractive choice, one class per sentence, dedup across summaries, and
the LLM configuration from the environment (nothing is configured unless MEMDB_LLM_MODEL is)."""

from __future__ import annotations

from uuid import uuid4

import pytest

from memdb import InvalidInput
from memdb.core.llm import ChatLLM, llm_from_env
from memdb.families.sediment import classify, extract
from memdb.families.summarize import extractive_summary, split_sentences, summarize


@pytest.mark.parametrize(("text", "expected"), [
    ("我们决定用PostgreSQL。Alice prefers tea! Use Vue.js 3.5 now",
     ["我们决定用PostgreSQL。", "Alice prefers tea!", "Use Vue.js 3.5 now"]),
    ("第一句；第二句？第三句！", ["第一句；", "第二句？", "第三句！"]),
    ("Line one\nLine two.  Line three?", ["Line one", "Line two.", "Line three?"]),
    ("   ", []),
])
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


def test_extractive_summary_keeps_order_drops_duplicates_and_small_talk():
    texts = ["数据库用PostgreSQL。数据库备份每天一次。", "数据库用PostgreSQL。", "你好！",
             "PostgreSQL backups run nightly.", "Hi."]
    out = extractive_summary(texts, weights=[0.9, 0.9, 0.1, 0.8, 0.1], max_sentences=3)
    assert out == "数据库用PostgreSQL。数据库备份每天一次。PostgreSQL backups run nightly."
    assert extractive_summary([]) == ""
    with pytest.raises(ValueError):
        extractive_summary(["a"], weights=[1, 2])


def test_summarize_without_llm_says_why():
    s = summarize(["Alice prefers tea."], None)
    assert (s.path, s.fallback_reason, s.text) == ("extractive", "no LLM configured",
                                                   "Alice prefers tea.")


@pytest.mark.parametrize(("sentence", "cls"), [
    ("Lesson learned: always back up first.", "lesson"),  # one class: the first that matches
    ("下次一定要先备份数据库", "lesson"),
    ("We decided to use PostgreSQL.", "decision"),
    ("我们决定下周发布", "decision"),
    ("Alice prefers green tea.", "preference"),
    ("王五喜欢喝绿茶", "preference"),
    ("Never deploy on Fridays.", "rule"),
    ("禁止在周五部署", "rule"),
    ("The weather was nice.", None),
    ("今天天气不错", None),
])
def test_classify(sentence, cls):
    assert classify(sentence) == cls


def test_extract_dedups_across_summaries_and_finds_recurring_sentences():
    a, b, c = uuid4(), uuid4(), uuid4()
    found = extract([(a, "Alice prefers tea. Standup at nine."),
                     (b, "alice  PREFERS tea! Standup at nine."),
                     (c, "Standup at nine。")], min_sessions=3)
    assert [(x.cls, x.content, x.source_ids) for x in found] == [
        ("preference", "Alice prefers tea.", (a, b)),
        ("pattern", "Recurring in recent sessions: Standup at nine.", (a, b, c))]


def test_llm_from_env(monkeypatch):
    for var in ("MEMDB_LLM_MODEL", "MEMDB_LLM_BASE_URL", "MEMDB_LLM_API_KEY", "MEMDB_LLM_TIMEOUT"):
        monkeypatch.delenv(var, raising=False)
    assert llm_from_env() is None
    monkeypatch.setenv("MEMDB_LLM_MODEL", "m")
    monkeypatch.setenv("MEMDB_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MEMDB_LLM_API_KEY", "sk-secret")
    monkeypatch.setenv("MEMDB_LLM_TIMEOUT", "2.5")
    llm = llm_from_env()
    assert isinstance(llm, ChatLLM) and llm.timeout == 2.5 and "sk-secret" not in repr(llm)
    monkeypatch.setenv("MEMDB_LLM_TIMEOUT", "soon")
    with pytest.raises(InvalidInput):
        llm_from_env()
    with pytest.raises(InvalidInput):
        ChatLLM(model="")


def test_unreachable_llm_falls_back():
    """Nothing listens on port 9 of localhost: the real openai client fails to connect."""
    s = summarize(["Alice prefers tea."], ChatLLM("http://127.0.0.1:9/v1", model="m", timeout=2))
    assert s.path == "extractive" and s.fallback_reason.startswith("LLM connection")
