"""memdb.evaluation: the LoCoMo retrieval evaluation on a tiny LoCoMo-format file."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import psycopg
import pytest

from memdb.evaluation import (
    format_table,
    load_locomo,
    memory_inputs,
    parse_date,
    parse_evidence,
    run_locomo,
)

ROUTES = {"vector", "bm25", "hybrid", "hybrid_mmr", "hybrid_decay"}
METRICS = {"recall@5", "recall@10", "recall@25", "recall@50", "mrr"}


def _session(prefix: int, turns: list[tuple[str, str]]) -> list[dict]:
    return [{"speaker": who, "dia_id": f"D{prefix}:{n}", "text": text}
            for n, (who, text) in enumerate(turns, start=1)]


def _tiny() -> list[dict]:
    en_1 = _session(1, [
        ("Alice", "Hi Bob, how was your weekend?"),
        ("Bob", "I adopted a golden retriever puppy named Biscuit!"),
        ("Alice", "That's wonderful, puppies are so much fun."),
        ("Bob", "Thanks! I also started learning the violin last month."),
        ("Alice", "I have been training for the Boston marathon."),
        ("Bob", "Good luck with the race."),
    ])
    en_2 = _session(2, [
        ("Bob", "Biscuit chewed my violin bow yesterday."),
        ("Alice", "Oh no! Did you buy a new bow?"),
        ("Bob", "Yes, and then I visited my sister."),
        ("Alice", "I finished the marathon in four hours."),
        ("Bob", "Congratulations, that's a great time."),
        ("Alice", "My next goal is to climb Mount Fuji."),
    ])
    en_2[2]["blip_caption"] = "a photo of a yellow tram in Lisbon"
    zh_1 = _session(1, [
        ("张伟", "你好李娜，最近怎么样？"),
        ("李娜", "我最近在学习做四川菜，特别喜欢麻婆豆腐。"),
        ("张伟", "听起来很好吃！"),
        ("李娜", "我下个月要去杭州出差。"),
        ("张伟", "我在准备考研究生。"),
    ])
    zh_2 = _session(2, [
        ("李娜", "我在杭州的西湖边拍了很多照片。"),
        ("张伟", "我的研究生考试通过了！"),
        ("李娜", "恭喜你！我们去吃火锅庆祝吧。"),
        ("张伟", "I also started playing tennis on weekends."),
    ])
    return [
        {
            "sample_id": "conv-en",
            "conversation": {
                "speaker_a": "Alice", "speaker_b": "Bob",
                "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": en_1,
                "session_2_date_time": "10:00 am on 20 June, 2023", "session_2": en_2,
                "session_3_date_time": "9:00 am on 1 July, 2023",  # a date without turns
            },
            "qa": [
                {"question": "What is the name of Bob's puppy?", "answer": "Biscuit",
                 "evidence": ["D1:02"], "category": 4},
                {"question": "Which city did Bob visit? (tram photo)", "answer": "Lisbon",
                 "evidence": ["D2:3"], "category": 4},
                {"question": "What did the puppy Biscuit chew?", "answer": "the violin bow",
                 "evidence": ["D1:2; D2:1"], "category": 1},
                {"question": "When did Alice finish the marathon?", "answer": "June 2023",
                 "evidence": ["D2:4"], "category": 2},
                {"question": "Would Alice enjoy hiking?", "answer": "Likely yes",
                 "evidence": [], "category": 3},
                {"question": "What did Alice adopt?", "adversarial_answer": "a puppy",
                 "evidence": ["D1:2"], "category": 5},
            ],
        },
        {
            "sample_id": "conv-zh",
            "conversation": {
                "speaker_a": "张伟", "speaker_b": "李娜",
                "session_1_date_time": "7:31 pm on 21 January, 2022", "session_1": zh_1,
                "session_2_date_time": "3:00 pm on 5 March, 2022", "session_2": zh_2,
            },
            "qa": [
                {"question": "李娜喜欢吃什么四川菜？", "answer": "麻婆豆腐",
                 "evidence": ["D1:2"], "category": 4},
                {"question": "What sport does 张伟 play on weekends?", "answer": "tennis",
                 "evidence": ["D2:4"], "category": 4},
                {"question": "张伟什么时候通过了研究生考试？", "answer": "2022年3月",
                 "evidence": ["D2:2", "D", "D30:05"], "category": 2},
                {"question": "李娜在杭州做了什么？", "answer": "出差，在西湖拍照",
                 "evidence": ["D1:4", "D2:1"], "category": 1},
            ],
        },
    ]


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("locomo") / "tiny_locomo.json"
    path.write_text(json.dumps(_tiny(), ensure_ascii=False), encoding="utf-8")
    return str(path)


def _eval_databases(server_dsn: str) -> set[str]:
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'memdb_eval_%'")
        return {r[0] for r in rows}


@pytest.fixture(scope="module")
def result(tiny_path: str, server_dsn: str, embedder) -> dict:
    before = _eval_databases(server_dsn)
    out = run_locomo(tiny_path, dsn=server_dsn, progress=False, embedder=embedder)
    assert _eval_databases(server_dsn) == before, "the scratch database was not dropped"
    return out


def test_parse_evidence_tolerates_known_data_problems() -> None:
    assert parse_evidence(["D8:6; D9:17"]) == ("D8:6", "D9:17")
    assert parse_evidence(["D30:05", "D1:3", "D1:03"]) == ("D30:5", "D1:3")
    assert parse_evidence(["D"]) == ()
    assert parse_evidence(["D:11:26"]) == ("D11:26",)
    assert parse_evidence([]) == ()


def test_parse_date() -> None:
    assert parse_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_date("10:00 am on 20 June, 2023") == datetime(2023, 6, 20, 10, 0, tzinfo=UTC)
    assert parse_date("") is None and parse_date(None) is None and parse_date("soon") is None


def test_memory_inputs_carry_date_previous_turn_and_caption(tiny_path: str) -> None:
    conv = load_locomo(tiny_path)[0]
    assert conv.last_date == datetime(2023, 7, 1, 9, 0, tzinfo=UTC)
    items = memory_inputs(conv)
    assert len(items) == 12
    assert items[1].content == "Bob: I adopted a golden retriever puppy named Biscuit!"
    assert items[1].search_context == "8 May 2023\nAlice: Hi Bob, how was your weekend?"
    assert items[0].search_context == "8 May 2023"
    assert items[6].search_context == "20 June 2023"  # no previous turn across sessions
    assert items[8].content.endswith(" [image: a photo of a yellow tram in Lisbon]")
    assert (items[1].source_id, items[1].subject, items[1].kind, items[1].category) == \
        ("D1:2", "conv-en", "episodic", "events")
    assert items[6].created_at == datetime(2023, 6, 20, 10, 0, tzinfo=UTC)
    # turns keep their order within a session: one second apart, with the session's id
    # (neighbour expansion reads both: a turn's neighbours are in its own session)
    assert items[7].created_at == datetime(2023, 6, 20, 10, 0, 1, tzinfo=UTC)
    assert [i.session_id for i in items[5:8]] == ["session_1", "session_2", "session_2"]
    assert all(i.search_context is None for i in memory_inputs(conv, search_context=False))


def test_result_layout(result: dict, tiny_path: str) -> None:
    assert set(result) == {"dataset", "questions", "memories", "ks", "routes", "meta"}
    assert result["dataset"] == tiny_path
    assert result["questions"] == 10
    assert result["memories"] == 21
    assert result["ks"] == [5, 10, 25, 50]
    assert set(result["routes"]) == ROUTES
    for route in result["routes"].values():
        assert set(route) == {"overall", "overall_with_adversarial", "per_category",
                              "empty_rate", "p50_ms", "p95_ms"}
        for block in (route["overall"], route["overall_with_adversarial"],
                      *route["per_category"].values()):
            assert METRICS <= set(block)
            assert all(0.0 <= block[m] <= 1.0 for m in METRICS)
        counts = {cat: block["count"] for cat, block in route["per_category"].items()}
        assert counts == {"1": 2, "2": 2, "3": 1, "4": 4, "5": 1}
        assert route["empty_rate"] == 0.0
        assert 0 < route["p50_ms"] <= route["p95_ms"]
        # the question without evidence counts as found
        assert route["per_category"]["3"]["recall@5"] == 1.0 == route["per_category"]["3"]["mrr"]
    assert result["meta"]["no_evidence_questions"] == 1
    assert result["meta"]["unknown_evidence_ids"] == ["conv-zh/D30:5"]  # counted as a miss
    assert result["meta"]["timings"]["embed_ms_per_question"] > 0
    # single queries are really embedded (timed before the batch fills the query cache)
    assert result["meta"]["timings"]["embed_single_query_p50_ms"] > 0.5


def test_route_rows_run_one_route_alone(result: dict) -> None:
    """The vector and bm25 rows are the route alone: without the default's neighbour expansion
    and temporal boost, which the hybrid rows keep (as the store's search does)."""
    configs = result["meta"]["configs"]
    for name in ("vector", "bm25"):
        assert configs[name]["routes"] == [name]
        assert not configs[name].get("neighbors") and not configs[name].get("temporal")
    for name in ("hybrid", "hybrid_mmr", "hybrid_decay"):
        assert configs[name]["neighbors"] == 1 and configs[name]["temporal"] == 1


def test_obvious_questions_are_found_by_the_hybrid(result: dict) -> None:
    hybrid = result["routes"]["hybrid"]
    assert hybrid["per_category"]["4"]["recall@5"] == 1.0  # includes "D1:02" -> D1:2
    assert hybrid["per_category"]["1"]["recall@10"] == 1.0  # "D1:2; D2:1" is two ids
    # every turn fits in 50; only the nonexistent D30:5 (half of one question's evidence) is
    # never found: 9 questions in categories 1-4
    assert hybrid["overall"]["recall@50"] == pytest.approx((8 + 0.5) / 9)
    assert hybrid["overall_with_adversarial"]["recall@50"] == pytest.approx((9 + 0.5) / 10)


def test_format_table(result: dict) -> None:
    table = format_table(result)
    for name in ROUTES:
        assert name in table
    assert "R@10" in table and "adversarial(1)" in table


def test_scratch_database_is_dropped_on_error(tiny_path: str, server_dsn: str, embedder) -> None:
    before = _eval_databases(server_dsn)
    with pytest.raises(ValueError, match="unknown search options"):
        run_locomo(tiny_path, dsn=server_dsn, progress=False, embedder=embedder,
                   configs={"bad": {"no_such_option": 1}}, limit_conversations=1)
    assert _eval_databases(server_dsn) == before


def test_custom_configs_and_limit(tiny_path: str, server_dsn: str, embedder) -> None:
    out = run_locomo(tiny_path, dsn=server_dsn, progress=False, embedder=embedder, ks=(1, 3),
                     configs={"bm25": {"routes": ["bm25"], "k1": 0.9}}, limit_conversations=1,
                     search_context=False)
    assert (out["questions"], out["memories"], out["ks"]) == (6, 12, [1, 3])
    assert set(out["routes"]) == {"bm25"}
    assert set(out["routes"]["bm25"]["overall"]) == {"recall@1", "recall@3", "mrr"}
    config = out["meta"]["configs"]["bm25"]
    assert config["routes"] == ["bm25"] and config["k1"] == 0.9


def test_cli_eval_locomo(tiny_path: str, fresh_db: str, tmp_path) -> None:
    """`memdb eval locomo` prints the table and writes the JSON (the real local model)."""
    import json

    from click.testing import CliRunner

    from memdb.cli import cli

    out = tmp_path / "result.json"
    result = CliRunner().invoke(cli, ["--dsn", fresh_db, "eval", "locomo", tiny_path,
                                      "--k", "1,3", "--json", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert set(data["routes"]) == {"vector", "bm25", "hybrid", "hybrid_mmr", "hybrid_decay"}
    assert "hybrid" in result.output and "R@3" in result.output
    bad = CliRunner().invoke(cli, ["--dsn", fresh_db, "eval", "locomo", tiny_path, "--k", "0"])
    assert bad.exit_code == 1 and "error:" in bad.output
