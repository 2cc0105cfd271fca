"""The status filter (memories.status: active facts, or hypotheses the gate keeps from model
inferences): evaluated in SQL (memdb.matches), from Python, the CLI and psql, so a page of
memories filtered by status is a full page (the memory browser used to filter within a page)."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.types.json import Jsonb

from memdb import Filter, InvalidInput
from tests.cli_helpers import ok_json


def _seed(store):
    store.add("爱丽丝喜欢乌龙茶", subject="alice", source_id="chat-1:1")
    store.add("Alice may be vegetarian", subject="alice", source_type="model_inference",
              source_id="chat-1:2")
    store.add("爱丽丝可能在学德语", subject="alice", source_type="model_inference",
              source_id="chat-1:3")


def test_list_and_search_by_status(gated_store):
    _seed(gated_store)
    hypotheses = gated_store.list(status="hypothesis", limit=1)
    assert len(hypotheses) == 1 and hypotheses[0].status == "hypothesis"  # a full page of one
    assert {m.content for m in gated_store.list(status="hypothesis")} == {
        "Alice may be vegetarian", "爱丽丝可能在学德语"}
    assert [m.content for m in gated_store.list(Filter(status="active"))] == ["爱丽丝喜欢乌龙茶"]
    assert len(gated_store.list(status=["active", "hypothesis"])) == 3
    hits = gated_store.search("爱丽丝", k=10, status="hypothesis")
    assert hits and all(h.memory.status == "hypothesis" for h in hits)


@pytest.mark.parametrize("bad", ["pending", "", ["active", "x"], [], 3])
def test_a_bad_status_is_refused(store, bad):
    with pytest.raises(InvalidInput):
        store.list(status=bad)


def test_sql_refuses_a_bad_status_and_filters_a_good_one(gated_store, raw):
    _seed(gated_store)
    raw.execute("SET memdb.tenant = 'default'")
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="status"):
        raw.execute("SELECT memdb.check_filter(%s)", [Jsonb({"status": "pending"})])
    n = raw.execute("SELECT count(*) FROM memdb.memories m WHERE m.tenant = 'default' "
                    "AND memdb.matches(m, %s)", [Jsonb({"status": "hypothesis"})]).fetchone()[0]
    assert n == 2


def test_cli_status_option(gated_store, fresh_db):
    _seed(gated_store)
    rows = ok_json(fresh_db, "list", "--status", "hypothesis")
    assert sorted(r["content"] for r in rows) == ["Alice may be vegetarian", "爱丽丝可能在学德语"]
