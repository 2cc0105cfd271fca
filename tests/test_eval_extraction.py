"""memdb.evaluation.extraction (`memdb eval extraction`): remember's extraction on labeled turns.

The heuristic path runs for real; the LLM path runs memdb's real client against
tests/canned_openai.py (a canned OpenAI-compatible server: the only fake, never the database).
"""

from __future__ import annotations

import json

import psycopg
import pytest
from click.testing import CliRunner

from memdb.cli import cli
from memdb.core.llm import ChatLLM
from memdb.evaluation import format_extraction, run_extraction
from memdb.evaluation.extraction import load_turns, matches
from tests.canned_openai import CannedOpenAI, Reply

TURNS = [
    {"id": "zh", "lang": "zh", "kind": "multi", "text": "我叫李雷，在北京工作，喜欢打篮球。",
     "facts": ["叫李雷", "在北京工作", "喜欢打篮球"]},
    {"id": "en", "lang": "en", "kind": "allergy", "text": "I'm allergic to peanuts.",
     "facts": ["allergic to peanuts"]},
    {"id": "q", "lang": "en", "kind": "question", "text": "What is the capital of Australia?",
     "facts": []},
]


def _fact(content: str) -> dict:
    return {"content": content, "category": "entities", "kind": "semantic", "importance": 0.6,
            "source": "user_statement", "action": "add", "target": None, "reason": "said"}


def _reply(*contents: str) -> Reply:
    return Reply(json.dumps({"facts": [_fact(c) for c in contents]}, ensure_ascii=False))


@pytest.fixture
def turns_path(tmp_path) -> str:
    path = tmp_path / "turns.json"
    path.write_text(json.dumps({"turns": TURNS}, ensure_ascii=False), encoding="utf-8")
    return str(path)


def _eval_databases(server_dsn: str) -> set[str]:
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'memdb_eval_%'")
        return {r[0] for r in rows}


def test_matching_rule_chinese_and_english() -> None:
    assert matches("我叫李雷，在北京工作，喜欢打篮球。", "在北京工作")
    assert matches("User is allergic to peanuts", "allergic to peanuts")
    assert matches("Likes coffee black, no sugar", "like coffee black, no sugar")
    assert not matches("我叫李雷", "在北京工作")
    assert not matches("user_statement", "allergic to peanuts")
    assert not matches("I'm allergic to shellfish.", "allergic to peanuts")


def test_bundled_set_is_chinese_and_english_with_factless_turns(tmp_path) -> None:
    turns = load_turns()
    assert 30 <= len(turns) <= 40 and len({t["id"] for t in turns}) == len(turns)
    assert {t["lang"] for t in turns} == {"zh", "en"}
    kinds = {t["kind"] for t in turns}
    assert {"multi", "preference", "allergy", "negation", "question", "chitchat"} <= kinds
    assert all(not t["facts"] for t in turns if t["kind"] in ("question", "chitchat"))
    assert any(len(t["facts"]) >= 3 for t in turns if t["lang"] == "zh")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"id": "x", "text": "hi"}]), encoding="utf-8")
    with pytest.raises(ValueError, match="id, a text and a list of facts"):
        load_turns(bad)


def test_heuristic_path(turns_path: str, server_dsn: str, embedder) -> None:
    before = _eval_databases(server_dsn)
    r = run_extraction(turns_path, dsn=server_dsn, llm=None, progress=False, embedder=embedder)
    assert _eval_databases(server_dsn) == before, "the scratch database was not dropped"
    assert list(r["paths"]) == ["heuristic"] and r["turns"] == 3 and r["facts"] == 4
    h = r["paths"]["heuristic"]
    # the heuristic keeps each cue sentence whole: it covers all three Chinese facts
    zh = h["per_language"]["zh"]
    assert (zh["expected"], zh["found"], zh["missed"], zh["spurious"]) == (3, 3, 0, 0)
    assert h["per_language"]["en"]["found"] == 1 and h["per_language"]["en"]["spurious"] == 0
    assert h["overall"]["recall"] == 1.0 and "fallbacks" not in h["overall"]
    q = next(t for t in h["turns"] if t["id"] == "q")
    assert q["memories"] == [] and q["llm_ms"] is None
    table = format_extraction(r)
    assert "heuristic  zh" in table and "100.0" in table


def test_llm_path_on_the_canned_server(turns_path: str, server_dsn: str, embedder) -> None:
    """Canned model (canned_openai.py): turn 1 gets the three Chinese facts, the allergy
    turn a schema word (refused, the heuristic falls in: a fallback), the question an
    invented fact (spurious). A fact the model repeats counts as one memory."""
    script = [_reply("叫李雷", "在北京工作", "喜欢打篮球", "叫李雷"), _reply("user_statement"),
              _reply("Australia capital question")]
    with CannedOpenAI(script) as api:
        llm = ChatLLM(api.base_url, model="canned", timeout=30)
        r = run_extraction(turns_path, dsn=server_dsn, llm=llm, progress=False,
                           embedder=embedder)
        assert len([q for q in api.requests if q["path"].endswith("/chat/completions")]) == 3
    assert list(r["paths"]) == ["heuristic", "llm"]
    m = r["paths"]["llm"]
    by_id = {t["id"]: t for t in m["turns"]}
    assert by_id["zh"]["path"] == "llm" and by_id["zh"]["from_model"] == 4
    assert sorted(by_id["zh"]["memories"]) == sorted(["叫李雷", "在北京工作", "喜欢打篮球"])
    assert by_id["en"]["path"] == "heuristic" and by_id["en"]["refused"][0]["item"] == \
        "user_statement" and "none of the model's" in by_id["en"]["fallback_reason"]
    assert by_id["en"]["memories"] == ["I'm allergic to peanuts."]
    assert by_id["q"]["spurious"] == ["Australia capital question"]
    o = m["overall"]
    assert (o["expected"], o["found"], o["missed"], o["spurious"]) == (4, 4, 0, 1)
    assert (o["fallbacks"], o["refused"], o["from_model"]) == (1, 1, 5)
    assert o["llm_ms"]["p50"] is not None and o["llm_ms"]["p50"] >= 0
    assert "canned" in r["meta"]["llm"]
    table = format_extraction(r)
    assert "llm        all" in table


def test_cli_eval_extraction(turns_path: str, fresh_db: str, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("MEMDB_LLM_MODEL", raising=False)
    out = tmp_path / "result.json"
    res = CliRunner().invoke(cli, ["--dsn", fresh_db, "eval", "extraction", "--turns",
                                   turns_path, "--json", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["paths"]["heuristic"]["overall"]["found"] == 4
    assert "heuristic  all" in res.output
    assert "extraction [heuristic]: 3/3" in res.stderr
    bad = CliRunner().invoke(cli, ["--dsn", fresh_db, "eval", "extraction", "--timeout", "0"])
    assert bad.exit_code == 1 and "error:" in bad.output
