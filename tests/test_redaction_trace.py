"""Trace redaction over every field a trace stores: a recall with a secret in its query (Chinese
and English, full- and half-width, bare in a planner's sub-query or a decomposed part) leaves
no trace of it in any column of ``memdb.retrieval_traces``, read from the table directly.

A secret counts as left when its NFKC form appears, ignoring case, in the NFKC form of a
column's value (its JSON for jsonb and arrays): ``ｈｕｎｔｅｒ２`` and ``hunter2`` are one secret.
"""

from __future__ import annotations

import json
import unicodedata

import pytest

from memdb import QueryPlan, TypedQuery
from memdb.core.redact import redact, redact_record, secrets_in
from memdb.retrieval.search import SearchOptions


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


# (case id, query, secrets, plan texts standing in for an LLM planner's sub-queries or None,
#  decompose): every secret must be gone from every stored field.
CASES = [
    ("zh-fullwidth-phone-password", "我的手机是１３８１２３４５６７８，密码ｈｕｎｔｅｒ２",
     ["１３８１２３４５６７８", "ｈｕｎｔｅｒ２"], None, False),
    ("zh-fullwidth-email", "邮箱：ｚｈａｎｇ＠ｅｘａｍｐｌｅ．ｃｏｍ，王五喜欢喝什么茶",
     ["ｚｈａｎｇ＠ｅｘａｍｐｌｅ．ｃｏｍ"], None, False),
    ("zh-halfwidth-value-ends-at-cjk-comma", "密码是hunter2，电话是13812345678",
     ["hunter2", "13812345678"], None, False),
    ("zh-halfwidth-colon", "王五的密码是：Tr0ub4dor，他喜欢喝什么茶", ["Tr0ub4dor"], None, False),
    ("en-dsn-password", "connect with postgresql://app:S3cretPw@db.internal/prod please",
     ["S3cretPw"], None, False),
    ("en-passwd-space", "passwd hunter2 for the staging box", ["hunter2"], None, False),
    ("en-ssn", "my SSN is 123-45-6789, what did I file", ["123-45-6789"], None, False),
    ("en-idn-email", "email alice.smith+tag@例子.中国 about the invoice",
     ["alice.smith+tag@例子.中国"], None, False),
    ("en-fullwidth-password", "ｐａｓｓｗｏｒｄ：ｓｅｃｒｅｔｐｗ９ for the wifi",
     ["ｓｅｃｒｅｔｐｗ９"], None, False),
    ("en-keys", "api_key=abcd1234efgh and sk-abcdefghijklmnopqrstuv in the config",
     ["abcd1234efgh", "sk-abcdefghijklmnopqrstuv"], None, False),
    # an LLM planner quoting the secret bare, whole and in part, full- and half-width
    ("zh-plan-quotes-secret", "王五的密码是 Tr0ub4dor&3，他喜欢喝什么茶",
     ["Tr0ub4dor&3", "Tr0ub4dor"], ["Tr0ub4dor&3", "ｔｒ０ｕｂ４ｄｏｒ 王五 喜欢 茶"], False),
    ("en-plan-quotes-dsn-password", "what is in postgresql://app:S3cretPw@db.internal/prod",
     ["S3cretPw"], ["S3cretPw", "app:S3cretPw@db.internal"], False),
    # decomposed parts
    ("zh-decomposed", "小明和小红都知道密码ｈｕｎｔｅｒ２吗", ["ｈｕｎｔｅｒ２"], None, True),
    ("en-decomposed", "Where did Jon go with password hunter2x9 and what did he buy?",
     ["hunter2x9"], None, True),
]


# cases whose plan (heuristic or given) or decomposition holds a text quoting a secret bare,
# without the cue that marks it ("hunter2" from the identifier rule of the heuristic planner)
BARE = {"zh-halfwidth-value-ends-at-cjk-comma", "zh-halfwidth-colon", "en-dsn-password",
        "en-passwd-space", "zh-plan-quotes-secret", "en-plan-quotes-dsn-password"}


@pytest.mark.parametrize(("case", "query", "secrets", "plan_texts", "decompose"), CASES,
                         ids=[c[0] for c in CASES])
def test_no_secret_in_any_stored_trace_field(store, raw, case, query, secrets, plan_texts,
                                             decompose):
    store.add("王五喜欢喝乌龙茶", subject="wangwu")
    store.add("Jon went to Paris and bought a hat", subject="jon")
    plan = None
    if plan_texts:
        plan = QueryPlan(query, "preference_query",
                         tuple(TypedQuery(t, ("preferences",)) for t in plan_texts), "llm")
    res = store.recall(query, k=3, plan=plan,
                       options=SearchOptions(decompose=True) if decompose else None)
    derived = [q.text for q in res.plan.queries] + list(
        res.decomposition.subqueries if res.decomposition else [])
    if case in BARE:  # the case exercises what it says: a derived text is the secret alone
        assert any(_fold(s) == _fold(t) for s in secrets for t in derived), derived
    if decompose:  # ... or a decomposed part quotes it
        assert any(_fold(s) in _fold(t) for s in secrets for t in derived), derived
    row = raw.execute("SELECT * FROM memdb.retrieval_traces WHERE id = %s",
                      (res.trace_id,)).fetchone()
    columns = [d.name for d in raw.execute(
        "SELECT * FROM memdb.retrieval_traces LIMIT 0").description]
    assert row is not None and len(row) == len(columns)
    for column, value in zip(columns, row, strict=True):
        text = _fold(json.dumps(value, ensure_ascii=False, default=str))
        for secret in secrets:
            assert _fold(secret) not in text, (column, value)
    stored = dict(zip(columns, row, strict=True))
    assert "[REDACTED:" in stored["query"]
    if decompose:
        assert stored["plan"]["decomposition"]["subqueries"]


