"""The CLI commands and the HTTP routes of the declared operations (memdb.core.ops) are generated
from
the declarations: each offers exactly the declared parameters (but the few it takes in a broader
form of its own, listed here), with the declared flags, help, defaults and ranges, and a changed
declaration changes both doors."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import click
import pytest
from click.testing import CliRunner

from memdb.cli import cli
from memdb.cli._generate import declared as cli_declared
from memdb.cli._generate import option_help
from memdb.core.errors import InvalidInput
from memdb.core.ops import DECLARED, Operation
from memdb.core.ops import catalog as ops
from memdb.core.ops import families as fam
from memdb.http import ServerSettings
from memdb.http._app import create_app
from memdb.http._generate import arguments, request_model

# Declared parameters a door takes in a form of its own (the reason is beside each in the code):
# the CLI and HTTP take every provenance as --source-type/source_type, the memory of update and
# delete by id or URI (get's parameter, the path at HTTP), and the CLI ingests files
# and its add takes CONTENT or --file (an image). remember's turn (text) is the words of TEXT
# or "-" for stdin on the CLI, and the body's messages at HTTP (a string or a list of
# {role, content}). A route's path parameters (the session, the review entry...) are read
# from its OpenAPI document.
CLI_OWN = {"add": {"source", "content"}, "update": {"id", "source"}, "delete": {"id"},
           "add_document": {"document_id", "text", "title", "format", "category"},
           "remember": {"text"}}
HTTP_OWN = {"add": {"source"}, "update": {"id", "source"}, "delete": {"id"},
            "get": {"memory"}, "add_document": {"document_id", "text", "title", "format"},
            "remember": {"text"}}


def _command(path: str) -> click.Command:
    command: Any = cli
    for name in path.split():
        command = command.commands[name]
    return command


def _cli_ops() -> list[Operation]:
    return [op for op in DECLARED if op.door("cli")]


def _http_ops() -> list[Operation]:
    return [op for op in DECLARED if op.door("http")]


_FAMILIES = {"session_list", "session_get", "session_append", "session_delete", "history",
             "graph_neighbors", "review_list", "review_approve", "review_reject", "traces_list",
             "trace_get", "traces_purge", "traces_erase", "subject_export", "subject_forget",
             "meta_read", "documents_list", "documents_remove", "documents_search", "graph_link",
             "graph_search", "traces_stats", "profile", "meta_add", "session_state"}


def test_every_declared_operation_has_a_cli_command_and_an_http_route():
    assert {op.name for op in _cli_ops()} == {
        "add", "search", "recall", "get", "update", "delete", "context", "add_document", "ask",
        "summary", "consolidate", "remember"} | _FAMILIES
    assert {op.name for op in _http_ops()} == {
        "add", "search", "recall", "get", "update", "delete", "context", "add_document", "ask",
        "summary", "remember"} | _FAMILIES


def test_each_declared_door_exists_once():
    """Every CLI command and HTTP route a declaration names exists, and no two declarations
    name the same one."""
    routes = {f"{m.upper()} {path}" for path, item in create_app(
        ServerSettings(dsn="postgresql://nowhere/none")).openapi()["paths"].items()
        for m in item}
    for door in ("cli", "http"):
        named = [op.door(door) for op in DECLARED if op.door(door)]
        assert len(named) == len(set(named)), door
    for op in _cli_ops():
        assert isinstance(_command(op.door("cli")), click.Command), op.name
    assert {op.door("http") for op in _http_ops()} <= routes


def test_an_exclusive_minimum_is_refused_at_every_door_and_shown_in_the_schema():
    hours = fam.TRACES_STATS.param("since_hours")
    assert hours.schema()["exclusiveMinimum"] == 0 and "minimum" not in hours.schema()
    assert hours.check(0.5) == 0.5
    with pytest.raises(InvalidInput, match="> 0"):
        hours.check(0)
    model = request_model(fam.TRACES_STATS, "StatsProbe")
    assert model.model_json_schema()["properties"]["since_hours"]["exclusiveMinimum"] == 0


def test_the_families_constants_are_the_families():
    from memdb.core.validate import MAX_HOURS
    from memdb.families.meta import ASPECTS

    assert set(fam.ASPECTS) == set(ASPECTS) and fam.MAX_HOURS == MAX_HOURS


def test_the_session_roles_are_the_family_s():
    from memdb.families.session import ROLES

    assert fam.ROLES == ROLES


@pytest.mark.parametrize("op", _cli_ops(), ids=lambda op: op.name)
def test_each_cli_command_offers_exactly_the_declared_parameters(op):
    command = _command(op.door("cli"))
    by_name = {p.name: p for p in command.params}
    flags = [flag for p in command.params for flag in p.opts if flag.startswith("-")]
    assert len(flags) == len(set(flags)), sorted(f for f in flags if flags.count(f) > 1)
    own = CLI_OWN.get(op.name, set())
    for param in op.params:
        if param.name in own:
            assert param.name not in by_name, param.name
            continue
        got = by_name[param.name]
        if param.argument:
            assert isinstance(got, click.Argument), param.name
            assert got.required == param.required
            assert f"{got.metavar}: {param.describe()}" in " ".join(command.help.split())
        else:
            assert isinstance(got, click.Option), param.name
            shown = tuple(got.opts) if not got.secondary_opts else (  # an on/off flag
                "/".join((*got.opts, *got.secondary_opts)),)
            assert shown == param.cli_flags(), param.name
            assert got.help == option_help(param), param.name
            assert got.multiple == (param.type == "str_list")
            if param.type not in ("str_list",) and not param.required:
                assert got.default == param.default, param.name
    help_text = " ".join(CliRunner().invoke(cli, [*op.door("cli").split(), "--help"])
                         .output.split())
    for param in op.params:
        if param.name not in own:
            assert param.describe().split("(")[0].strip()[:30] in help_text, param.name


def _request_schema(openapi: dict[str, Any], op: Operation) -> dict[str, Any]:
    """The declared fields of a route's request: its body's properties, else its query's."""
    method, path = op.door("http").split()
    route = openapi["paths"][path][method.lower()]
    body = route.get("requestBody")
    if body is not None:
        ref = body["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
        return openapi["components"]["schemas"][ref]["properties"]
    return {p["name"]: {**p["schema"], "description": p.get("description")}
            for p in route.get("parameters", []) if p["in"] == "query"}


def _path_params(openapi: dict[str, Any], op: Operation) -> set[str]:
    method, path = op.door("http").split()
    route = openapi["paths"][path][method.lower()]
    return {p["name"] for p in route.get("parameters", []) if p["in"] == "path"}


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    return create_app(ServerSettings(dsn="postgresql://nowhere/none")).openapi()


@pytest.mark.parametrize("op", _http_ops(), ids=lambda op: op.name)
def test_each_route_s_openapi_carries_the_declared_ranges_and_defaults(openapi, op):
    fields = _request_schema(openapi, op)
    own = HTTP_OWN.get(op.name, set()) | _path_params(openapi, op)
    for param in op.params:
        if param.name in own:
            continue
        if param.name not in fields:  # the path's parameter, under the route's own name
            assert param.argument and param.required and _path_params(openapi, op), param.name
            continue
        field = fields[param.name]
        declared = param.schema()
        assert field["description"] == param.describe(), param.name
        for key in ("minimum", "exclusiveMinimum", "maximum", "maxLength", "minLength", "enum",
                    "maxItems", "pattern"):
            assert field.get(key) == declared.get(key), (param.name, key)
        if not param.required and param.default is not None:
            assert field["default"] == param.default, param.name


def _narrowed(op: Operation, name: str, **change: Any) -> Operation:
    return replace(op, params=tuple(replace(p, **change) if p.name == name else p
                                    for p in op.params))


def test_a_changed_declaration_changes_both_doors():
    search = _narrowed(ops.SEARCH, "k", maximum=7, default=3,
                       help="How many hits, at most seven / 最多七条.")

    @click.command()
    @cli_declared(search)
    def probe(**given: Any) -> None:
        """A command made from a changed declaration."""
        click.echo(f"k={given['k']} query={given['query']}")

    runner = CliRunner()
    assert runner.invoke(probe, ["茶", "-k", "7"]).output.strip() == "k=7 query=茶"
    assert runner.invoke(probe, ["tea"]).output.strip() == "k=3 query=tea"
    refused = runner.invoke(probe, ["tea", "-k", "8"])
    assert isinstance(refused.exception, InvalidInput) and "1–7" in str(refused.exception)
    shown = " ".join(runner.invoke(probe, ["--help"]).output.split())
    assert "最多七条 (default 3). Range 1–7." in shown

    model = request_model(search, "ProbeIn")
    schema = model.model_json_schema()["properties"]["k"]
    assert (schema["maximum"], schema["default"]) == (7, 3)
    assert "最多七条" in schema["description"]
    assert arguments(search, model(query="茶", k=7))["k"] == 7
    with pytest.raises(InvalidInput, match="1–7"):
        arguments(search, model(query="tea", k=8))
    assert arguments(ops.SEARCH, request_model(ops.SEARCH, "Plain")(query="tea", k=8))["k"] == 8


@pytest.mark.parametrize("args", [
    ["recall", "what does Alice drink", "-k", "1001"],
    ["search", "张伟喝什么茶", "-k", "0"],
    ["context", "tea", "--budget", "10"],
    ["add", "Grace has a dog named Lucky.", "--tag", "x" * 65],
    ["add", "张伟喜欢喝乌龙茶。", "--importance", "1.5"],
    ["documents", "ask", "谁养了狗？", "-k", "51"],
    ["subject", "summary", "-k", "0"],
    ["session", "consolidate", "s1", "--threshold", "2"],
    ["session", "list", "--limit", "0"],
    ["session", "append", "s1", "robot", "你好"],
    ["graph", "neighbors", "张伟", "--hops", "5"],
    ["review", "approve", "not-a-uuid"],
    ["traces", "list", "--limit", "10001"],
    ["traces", "purge", "--days", "-1"],
    ["meta", "show", "--limit", "1001"],
    ["documents", "search", "乌龙茶", "-k", "0"],
    ["documents", "list", "--limit", "0"],
    ["graph", "link", "--timeout", "0"],
    ["graph", "search", "张三", "--route", "telepathy"],
    ["traces", "stats", "--hours", "0"],
    ["profile", "--limit", "1001"],
    ["meta", "add", "我是小助手", "--importance", "2"],
    ["session", "state", "s1", "--expected-version", "-1"],
    ["session", "state", "s1", "--set", "[1]", "--expected-version", "0"],
], ids=["recall-k", "search-k-zh", "context-budget", "add-tag", "add-importance-zh", "ask-k",
        "summary-k", "consolidate-threshold", "session-limit", "session-role-zh",
        "neighbors-hops-zh", "review-id", "traces-limit", "traces-days", "meta-limit",
        "documents-k-zh", "documents-limit", "link-timeout", "graph-route-zh", "stats-hours",
        "profile-limit", "meta-importance-zh", "state-version", "state-set"])
def test_the_cli_checks_the_declared_range_before_it_connects(args):
    """Out of its declared range, a value is InvalidInput (exit 1, the JSON error body the
    other doors give) before any database is opened: the DSN here leads nowhere."""
    import json

    out = CliRunner().invoke(cli, ["--dsn", "postgresql://nobody@127.0.0.1:1/none", *args,
                                   "--json"])
    assert out.exit_code == 1, out.output
    assert json.loads(out.stdout)["error"]["type"] == "InvalidInput"
