"""memdb.evaluation.crossval: `memdb eval locomo --folds N`, cross-validation over
conversations. The fold logic on hand-made per-question results (where choosing on the test
fold, or on every question, would pick another setting), then the whole run on a tiny
three-conversation LoCoMo file in a real scratch database with the real local model."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from memdb.cli import cli
from memdb.evaluation._metrics import QuestionResult
from memdb.evaluation.crossval import (
    DEFAULT_GRID,
    _setting_rows,
    assign_folds,
    cross_validate,
    format_cv_markdown,
    format_cv_table,
    grid_settings,
    parse_mechanism,
    run_locomo_cv,
    won_lost,
)
from memdb.evaluation.locomo import describe
from memdb.retrieval.search import DEFAULT_OPTIONS
from tests.test_eval_locomo import _tiny


def _q(recall10: float, category: int = 4, recall5: float | None = None) -> QuestionResult:
    r5 = recall10 if recall5 is None else recall5
    return QuestionResult(category, {5: r5, 10: recall10}, 1.0 if recall10 else 0.0, False, 1.0)


# three conversations, two questions each. "A" is better on c1 and c2, "B" much better on c3:
# on the fold that holds out c3, the training questions (c1, c2) choose A although B wins the
# test fold and the whole set. "A+m" / "B+m" are A and B with a mechanism: on the c3 fold the
# training questions choose A+m, which gains on c3; on the other folds B+m ties with B.
CONV_OF = ["c1", "c1", "c2", "c2", "c3", "c3"]
RESULTS = {
    "D": [_q(0.5), _q(0.5), _q(0.5), _q(0.5), _q(0.0), _q(0.0)],
    "A": [_q(1.0), _q(0.5), _q(1.0), _q(0.5), _q(0.0), _q(0.0)],
    "B": [_q(0.5), _q(0.5), _q(0.5), _q(0.5), _q(1.0), _q(1.0)],
    "A+m": [_q(1.0), _q(1.0), _q(1.0), _q(0.5), _q(0.5), _q(0.0)],
    "B+m": [_q(0.5), _q(0.5), _q(0.5), _q(0.5), _q(1.0), _q(0.99)],
}


def test_assign_folds_by_conversation() -> None:
    assert assign_folds(["a", "b", "c", "d", "e"], 5) == [["a"], ["b"], ["c"], ["d"], ["e"]]
    assert assign_folds(["a", "b", "c", "d", "e"], 2) == [["a", "c", "e"], ["b", "d"]]
    for bad in (1, 6):
        with pytest.raises(ValueError, match="folds must be between 2"):
            assign_folds(["a", "b", "c", "d", "e"], bad)


def test_cross_validate_chooses_on_the_training_conversations_only() -> None:
    out = cross_validate(CONV_OF, RESULTS, folds=3, default="D", base=["D", "A", "B"],
                         mechanisms={"m": ["A+m", "B+m"]})
    assert out["folds"] == 3 and out["default"] == "D"
    chosen = [f["chosen"] for f in out["per_fold"]]
    # held out c1: train c2+c3 -> B (0.75) beats A (0.375); held out c3: train c1+c2 -> A
    assert chosen == ["B", "B", "A"]
    c3 = out["per_fold"][2]
    assert c3["test_conversations"] == ["c3"] and c3["train_conversations"] == ["c1", "c2"]
    assert c3["train_score"] == pytest.approx(0.75)
    assert c3["train_scores"] == pytest.approx({"D": 0.5, "A": 0.75, "B": 0.5})
    assert c3["test"]["all"]["recall@10"] == 0.0  # A on c3: the honest, held-out figure
    assert (c3["train_questions"], c3["test_questions"]) == (4, 2)
    # the mechanism: its train-best against the base train-best, per fold
    verdict = out["mechanisms"]["m"]
    assert [f["mechanisms"]["m"]["chosen"] for f in out["per_fold"]] == ["B+m", "B+m", "A+m"]
    assert verdict["deltas_recall@10"] == pytest.approx([0.0, 0.0, 0.25])
    assert not verdict["wins_every_fold"] and verdict["keep"]  # on average, no fold lost
    for fold in out["per_fold"]:
        wl = fold["won_lost_vs_default"]
        assert wl["won"] + wl["lost"] + wl["tied"] == fold["test_questions"]
    pooled = out["cv"]["won_lost_vs_default"]
    assert sum(pooled.values()) == len(CONV_OF)
    assert (pooled["won"], pooled["lost"]) == (0, 0)  # choosing B on c3 would win twice


def test_won_lost_counts_add_up() -> None:
    base = [_q(1.0), _q(0.5), _q(0.0), _q(0.5, recall5=0.0)]
    other = [_q(0.5), _q(0.5), _q(1.0), _q(0.5, recall5=0.5)]
    assert won_lost(base, other) == {"won": 1, "lost": 1, "tied": 2}
    assert won_lost(base, other, 5) == {"won": 2, "lost": 1, "tied": 1}
    assert won_lost(other, other) == {"won": 0, "lost": 0, "tied": 4}


def test_mechanism_verdict_rule() -> None:
    # m wins 1 point on two folds and loses 0.5 on one: kept on average
    results = {
        "D": [_q(0.5)] * 300,
        "D+m": [_q(0.52)] * 100 + [_q(0.52)] * 100 + [_q(0.495)] * 100,
    }
    conv_of = ["c1"] * 100 + ["c2"] * 100 + ["c3"] * 100
    out = cross_validate(conv_of, results, folds=3, default="D", base=["D"],
                         mechanisms={"m": ["D+m"]})
    v = out["mechanisms"]["m"]
    assert v["deltas_recall@10"] == pytest.approx([0.02, 0.02, -0.005])
    assert not v["wins_every_fold"] and v["wins_on_average_no_fold_below_minus_1pt"]
    assert v["keep"]
    # a fold losing more than a point drops it, although it wins on average
    results["D+m"] = [_q(0.6)] * 200 + [_q(0.48)] * 100
    v = cross_validate(conv_of, results, folds=3, default="D", base=["D"],
                       mechanisms={"m": ["D+m"]})["mechanisms"]["m"]
    assert v["mean_delta"] > 0 and not v["keep"]


def test_category_rule_refuses_a_category_loss() -> None:
    # "D+m" gains 0.2 on the many single-hop questions (category 4) of every conversation and
    # loses 0.2 on its few open-domain ones (category 3): more recall overall on every fold,
    # but a category lower by 20 points. "D+w" is the same mechanism at a weaker setting:
    # smaller gain, no category loss. The old rule (overall only) keeps the strong setting.
    conv_of, results = [], {"D": [], "D+m": [], "D+w": []}
    for conv in ("c1", "c2", "c3"):
        for _ in range(8):
            conv_of.append(conv)
            results["D"].append(_q(0.5, 4))
            results["D+m"].append(_q(0.7, 4))
            results["D+w"].append(_q(0.55, 4))
        for _ in range(2):
            conv_of.append(conv)
            results["D"].append(_q(0.5, 3))
            results["D+m"].append(_q(0.3, 3))
            results["D+w"].append(_q(0.5, 3))
    old = cross_validate(conv_of, results, folds=3, default="D", base=["D"],
                         mechanisms={"m": ["D+m", "D+w"]}, category_tolerance=None)
    assert [f["mechanisms"]["m"]["chosen"] for f in old["per_fold"]] == ["D+m"] * 3
    assert old["mechanisms"]["m"]["keep"]
    assert old["chosen_on_all"]["mechanisms"]["m"] == "D+m"
    new = cross_validate(conv_of, results, folds=3, default="D", base=["D"],
                         mechanisms={"m": ["D+m", "D+w"]})
    assert [f["mechanisms"]["m"]["chosen"] for f in new["per_fold"]] == ["D+w"] * 3
    v = new["mechanisms"]["m"]
    assert v["keep"] and v["no_category_below_tolerance"]
    assert v["category_deltas_recall@10"] == pytest.approx({"3": 0.0, "4": 0.05})
    assert new["chosen_on_all"] == {"setting": "D", "mechanisms": {"m": "D+w"}}
    assert "lowering no training category" in new["selection"]
    # with only the strong setting, no candidate passes on a training fold: off, dropped
    only = cross_validate(conv_of, results, folds=3, default="D", base=["D"],
                          mechanisms={"m": ["D+m"]})
    assert [f["mechanisms"]["m"]["chosen"] for f in only["per_fold"]] == [None] * 3
    assert not only["mechanisms"]["m"]["keep"]
    assert only["chosen_on_all"]["mechanisms"]["m"] is None
    groups = [f["test_conversations"] for f in only["per_fold"]]
    table = format_cv_table(
        {**only, "dataset": "x", "questions": len(conv_of), "conversations": ["c1", "c2", "c3"],
         "settings": _setting_rows(conv_of, results, groups, "D"), "meta": {"timings": {}}})
    assert "no candidate passes the category rule" in table
    assert "open-domain -20.0" not in table and "per category (mean over folds)" in table


def test_category_rule_judges_the_test_folds_too() -> None:
    # only c3 has open-domain questions: the folds training on c3 refuse the mechanism, the
    # fold testing on c3 cannot see the loss and takes it; the verdict's category check (on
    # the test folds) drops it
    conv_of, results = [], {"D": [], "D+m": []}
    for conv in ("c1", "c2", "c3"):
        for _ in range(30):
            conv_of.append(conv)
            results["D"].append(_q(0.5, 4))
            results["D+m"].append(_q(0.6, 4))
    for _ in range(2):
        conv_of.append("c3")
        results["D"].append(_q(1.0, 3))
        results["D+m"].append(_q(0.0, 3))
    out = cross_validate(conv_of, results, folds=3, default="D", base=["D"],
                         mechanisms={"m": ["D+m"]})
    v = out["mechanisms"]["m"]
    assert [f["mechanisms"]["m"]["chosen"] for f in out["per_fold"]] == [None, None, "D+m"]
    assert v["wins_on_average_no_fold_below_minus_1pt"]
    assert v["category_deltas_recall@10"]["3"] == pytest.approx(-1.0)
    assert not v["no_category_below_tolerance"] and not v["keep"]


def test_grid_settings_hold_today_default_and_textbook() -> None:
    settings, default, on = grid_settings()
    assert len(settings) == 27 and list(settings)[0] == default
    assert default == "rrf_k=5 vector=0.5 b=0.3"
    assert settings["rrf_k=60 vector=1 b=0.75"] == {"rrf_k": 60, "weights": {"vector": 1.0},
                                                   "b": 0.75}
    assert DEFAULT_OPTIONS.rrf_k == 5 and on == {}
    # a grid without today's point gets it added as "default"
    settings, default, _ = grid_settings({"rrf_k": [60]})
    assert default == "default" and list(settings) == ["default", "rrf_k=60"]
    # mechanisms: every grid point again with it on
    name, mech = parse_mechanism("mmr=0.7")
    assert (name, mech) == ("mmr", {"on": {"mmr": 0.7}, "off": {}})
    settings, default, on = grid_settings({"b": [0.3, 0.75]}, {"mmr": mech})
    assert on == {"mmr": ["b=0.3 +mmr", "b=0.75 +mmr"]}
    assert settings["b=0.75 +mmr"] == {"b": 0.75, "mmr": 0.7}
    # the mechanisms of issue 19 are search options, switched the same way; the defaults have
    # neighbors and temporal on, so "off" switches them off explicitly
    assert parse_mechanism("neighbors") == ("neighbors", {"on": {"neighbors": True},
                                                          "off": {"neighbors": False}})
    assert parse_mechanism("temporal=[0.5, 1]") == ("temporal", {"on": {"temporal": [0.5, 1]},
                                                                 "off": {"temporal": False}})
    assert parse_mechanism("prf=5")[1]["on"] == {"prf": 5}
    with pytest.raises(ValueError, match="no search option 'nope'"):
        parse_mechanism("nope")
    # a constant of the mechanism as a small grid: one candidate per value
    name, mech = parse_mechanism('neighbors={"neighbors": 1, "neighbor_weight": [0.3, 0.4]}')
    settings, default, on = grid_settings({"b": [0.3]}, {name: mech})
    assert on == {"neighbors": ["b=0.3 +neighbors(neighbor_weight=0.3)",
                                "b=0.3 +neighbors(neighbor_weight=0.4)"]}
    assert settings["b=0.3 +neighbors(neighbor_weight=0.4)"] == {
        "b": 0.3, "neighbors": 1, "neighbor_weight": 0.4}
    assert len(grid_settings({"b": [0.3]}, {"prf": parse_mechanism("prf=[5, 10]")[1]})[0]) == 3
    for bad, why in (('neighbors={"neighbor_weight": [0.3]}', "must set 'neighbors'"),
                     ('neighbors={"neighbors": 1, "nope": 2}', "no search option 'nope'"),
                     ("prf=[]", "empty list")):
        with pytest.raises(ValueError, match=why):
            parse_mechanism(bad)
    with pytest.raises(ValueError, match="must be JSON"):
        parse_mechanism("mmr={bad")


def test_the_default_and_each_mechanism_of_it_can_be_switched_off() -> None:
    # no mechanism named: the default is today's, neighbour expansion and temporal on
    settings, default, _ = grid_settings({"b": [0.3]})
    assert default == "b=0.3" and settings[default] == {"b": 0.3}
    today = describe(settings[default])
    assert (today["neighbors"], today["neighbor_weight"], today["temporal"]) == (1, 0.4, 1.0)
    # a mechanism the defaults have on is measured against the default without it: the
    # points without it have it off, the "on" candidates have it on
    for spec, key, off in (("neighbors", "neighbors", 0), ("temporal=[1, 2]", "temporal", 0.0)):
        name, mech = parse_mechanism(spec)
        settings, default, on = grid_settings({"b": [0.3]}, {name: mech})
        assert default == "b=0.3" and describe(settings[default])[key] == off
        assert all(describe(settings[n])[key] != off for n in on[name])
        assert list(settings) == [default, *on[name]]
    # both off at once: the old default (no neighbours, no temporal boost)
    mechs = dict(parse_mechanism(s) for s in ("neighbors", "temporal"))
    settings, default, on = grid_settings({"b": [0.3]}, mechs)
    old = describe(settings[default])
    assert (old["neighbors"], old["temporal"]) == (0, 0.0)
    assert settings["b=0.3 +neighbors"] == {"b": 0.3, "neighbors": True, "temporal": False}
    # a grid without today's point: "default" is added, with the named mechanisms off
    settings, default, _ = grid_settings({"rrf_k": [60]}, mechs)
    assert default == "default" and settings[default] == {"neighbors": False, "temporal": False}


@pytest.fixture(scope="module")
def three_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    data = _tiny()
    third = json.loads(json.dumps(data[0]))  # a second English conversation, other questions
    third["sample_id"] = "conv-en-2"
    third["qa"] = [{"question": "Which mountain is Alice's next goal?", "answer": "Fuji",
                    "evidence": ["D2:6"], "category": 4},
                   {"question": "What instrument is Bob learning?", "answer": "violin",
                    "evidence": ["D1:4"], "category": 4}]
    data.append(third)
    path = tmp_path_factory.mktemp("locomo_cv") / "three.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def cv_result(three_path: str, server_dsn: str, embedder) -> dict:
    return run_locomo_cv(three_path, folds=3, dsn=server_dsn, progress=False, embedder=embedder,
                         grid={"rrf_k": [5, 60], "weights.vector": [0.5, 1.0]},
                         mechanisms=dict([parse_mechanism("mmr=0.7")]))


def _train_score(setting: dict, folds: list[int]) -> float:
    """Mean recall@10 over the training questions, from the setting's per-fold figures."""
    per_fold = setting["per_fold"]
    n = sum(per_fold[f]["count"] for f in folds)
    return sum(per_fold[f]["all"]["recall@10"] * per_fold[f]["count"] for f in folds) / n


