"""Secrets stay secret: no DSN password, API key or memory text in any log record (captured at
DEBUG on the root and ``memdb`` loggers), exception message, traceback, ``repr()`` or CLI
output, including when the database is unreachable and when the embedding endpoint fails.

The embedding endpoint is a local HTTP server with canned responses (tests/canned_openai.py)
driven by the real ``openai`` client; one of its modes is a careless server that echoes the
API key and the input text back in its error body.
"""

from __future__ import annotations

import json
import logging
import traceback

import pytest
from click.testing import CliRunner
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memdb import DatabaseError, EmbeddingError, MemoryStore, NotFound, OpenAIEmbedder
from memdb.cli import cli
from memdb.core.masking import redact, redact_dsn
from tests.canned_openai import CannedOpenAI

PASSWORD = "s3cretPW"
KEY = "sk-test-SECRET123"
MEMORY = "王五的银行卡密码是八个八 Wang's PIN is 8888"
QUERY = "王五的银行卡 PIN"
SECRETS = (PASSWORD, KEY, MEMORY, "银行卡密码", "PIN is 8888", QUERY)
UNREACHABLE = f"postgresql://memdb:{PASSWORD}@127.0.0.1:1/x?connect_timeout=2"
DIMS = 8


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="memdb")
    return caplog


def leaks(*texts: object) -> list[str]:
    """The secrets found in any of the texts."""
    return [s for s in SECRETS for t in texts if s in str(t)]


def log_text(caplog: pytest.LogCaptureFixture) -> str:
    out = []
    for record in caplog.records:
        out.append(record.getMessage())
        if record.exc_info:
            out.append("".join(traceback.format_exception(*record.exc_info)))
    return "\n".join(out)


def full_traceback(exc: BaseException) -> str:
    """The exception as a traceback prints it: every chained cause and context included."""
    return "".join(traceback.format_exception(exc))


def with_password(dsn: str) -> str:
    """The test server's DSN plus a password (its local trust authentication ignores it)."""
    return make_conninfo(**{**conninfo_to_dict(dsn), "password": PASSWORD})


def test_redact_patterns():
    assert redact(UNREACHABLE) == "postgresql://memdb:***@127.0.0.1:1/x?connect_timeout=2"
    assert PASSWORD not in redact_dsn(f"host=h password={PASSWORD} user=u")
    assert PASSWORD not in redact_dsn(f"host=h password='{PASSWORD} x' user=u")
    assert PASSWORD not in redact(f"postgresql://h/x?password={PASSWORD}&sslmode=disable")
    assert KEY not in redact(f"Authorization: Bearer {KEY}")
    assert KEY not in redact(f'{{"api_key": "{KEY}"}}') and KEY not in redact(f"key {KEY}.")
    assert redact("a plain message, max_tokens=5") == "a plain message, max_tokens=5"
    assert redact("odd text", secrets=["odd"]) == "*** text"


@pytest.mark.parametrize("dsn", [
    UNREACHABLE,
    f"host=127.0.0.1 port=1 user=memdb password={PASSWORD} connect_timeout=2",
    f"host=127.0.0.1 port=1 password={PASSWORD} oops",              # malformed: libpq quotes it
    f"postgresql://memdb:{PASSWORD}@127.0.0.1:notaport/x",
])
def test_unreachable_database_never_shows_the_password(logs, dsn):
    with pytest.raises(DatabaseError) as caught:
        MemoryStore(dsn, gate=None, embedder=None)
    assert leaks(str(caught.value), full_traceback(caught.value), log_text(logs)) == []


def test_store_with_password_dsn_keeps_it_out_of_everything(fresh_db, logs):
    with CannedOpenAI(dims=DIMS) as api:
        embedder = OpenAIEmbedder("canned-8", DIMS, base_url=api.base_url, api_key=KEY)
        with MemoryStore(with_password(fresh_db), gate=None, embedder=embedder) as store:
            shown = [repr(store), repr(store.db), repr(embedder), str(store.db.pool)]
            mid = store.add(MEMORY, subject="wangwu").id
            results = store.search(QUERY, k=3, subject="wangwu", explain=True)
            assert results[0].memory.content == MEMORY  # it works (and it is found)
            trace = json.dumps(results.explain, default=str, ensure_ascii=False)
            with pytest.raises(NotFound) as missing:
                store.get("00000000-0000-0000-0000-000000000000")
            store.delete(mid)
        assert api.auth == f"Bearer {KEY}"  # the key did go where it belongs
    assert "***" in repr(store.db) and "canned-8" in repr(embedder)
    assert PASSWORD not in trace and KEY not in trace  # the explain trace carries no credentials
    assert leaks(*shown, str(missing.value), log_text(logs)) == []
    assert any("embeddings" in r.getMessage() for r in logs.records)  # logs were captured


@pytest.mark.parametrize("mode", ["echo_key", "error", "slow"])
def test_embedding_endpoint_failure_messages_hold_no_key_or_text(fresh_db, logs, mode):
    with CannedOpenAI(dims=DIMS, mode=mode, delay=1.5) as api:
        embedder = OpenAIEmbedder("canned-8", DIMS, base_url=api.base_url, api_key=KEY,
                                  timeout=0.5, max_retries=1)
        with MemoryStore(with_password(fresh_db), gate=None, embedder=embedder) as store:
            with pytest.raises(EmbeddingError) as on_add:
                store.add(MEMORY, subject="wangwu")
            with pytest.raises(EmbeddingError) as on_search:
                store.search(QUERY)
        assert len(api.requests) == 4 and MEMORY in api.inputs  # the server saw (and echoed) them
    assert "HTTP 500" in str(on_add.value) or mode == "slow"
    assert leaks(str(on_add.value), full_traceback(on_add.value), str(on_search.value),
                 full_traceback(on_search.value), log_text(logs)) == []


