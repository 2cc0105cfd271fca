"""The operations declared once (memdb.core.ops): the declarations are sound, every door reads them,
their one validation refuses what no door may take, and docs/operations.md is current."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from memdb.core.errors import InvalidInput
from memdb.core.ops import DECLARED, REQUIRED, Param, operation
from memdb.core.ops._docs import render
from memdb.core.ops.catalog import MAX_K, SEARCH
from memdb.families import tool
from memdb.mcp import TOOLS, input_schema

DOCS = Path(__file__).resolve().parents[1] / "docs" / "operations.md"


def test_docs_page_is_generated_from_the_declarations():
    assert DOCS.read_text() == render(), \
        "docs/operations.md is stale: python -m memdb.core.ops.docs > docs/operations.md"


def test_every_door_name_belongs_to_one_operation():
    mcp = {t.name: t for t in TOOLS}
    for op in DECLARED:
        if op.door("mcp"):
            assert op.door("mcp") in mcp, op.name
        if op.door("tool"):
            assert tool.OPERATIONS[op.door("tool")] is op
    assert set(tool.ACTIONS) == {op.door("tool") for op in DECLARED if op.door("tool")}
    assert "remember" in tool.ACTIONS  # declared in memdb.core.ops.remember, not the catalog
    # the MCP search tool and the memory tool's search action: one declaration, one range
    search = mcp["search"]
    assert search.operation is SEARCH is tool.OPERATIONS["search"]
    k = input_schema(search, confined=True)["properties"]["k"]
    assert (k["minimum"], k["maximum"]) == (1, MAX_K)
    assert tool.PROPERTIES["k"]["maximum"] == MAX_K


def test_the_store_takes_the_declared_limit(store):
    store.add("Grace has a dog named Lucky.", subject="grace")
    assert len(store.search("Lucky", MAX_K)) == 1
    with pytest.raises(InvalidInput):
        store.search("Lucky", MAX_K + 1)


K = SEARCH.param("k")
QUERY = SEARCH.param("query")


@pytest.mark.parametrize("value", [0, -1, MAX_K + 1, 10**400, 1.5, math.nan, math.inf, "5",
                                   True, None])
def test_k_refuses_what_no_door_may_take(value):
    if value is None:  # not required: its default
        assert SEARCH.check({"query": "q"})["k"] == 10
        return
    with pytest.raises(InvalidInput, match="^k "):
        K.check(value)


@pytest.mark.parametrize("value", [1, MAX_K, 7.0])
def test_k_takes_whole_numbers_in_range(value):
    assert K.check(value) == int(value)


def test_strings_names_and_choices():
    assert QUERY.check("张伟喜欢喝乌龙茶") == "张伟喜欢喝乌龙茶"
    assert QUERY.check("   ") == "   "  # a blank query is a query that finds nothing
    for bad, message in (("a\x00b", "NUL"), ("x" * (QUERY.max_length + 1), "longer"),
                         (42, "string")):
        with pytest.raises(InvalidInput, match=message):
            QUERY.check(bad)
    category = SEARCH.param("category")
    assert category.check("preferences") == "preferences"
    with pytest.raises(InvalidInput, match="one of"):
        category.check("'; DROP TABLE memdb.memories; --")
    ident = operation("delete").param("id")
    with pytest.raises(InvalidInput, match="UUID"):
        ident.check("1 OR 1=1")
    tags = operation("add").param("tags")
    with pytest.raises(InvalidInput, match="at most 10"):
        tags.check([str(i) for i in range(11)])
    with pytest.raises(InvalidInput, match="list of strings"):
        tags.check("a,b")


def test_check_refuses_unknown_and_missing_arguments():
    with pytest.raises(InvalidInput, match="does not take tenant"):
        SEARCH.check({"query": "tea", "tenant": "other"})
    with pytest.raises(InvalidInput, match="needs query"):
        SEARCH.check({"k": 3})
    assert SEARCH.check({"query": "tea"}, ("query", "k")) == {"query": "tea", "k": 10}


def test_a_declaration_is_checked_when_made():
    with pytest.raises(ValueError):
        Param("x", "decimal", "no such type")
    with pytest.raises(ValueError):
        type(SEARCH)("twice", "", (K, K), scope="tenant", result="", errors=())
    assert Param("q", "str", "", REQUIRED).required


# -- search options: declared once, checked in Python and (for psql) in SQL --------------------
from memdb.core.ops.search_options import SEARCH_OPTIONS  # noqa: E402
from memdb.retrieval.search import DEFAULT_OPTIONS, SearchOptions  # noqa: E402

_SQL_NAME = {"speaker_weight": "speaker_boost"}


def _sql_accepts(conn, name: str, value: float) -> bool:
    import psycopg
    from psycopg.types.json import Jsonb

    try:
        with conn.transaction():
            conn.execute("SELECT memdb.check_search_options(%s)",
                         (Jsonb({_SQL_NAME.get(name, name): value}),))
        return True
    except psycopg.errors.InvalidParameterValue:
        return False


def test_sql_refuses_exactly_what_the_declarations_refuse(fresh_db):
    """memdb.check_search_options (psql callers) and SearchOptions (every other caller) agree
    at both ends of every declared range and just past them."""
    import psycopg

    with psycopg.connect(fresh_db, autocommit=True) as conn:
        for p in SEARCH_OPTIONS:
            if p.type == "bool":
                continue
            step = 1 if p.type == "int" else 0.001
            for value, ok in ((p.minimum, True), (p.maximum, True),
                              (p.minimum - step, False), (p.maximum + step, False)):
                assert _sql_accepts(conn, p.name, value) is ok, (p.name, value)
                python = SearchOptions(**{p.name: value})
                if ok:
                    python.to_json()
                else:
                    with pytest.raises(InvalidInput, match=p.name):
                        python.to_json()


def test_the_defaults_are_the_declared_ones():
    for p in SEARCH_OPTIONS:
        set_by_default = getattr(DEFAULT_OPTIONS, p.name)
        if set_by_default is not None:
            assert set_by_default == p.default, p.name


def test_memdb_search_flags_are_generated_from_the_declarations(fresh_db):
    from click.testing import CliRunner

    from memdb.cli import cli

    help_text = CliRunner().invoke(cli, ["search", "--help"]).output
    for p in SEARCH_OPTIONS:
        assert p.cli_flags()[0] in help_text, p.name
        if p.maximum is not None:
            assert f"Range {p.range_text()}" in help_text.replace("\n", " ").replace(
                "  ", " ") or p.range_text() in help_text, p.name
    out = CliRunner().invoke(cli, ["--dsn", fresh_db, "search", "tea", "--neighbors", "11"])
    assert out.exit_code == 1 and "neighbors must be between 0 and 10" in out.output
