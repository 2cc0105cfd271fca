"""Hostile input on the doors, from real clients against the real server: numbers that are
not finite or are huge (HTTP, CLI, Python), secrets in a URL reaching uvicorn's access log,
request values echoed in error messages, a login form posted from another site, and an MCP
session used with another tenant's key."""

from __future__ import annotations

import logging
import math
from datetime import timedelta
from urllib.parse import quote

import pytest

from memdb import MemoryStore
from memdb.core.errors import InvalidInput
from memdb.http import ServerSettings
from tests.app_login import app_login
from tests.cli_helpers import run
from tests.http_server import make_keys, running_door, served_door

pytest.importorskip("fastapi")


@pytest.fixture(scope="module")
def keys(module_db, embedder):
    return make_keys(module_db, embedder)


@pytest.fixture(scope="module")
def door(module_db, embedder, keys):
    with served_door(module_db, embedder, ui=True) as running:
        yield running


# -- numbers ------------------------------------------------------------------------------
BAD_NUMBERS = [math.inf, -math.inf, math.nan, 1e308, 10**400]


@pytest.mark.parametrize("bad", BAD_NUMBERS, ids=str)
def test_python_api_refuses_numbers_that_are_not_finite_or_are_huge(module_db, embedder, bad):
    with MemoryStore(module_db, tenant="acme", embedder=embedder, gate=None) as store:
        with pytest.raises(InvalidInput, match="older_than_days"):
            store.traces.purge(older_than_days=bad)
        with pytest.raises(InvalidInput, match="days"):
            store.maintenance.forget_by_age(bad, dry_run=True)
        with pytest.raises(InvalidInput, match="half_life_days"):
            store.maintenance.forget_by_capacity(half_life_days=bad, dry_run=True)
        with pytest.raises(InvalidInput, match="half_life_days"):
            store.maintenance.decay_hypotheses(half_life_days=bad, dry_run=True)
        # the largest span Python can hold is still refused, not an OverflowError
        with pytest.raises(InvalidInput, match="since"):
            store.traces.stats(timedelta.max)
        assert store.traces.purge(older_than_days=36_500) >= 0  # a long, finite span is fine
        assert "searches" in store.traces.stats(timedelta(days=3650))


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e308", "Infinity", "1" + "0" * 400])
def test_http_since_hours_refused_and_the_connection_lives(door, keys, value):
    with door.client(keys["acme"]) as c:
        r = c.get("/v1/traces/stats", params={"since_hours": value})
        assert r.status_code in (400, 422), r.text
        assert r.json()["error"]["type"] == "InvalidInput"
        assert c.get("/v1/traces/stats", params={"since_hours": 24}).status_code == 200


@pytest.mark.parametrize("raw", ["1e308", "Infinity", "NaN", "-Infinity", "1" + "0" * 400])
def test_http_bodies_with_non_finite_or_huge_numbers_are_invalid_input(door, keys, raw):
    """Raw JSON text: Python's json reads Infinity and NaN, so the door sees them."""
    bodies = {
        "/v1/traces/purge": '{"older_than_days": %s}',
        "/v1/memories": '{"content": "number check 数字检查", "source_id": "t1", "ttl": %s}',
        "/v1/search": '{"query": "天气 weather", "weights": {"vector": %s}}',
        "/v1/recall": '{"query": "weather", "k": 3, "filter": {"min_importance": %s}}',
    }
    with door.client(keys["acme"]) as c:
        for path, template in bodies.items():
            r = c.post(path, content=template % raw,
                       headers={"Content-Type": "application/json"})
            assert r.status_code in (400, 422), (path, r.status_code, r.text)
            assert r.json()["error"]["type"] == "InvalidInput", (path, r.text)
        assert c.post("/v1/traces/purge", json={"older_than_days": 30}).status_code == 200


