"""memdb.check_filter's quick path (the filters searches use most: none, one subject) accepts
exactly what the full check accepts and refuses the rest with the same errors."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.types.json import Jsonb


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
