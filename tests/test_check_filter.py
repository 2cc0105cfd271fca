"""memdb.check_filter's quick path (the filters searches use most: none, one subject) accepts
exactly what the full check accepts and refuses the rest with the same errors."""

from __future__ import annotations

import json

import psycopg
import pytest
from psycopg.types.json import Jsonb

from tests.pg_stats import function_calls


@pytest.mark.parametrize("flt", [{}, {"subject": "alice"}, {"subject": ["爱丽丝"]},
                                 {"subject": ["alice", "鲍勃"]},
                                 {"subject": "鲍勃", "kind": "semantic"}])
def test_good_filters_pass(raw, flt):
    assert raw.execute("SELECT memdb.check_filter(%s)", [Jsonb(flt)]).fetchone()[0] is True


@pytest.mark.parametrize(("flt", "error"), [
    ({"subject": []}, "is an empty list"),
    ({"subject": [1]}, "must hold strings, got number"),
    ({"subject": ["爱丽丝", None]}, "must hold strings, got null"),
    ({"subject": None}, "must be a string or a list of strings, got null"),
    ({"subject": {"0": "alice"}}, "must be a string or a list of strings, got object"),
    ({"subject": "alice", "bogus": 1}, 'unknown memdb filter key "bogus"'),
])
def test_bad_filters_are_refused(raw, flt, error):
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=error):
        raw.execute("SELECT memdb.check_filter(%s)", [Jsonb(flt)])


@pytest.mark.parametrize("flt", [[], "alice", 3, None])
def test_filters_that_are_no_object(raw, flt):
    if flt is None:  # SQL NULL: no filter
        assert raw.execute("SELECT memdb.check_filter(NULL)").fetchone()[0] is True
        return
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="must be a JSON object"):
        raw.execute("SELECT memdb.check_filter(%s)", [Jsonb(flt)])


def test_the_quick_path_is_inlined_and_calls_no_function(raw):
    """The quick path is a plain SQL expression the planner inlines into the statement calling
    it (each route of a search checks its filter, once per call): with track_functions, 50
    checks of a filter searches use most in one PL/pgSQL block call a function at most for its
    first, custom-planned executions (which fold the call); any other filter calls the full
    check every time."""
    raw.execute("SET track_functions = 'all'")

    def check_50_times(flt) -> dict[str, int]:
        before = function_calls(raw, "check_filter", "check_filter_keys")
        literal = json.dumps(flt, ensure_ascii=False).replace("'", "''")
        # a variable, as in the routes (a constant would be folded: a call at planning)
        raw.execute(f"DO $$ DECLARE f jsonb := '{literal}'; BEGIN "
                    "FOR i IN 1..50 LOOP PERFORM memdb.check_filter(f); END LOOP; END $$")
        after = function_calls(raw, "check_filter", "check_filter_keys")
        return {name: after[name] - before[name]
                for name in ("check_filter", "check_filter_keys")}

    for flt in ({}, {"subject": "alice"}, {"subject": ["鲍勃"]}):
        made = check_50_times(flt)
        assert made["check_filter"] <= 5 and made["check_filter_keys"] == 0, (flt, made)
    made = check_50_times({"subject": "alice", "tags": ["work"]})
    assert made["check_filter"] <= 5 and made["check_filter_keys"] >= 45, made