@pytest.mark.parametrize("args", [
    ("traces", "stats", "--hours", "inf"),
    ("traces", "stats", "--hours", "nan"),
    ("traces", "stats", "--hours", "1e308"),
    ("traces", "purge", "--days", "1e308"),
    ("traces", "purge", "--days", "inf"),
    ("forget-by-age", "--days", "1e308", "--dry-run"),
    ("forget-by-capacity", "--half-life-days", "nan", "--dry-run"),
])
def test_cli_refuses_non_finite_or_huge_numbers_without_a_traceback(module_db, keys, args):
    result = run(module_db, *args)  # an exception other than an exit would propagate
    assert result.exit_code in (1, 2), result.output
    assert "Traceback" not in result.output
    assert "error" in result.output.lower()


# -- the access log -----------------------------------------------------------------------
class _Lines(logging.Handler):
    """Formats each access record with uvicorn's own AccessFormatter; keeps lines and errors."""

    def __init__(self) -> None:
        from uvicorn.logging import AccessFormatter

        super().__init__()
        self.setFormatter(AccessFormatter('%(client_addr)s - "%(request_line)s" %(status_code)s',
                                          use_colors=False))
        self.lines: list[str] = []
        self.errors: list[BaseException] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(self.format(record))
        except Exception as exc:  # what logging would print as a traceback
            self.errors.append(exc)


def test_secrets_in_the_url_are_masked_and_the_access_line_is_kept(door, keys):
    key = keys["acme"]
    lines = _Lines()
    access = logging.getLogger("uvicorn.access")
    access.addHandler(lines)
    try:
        with door.client() as c:  # no key needed to reach the log
            c.get("/v1/memories", params={"password": "hunter2-密码"})
            c.get(f"/v1/memories/{key}")
            c.get("/v1/health", params={"q": "天气 weather"})
    finally:
        access.removeHandler(lines)
    assert lines.errors == []
    joined = "\n".join(lines.lines)
    assert len(lines.lines) == 3, joined
    assert "hunter2" not in joined and key not in joined
    assert key.split("_")[1] in joined  # the key id may show, its secret not
    assert "GET /v1/memories?password=***" in joined
    assert '" 401' in joined and '" 200' in joined  # status codes still formatted


# -- echoed values --------------------------------------------------------------------------
def test_error_messages_bound_and_escape_echoed_values(door, keys):
    long_digits = "9" * 300
    with door.client(keys["acme"]) as c:
        r = c.get("/v1/memories/mem://etc/passwd")
        assert r.status_code == 400
        assert "not a memory URI" in r.json()["error"]["message"]
        long_uri = "mem://" + "密" * 200 + "/'\u202eINJECTED"
        message = c.get("/v1/memories/" + quote(long_uri, safe=":/")).json()["error"]["message"]
        assert "mem://" + "密" * 34 + "…" in message and "密" * 35 not in message
        assert "\u202e" not in message and "INJECTED" not in message
        r = c.post("/v1/search", json={"query": "weather", "options": {"x'; drop": 1,
                                                                       "y" * 300: 2}})
        assert r.status_code == 400
        message = r.json()["error"]["message"]
        assert "unknown search options" in message
        assert "y" * 40 in message and "y" * 41 not in message
        r = c.post("/v1/search", content='{"query": "weather", "k": ' + long_digits + '}',
                   headers={"Content-Type": "application/json"})
        assert r.status_code == 400
        message = r.json()["error"]["message"]
        assert "9" * 40 in message and "9" * 41 not in message
        assert len(message) < 1_100


def test_the_one_echo_policy_escapes_controls_and_cuts_values():
    """memdb.http._errors.bounded, which every error body passes through."""
    from memdb.http._errors import MAX_ECHO, bounded

    raw = "bad name: 'a\nb\x1b[31m\u202egnp.exe' and password=hunter2, 记忆 " + "7" * 100
    out = bounded(raw)
    assert "\n" not in out and "\x1b" not in out and "\u202e" not in out
    assert "\\u000a" in out and "\\u001b" in out and "\\u202e" in out
    assert "hunter2" not in out and "记忆" in out
    assert "7" * MAX_ECHO + "…" in out and "7" * (MAX_ECHO + 1) not in out
    assert bounded("memdb's subject isn't 'alice'") == "memdb's subject isn't 'alice'"
    assert len(bounded("x" * 5_000)) <= 1_001