def test_run_locomo_cv_folds_are_conversations(cv_result: dict) -> None:
    assert cv_result["conversations"] == ["conv-en", "conv-zh", "conv-en-2"]
    assert cv_result["questions"] == 12 and cv_result["folds"] == 3
    counts = {"conv-en": 6, "conv-zh": 4, "conv-en-2": 2}
    for fold in cv_result["per_fold"]:
        test, train = set(fold["test_conversations"]), set(fold["train_conversations"])
        assert test and not test & train and test | train == set(counts)
        assert fold["test_questions"] == sum(counts[c] for c in test)
        assert fold["train_questions"] == sum(counts[c] for c in train)


def test_run_locomo_cv_chooses_the_train_best(cv_result: dict) -> None:
    settings = cv_result["settings"]
    base = [n for n in settings if "+mmr" not in n]
    assert len(settings) == 8 and base[0] == cv_result["default"] == "rrf_k=5 vector=0.5"
    for f, fold in enumerate(cv_result["per_fold"]):
        train = [g for g in range(3) if g != f]
        scores = {n: _train_score(settings[n], train) for n in base}
        assert fold["train_scores"] == pytest.approx(scores)
        best = max(scores.values())
        assert fold["chosen"] == next(n for n in base if scores[n] == pytest.approx(best))
        assert fold["train_score"] == pytest.approx(best)
        # the test figures are the chosen setting's on the held-out fold
        assert fold["test"] == settings[fold["chosen"]]["per_fold"][f]
        assert set(fold["test"]["all"]) == {"recall@5", "recall@10", "mrr"}
        assert set(fold["mechanisms"]) == {"mmr"}