def test_failing_custom_embedder_message_holds_no_text(fresh_db):
    class Leaky:
        model, dims = "leaky-8", DIMS

        def embed_passages(self, texts):
            raise ValueError(f"cannot embed {texts[0]!r}")

        embed_queries = embed_passages

    with MemoryStore(fresh_db, gate=None, embedder=Leaky()) as store:
        with pytest.raises(EmbeddingError) as caught:
            store.add(MEMORY)
    # the embedder's own exception stays chained for its owner to debug; memdb's message
    # repeats nothing of it
    assert leaks(str(caught.value)) == [] and "ValueError" in str(caught.value)


def test_cli_failures_print_no_secrets(fresh_db, logs, monkeypatch, tmp_path):
    monkeypatch.setenv("MEMDB_HOME", str(tmp_path / "home"))
    runner = CliRunner()
    for args in (["add", "--no-gate", MEMORY], ["search", QUERY], ["count"],
                 ["maintenance", "reembed", "--json"]):
        result = runner.invoke(cli, ["--dsn", UNREACHABLE, *args])
        assert result.exit_code == 1 and result.stderr.startswith("error: "), result.output
        assert leaks(result.output, log_text(logs)) == []

    with CannedOpenAI(dims=DIMS, mode="echo_key") as api:
        for key, value in {"MEMDB_EMBEDDER": "openai", "MEMDB_EMBED_MODEL": "canned-8",
                           "MEMDB_EMBED_DIMS": str(DIMS), "MEMDB_EMBED_BASE_URL": api.base_url,
                           "MEMDB_EMBED_API_KEY": KEY, "MEMDB_EMBED_MAX_RETRIES": "0"}.items():
            monkeypatch.setenv(key, value)
        for args in (["add", "--no-gate", MEMORY], ["search", QUERY]):
            result = runner.invoke(cli, ["--dsn", with_password(fresh_db), *args])
            assert result.exit_code == 1 and "embedding request" in result.stderr, result.output
            assert leaks(result.output, log_text(logs)) == []
        assert len(api.requests) >= 2


# -- trace redaction (memdb.core.redact): Chinese, English and mixed text (issue 14)
# -------------------
from memdb.core.redact import redact as redact_trace  # noqa: E402


@pytest.mark.parametrize(("text", "secret", "label"), [
    # secrets right next to Chinese characters: no word boundary there for \b
    ("手机号13812345678", "13812345678", "phone"),
    ("我的电话是13812345678", "13812345678", "phone"),
    ("电话：010-12345678", "12345678", "phone"),
    ("密码hunter2", "hunter2", "secret"),
    ("口令abc123，别告诉别人", "abc123", "secret"),
    ("密钥sk-abcdefghijklmnopqrstuvwx", "abcdefghijklmnop", "secret"),
    ("令牌ghp_abcdefghijklmnopqrstuvwxyz0123", "ghp_abcdef", "secret"),
    ("AWS密钥AKIAABCDEFGHIJKLMNOP结束", "AKIAABCDEFGHIJKLMNOP", "secret"),
    ("连接postgresql://app:s3cret@db/x", "s3cret", "secret"),
    ("邮箱wangwu@example.com", "wangwu@example.com", "email"),
    ("身份证11010119900307123X", "11010119900307123X", "id_number"),
    ("哈希d41d8cd98f00b204e9800998ecf8427e结束", "d41d8cd98f00b204e9800998ecf8427e", "secret"),
    # English and mixed
    ("call me at 13812345678 tomorrow", "13812345678", "phone"),
    ("my password is hunter2", "hunter2", "secret"),
    ("Alice的手机13812345678, password: pa55word", "13812345678", "phone"),
    ("Alice的手机13812345678, password: pa55word", "pa55word", "secret"),
])
def test_trace_redaction_next_to_chinese_english_and_mixed(text, secret, label):
    out = redact_trace(text)
    assert secret not in out and f"[REDACTED:{label}]" in out, out


@pytest.mark.parametrize("text", [
    "2024-05-03 开会", "会议在 2024年5月3日 10:30", "Alice 的生日是 5 月 3 日",
    "版本 3.11.4 和 v1.2.3", "PostgreSQL 18 and pgvector 0.8.6", "订单 20240503 共 3 件",
    "价格 1299 元", "密码学很有意思", "口令很重要", "the meeting is on 2024-05-03 at 10:30",
    "上次那个项目 in 2024, k=5", "call ORD13812345678 later",
])
def test_trace_redaction_keeps_ordinary_numbers_and_words(text):
    assert redact_trace(text) == text


def test_recall_trace_keeps_no_phone_number_next_to_chinese(fresh_db, embedder):
    query = "帮我记一下，我的电话是13812345678，密码hunter2"
    with MemoryStore(fresh_db, embedder=embedder, gate=None) as store:
        store.add("王五喜欢喝乌龙茶", subject="wangwu")
        res = store.recall(query, k=3, trace=True)
        stored = store.traces.get(res.trace_id)
    text = json.dumps(stored, ensure_ascii=False, default=str)
    assert "13812345678" not in text and "hunter2" not in text
    assert "[REDACTED:phone]" in stored["query"] and "[REDACTED:secret]" in stored["query"]