# -- the UI's login form ----------------------------------------------------------------------
@pytest.mark.parametrize("headers", [
    {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
    {"Sec-Fetch-Site": "same-site", "Origin": "https://evil.door.example"},
    {"Origin": "https://evil.example"},
    {"Origin": "null"},
])
def test_a_login_posted_from_another_site_is_refused_and_sets_no_cookie(door, keys, headers):
    with door.client() as c:
        r = c.post("/ui/login", data={"key": keys["acme"]}, headers=headers)
        assert r.status_code == 403, r.text
        assert "set-cookie" not in r.headers
        assert c.get("/ui/").status_code == 303  # still logged out


def test_a_login_from_the_page_itself_works(door, keys):
    origin = door.url.rstrip("/")
    for headers in ({"Sec-Fetch-Site": "same-origin", "Origin": origin}, {"Origin": origin}, {}):
        with door.client() as c:
            r = c.post("/ui/login", data={"key": keys["acme"]}, headers=headers)
            assert r.status_code == 303, r.text
            assert "memdb_ui=" in r.headers["set-cookie"]
            assert c.get("/ui/").status_code == 200


# -- MCP sessions belong to the key that opened them -----------------------------------------
_MCP_HEADERS = {"Accept": "application/json, text/event-stream",
                "mcp-protocol-version": "2025-06-18"}


def _rpc(method: str, id_: int | None = None, **params: object) -> dict[str, object]:
    body: dict[str, object] = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        body["id"] = id_
    if params:
        body["params"] = params
    return body


def test_an_mcp_session_cannot_be_used_or_ended_with_another_key(module_db, embedder, keys):
    """Raw HTTP against the real server: A opens a session; B (another tenant) and alice
    (another subject of A's tenant) sending A's session id get 404; A's session lives on."""
    pytest.importorskip("mcp")
    with app_login(module_db) as app_dsn:
        settings = ServerSettings(dsn=app_dsn, embedder=embedder, mcp=True)
        with running_door(settings) as mcp_door, mcp_door.client() as c:
            def as_key(key: str, sid: str | None = None) -> dict[str, str]:
                extra = {"mcp-session-id": sid} if sid else {}
                return {**_MCP_HEADERS, "Authorization": f"Bearer {key}", **extra}

            opened = c.post("/mcp", headers=as_key(keys["acme"]), json=_rpc(
                "initialize", 1, protocolVersion="2025-06-18", capabilities={},
                clientInfo={"name": "hostile-test", "version": "1"}))
            assert opened.status_code == 200, opened.text
            sid = opened.headers["mcp-session-id"]
            assert c.post("/mcp", headers=as_key(keys["acme"], sid),
                          json=_rpc("notifications/initialized")).status_code == 202
            for other in (keys["globex"], keys["alice"]):
                assert c.delete("/mcp", headers=as_key(other, sid)).status_code == 404
                r = c.post("/mcp", headers=as_key(other, sid), json=_rpc("tools/list", 2))
                assert r.status_code == 404 and "search" not in r.text
            # an id never handed out is no session either
            assert c.post("/mcp", headers=as_key(keys["acme"], "f" * 32),
                          json=_rpc("tools/list", 3)).status_code == 404
            listed = c.post("/mcp", headers=as_key(keys["acme"], sid), json=_rpc("tools/list", 4))
            assert listed.status_code == 200 and '"search"' in listed.text  # A's session lives
            assert c.delete("/mcp", headers=as_key(keys["acme"], sid)).status_code == 200
            assert c.post("/mcp", headers=as_key(keys["acme"], sid),
                          json=_rpc("tools/list", 5)).status_code == 404