def test_run_locomo_cv_json_and_won_lost(cv_result: dict) -> None:
    data = json.loads(json.dumps(cv_result))  # JSON-serializable as is
    spread = data["cv"]["mean_over_folds"]["all"]["recall@10"]
    tests = [f["test"]["all"]["recall@10"] for f in data["per_fold"]]
    assert spread["mean"] == pytest.approx(sum(tests) / 3)
    assert (spread["min"], spread["max"]) == (min(tests), max(tests))
    assert set(data["cv"]["mean_over_folds"]["per_category"]) == {"1", "2", "3", "4", "5"}
    for name, s in data["settings"].items():
        for k in ("recall@5", "recall@10"):
            wl = s["won_lost_vs_default"][k]
            assert wl["won"] + wl["lost"] + wl["tied"] == 12
        if name == data["default"]:
            assert s["won_lost_vs_default"]["recall@10"]["tied"] == 12
        assert sum(f["count"] for f in s["per_fold"]) == 12
    assert set(data["mechanisms"]["mmr"]) >= {"deltas_recall@10", "keep"}
    assert data["meta"]["configs"]["rrf_k=60 vector=1 +mmr"]["mmr_lambda"] == 0.7
    table = format_cv_table(cv_result)
    assert "cross-validated" in table and "mmr" in table and "rrf_k=60 vector=1" in table
    md = format_cv_markdown(cv_result).splitlines()
    assert md[0].startswith("| setting | R@5 | R@10 | multi-hop |") and len(md) == 5
    assert md[2].startswith("| default |") and md[4].startswith("| + mmr |")
    wl = data["mechanisms"]["mmr"]["won_lost_vs_without"]
    assert sum(wl.values()) == 12 and f"| {wl['won']}/{wl['lost']} |" in md[4]
    verdict = "keep" if data["mechanisms"]["mmr"]["keep"] else "drop"
    assert md[4].endswith(f"| {verdict} |")