def test_trace_keeps_the_text_around_a_secret_as_typed(store):
    store.add("王五喜欢喝乌龙茶", subject="wangwu")
    query = "我的手机是１３８１２３４５６７８，密码ｈｕｎｔｅｒ２，王五喜欢喝什么茶"
    res = store.recall(query, k=3)
    assert store.traces.get(res.trace_id)["query"] == \
        "我的手机是[REDACTED:phone]，密码[REDACTED:secret]，王五喜欢喝什么茶"


def test_trace_keeps_the_scope_names(store):
    """Names of the scope are identifiers, not query text: kept, so erasure still finds the
    traces of a subject whose name looks like an e-mail address."""
    store.add("wang likes oolong tea", subject="wang.wu@example.com")
    res = store.recall("what tea does wang like, my password is hunter2", k=3,
                       subject="wang.wu@example.com")
    t = store.traces.get(res.trace_id)
    assert t["subject"] == "wang.wu@example.com" and "hunter2" not in t["query"]
    assert t["result_subjects"] == ["wang.wu@example.com"]
    assert store.traces.erase("wang.wu@example.com") == 1


# -- the rules, without a database ------------------------------------------------------------
@pytest.mark.parametrize(("text", "expected"), [
    ("我的手机是１３８１２３４５６７８，密码ｈｕｎｔｅｒ２",
     "我的手机是[REDACTED:phone]，密码[REDACTED:secret]"),
    ("邮箱：ｚｈａｎｇ＠ｅｘａｍｐｌｅ．ｃｏｍ", "邮箱：[REDACTED:email]"),
    ("密码是hunter2，电话是13812345678", "密码是[REDACTED:secret]，电话是[REDACTED:phone]"),
    ("密码：hunter2；口令：abc123。", "密码：[REDACTED:secret]；口令：[REDACTED:secret]。"),
    ("密码是：hunter2！好的", "密码是：[REDACTED:secret]！好的"),
    ("postgresql://app:S3cretPw@db.internal/prod",
     "postgresql://app:[REDACTED:secret]@db.internal/prod"),
    ("passwd hunter2", "passwd [REDACTED:secret]"),
    ("PWD: hunter2", "PWD: [REDACTED:secret]"),
    ("SSN 123-45-6789", "SSN [REDACTED:id_number]"),
    ("社保号１２３－４５－６７８９", "社保号[REDACTED:id_number]"),
    ("alice.smith+tag@例子.中国的朋友", "[REDACTED:email]的朋友"),
    ("mail zhang@example.com的邮箱", "mail [REDACTED:email]的邮箱"),
    ("ｐａｓｓｗｏｒｄ＝ｓｅｃｒｅｔｐｗ！ end", "ｐａｓｓｗｏｒｄ＝[REDACTED:secret]！ end"),
])
def test_redaction_rules_full_and_half_width(text, expected):
    assert redact(text) == expected


@pytest.mark.parametrize("text", [
    "password reset link", "how do I change my password", "密码学很有意思",
    "ｐａｓｓｗｏｒｄ ｒｅｓｅｔ",
    "2024-05-03 开会", "版本 3.11.4", "５ 月 ３ 日开会，好吗？", "订单号 000-12-3456 不是社保号",
])
def test_redaction_keeps_ordinary_text(text):
    assert redact(text) == text


def test_secrets_found_in_one_text_leave_every_text_of_a_record():
    found = secrets_in("密码ｈｕｎｔｅｒ２＆ｘ，postgresql://u:S3cretPw@h/db")
    assert ("secret", "hunter2&x") in found and ("secret", "hunter2") in found
    assert ("secret", "S3cretPw") in found
    record = {"tenant": "t", "id": "keep-me hunter2",
              "query": "密码ｈｕｎｔｅｒ２＆ｘ", "plan": {"queries": [
                  {"text": "HUNTER2 的 wifi"}, {"text": "ｈｕｎｔｅｒ２"}], "notes": ("hunter2",)}}
    out = redact_record(record, keep={"tenant", "id"})
    assert out["id"] == "keep-me hunter2"
    assert out["plan"] == {"queries": [{"text": "[REDACTED:secret] 的 wifi"},
                                       {"text": "[REDACTED:secret]"}],
                           "notes": ["[REDACTED:secret]"]}
    assert out["query"] == "密码[REDACTED:secret]"
