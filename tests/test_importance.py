"""Importance scored on write when the caller gives none (``MemoryInput.importance`` unset),
on the real embedded PostgreSQL; explicit values are kept as given. Chinese and English."""

from __future__ import annotations

import pytest

from memdb import MemoryInput
from memdb.core.errors import InvalidInput
from memdb.write.importance import score_importance
from tests.cli_helpers import ok_json


@pytest.mark.parametrize(("text", "expected"), [
    ("今天下午开了一个会", 0.5),                       # plain: the old default
    ("We had a meeting this afternoon", 0.5),
    ("记住：我对花生过敏", 0.7),                       # explicit remember
    ("Remember that my passport expires soon", 0.7),
    ("以后都用中文回答", 0.65),                        # a rule
    ("Always reply briefly", 0.65),
    ("不是上海，是北京", 0.65),                        # a correction
    ("It's not Monday, it's Tuesday", 0.7),            # correction + a named day
    ("我最喜欢《三体》", 0.6),                          # preference + a title
    ("I met Bob in Paris", 0.55),                      # named entities
])
def test_heuristic_scores(text, expected):
    assert score_importance(text) == pytest.approx(expected)


def test_explicit_remember_and_rule_score_above_plain_statements():
    plain = score_importance("我今天喝了咖啡")
    rule = score_importance("以后每次都先备份数据库")
    assert score_importance("记住，以后每次都先备份数据库") > rule > plain
    assert score_importance("Remember: never deploy on Fridays") == 0.9  # + a named day
    assert all(0.5 <= score_importance(t) <= 0.95 for t in (
        "记住记住 以后都 不是A，是B 《书》 我喜欢", "remember always not A, B Alice likes"))


def test_memory_input_importance_is_unset_by_default():
    item = MemoryInput("记住：我的生日是3月5日", source_id="t1")
    assert item.importance is None
    assert item.to_item()["importance"] == score_importance(item.content)
    assert MemoryInput("plain text here", importance=0.2).to_item()["importance"] == \
        pytest.approx(0.2)
    assert MemoryInput("a rule without cue words", rule=True).to_item()["importance"] == \
        pytest.approx(0.65)
    with pytest.raises(InvalidInput):
        MemoryInput("too important", importance=1.5).to_item()


def test_add_scores_when_unset_and_keeps_explicit_values(gated_store):
    s = gated_store
    cases = {
        "记住：我对花生过敏": None,
        "以后都用中文回答我": None,
        "我们今天讨论了项目进度": None,
        "Remember that Alice's birthday is 2024-03-05": None,
        "The weather was mild in the afternoon": None,
        "记住：这条只是普通备注": 0.2,        # explicit: kept, even below the heuristic
        "Always answer in English": 0.5,     # explicit 0.5 is not "unset"
    }
    ids = {}
    for n, (text, importance) in enumerate(cases.items()):
        fields = {"source_id": f"turn-{n}"}
        if importance is not None:
            fields["importance"] = importance
        ids[text] = s.add(text, **fields).id
    for text, importance in cases.items():
        stored = s.get(ids[text]).importance
        want = importance if importance is not None else score_importance(text)
        assert stored == pytest.approx(want, abs=1e-6), text
    assert s.get(ids["记住：我对花生过敏"]).importance > \
        s.get(ids["我们今天讨论了项目进度"]).importance
    assert s.get(ids["Remember that Alice's birthday is 2024-03-05"]).importance > \
        s.get(ids["The weather was mild in the afternoon"]).importance


def test_add_many_mixes_scored_and_explicit(store):
    results = store.add_many([
        "记住我住在杭州",
        {"content": "never push to main", "importance": 0.3},
        MemoryInput("plain note about lunch"),
    ])
    got = [store.get(r.id).importance for r in results]
    assert got == pytest.approx([0.7, 0.3, 0.5])


def test_cli_add_scores_unless_given(fresh_db):
    scored = ok_json(fresh_db, "add", "记住：每次发版前都要跑回归测试", "--source-id", "t1")
    given = ok_json(fresh_db, "add", "Remember the release checklist", "--source-id", "t2",
                    "--importance", "0.4")
    got = {m["id"]: m["importance"] for m in ok_json(fresh_db, "list")}
    assert got[scored["id"]] == pytest.approx(score_importance("记住：每次发版前都要跑回归测试"))
    assert got[scored["id"]] > 0.8
    assert got[given["id"]] == pytest.approx(0.4)