def test_cli_eval_locomo_folds(three_path: str, fresh_db: str, tmp_path) -> None:
    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps({"b": [0.3, 0.75]}))
    out = tmp_path / "cv.json"
    result = CliRunner().invoke(cli, ["--dsn", fresh_db, "eval", "locomo", three_path,
                                      "--folds", "3", "--grid", str(grid), "--quiet",
                                      "--mechanism", "mmr", "--json", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert list(data["settings"]) == ["b=0.3", "b=0.75", "b=0.3 +mmr", "b=0.75 +mmr"]
    assert len(data["per_fold"]) == 3 and "per fold" in result.output
    for args, message in ((["--folds", "4"], "folds must be between 2"),
                          (["--folds", "3", "--mechanism", "warp"], "no search option 'warp'"),
                          (["--mechanism", "mmr"], "need --folds"),
                          (["--markdown"], "need --folds")):
        bad = CliRunner().invoke(cli, ["--dsn", fresh_db, "eval", "locomo", three_path, *args])
        assert bad.exit_code == 1 and message in bad.output, bad.output


def test_default_grid_axes() -> None:
    assert DEFAULT_GRID == {"rrf_k": [5, 20, 60], "weights.vector": [0.25, 0.5, 1.0],
                            "b": [0.3, 0.5, 0.75]}
