"""The MCP server's tools: names, descriptions and input schemas (no I/O), generated from the
declared operations (:mod:`memdb.core.ops.catalog`).

Each tool is one operation: its description is the operation's summary, its input schema the
operation's parameters (the memory tool's actions take the same ones, from the same
declaration, but the subject). A server confined to one subject advertises no ``subject``
argument (and refuses one); a tenant-wide server offers it on every tool whose operation
declares it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..core.errors import InvalidInput
from ..core.ops import Operation
from ..core.ops import catalog as ops
from ..core.ops import files as file_ops
from ..core.ops import jobs as job_ops
from ..core.ops import remember as remember_ops

__all__ = ["ToolSpec", "TOOLS", "tool_specs", "input_schema", "check_arguments",
           "MAX_DOCUMENT_CHARS"]

MAX_DOCUMENT_CHARS = ops.MAX_DOCUMENT_CHARS


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool: its operation, the parameters it offers (the subject is added for a
    tenant-wide server when the operation declares one), and the memory tool's action it
    shares (None: MCP only)."""

    name: str
    operation: Operation
    params: tuple[str, ...]
    action: str | None = None

    @property
    def description(self) -> str:
        return self.operation.summary

    @property
    def subject(self) -> bool:
        """Whether a tenant-wide server offers ``subject``: when the operation declares one,
        and on update and forget (whose memory; default: the memory's own subject)."""
        return self.operation.has("subject") or self.action in ("update", "remove")

    @property
    def schema(self) -> dict[str, Any]:
        return input_schema(self, confined=True)


def _tool(op: Operation, action: str | None = None, *, extra: tuple[str, ...] = ()) -> ToolSpec:
    name = op.door("mcp")
    assert name is not None, op.name
    params = tuple(p.name for p in op.params if p.name != "subject") + extra
    return ToolSpec(name, op, params, action)


# the forget tool: delete one memory by id, or erase the whole subject
_FORGET = ops.Operation(
    "forget", f"{ops.DELETE.summary} Or erase everything about the subject: erase_subject true "
    "with confirm set to the subject's name (irreversible).",
    (replace(ops.DELETE.param("id"), default=None), ops.DELETE.param("reason"),
     ops.ERASE_SUBJECT, ops.CONFIRM),
    scope="memory", result="id, removed | the erasure's counts", errors=ops.DELETE.errors,
    doors=(("mcp", "forget"),))

TOOLS: tuple[ToolSpec, ...] = (
    _tool(ops.ADD, "add"),
    _tool(ops.SEARCH, "search"),
    _tool(ops.RECALL),
    _tool(ops.GET),
    _tool(ops.UPDATE, "update"),
    _tool(_FORGET, "remove"),
    _tool(ops.CONTEXT),
    _tool(ops.ADD_DOCUMENT),
    _tool(ops.ASK),
    _tool(job_ops.JOB),
    _tool(remember_ops.REMEMBER),
    _tool(file_ops.ADD_FILE),
)
_BY_NAME = {t.name: t for t in TOOLS}


def input_schema(spec: ToolSpec, *, confined: bool) -> dict[str, Any]:
    """The tool's input schema on a server confined to one subject (``confined``) or not."""
    names = spec.params
    if spec.subject and not confined:
        names = (*names, "subject")
        if not spec.operation.has("subject"):  # a memory's operation: whose memory it is
            schema = spec.operation.schema(spec.params)
            schema["properties"]["subject"] = ops.SUBJECT.schema()
            return schema
    return spec.operation.schema(names)


def tool_specs() -> tuple[ToolSpec, ...]:
    return TOOLS


def check_arguments(name: str, arguments: Any, *, confined: bool) -> tuple[ToolSpec, dict]:
    """The tool and its arguments, checked against its operation's declaration (defaults
    filled in); InvalidInput (naming the argument) for an unknown tool or arguments the
    declaration refuses."""
    spec = _BY_NAME.get(name)
    if spec is None:
        raise InvalidInput(f"unknown tool {str(name)[:60]!r}; tools: "
                           f"{', '.join(_BY_NAME)}")
    args = {} if arguments is None else arguments
    if not isinstance(args, dict):
        raise InvalidInput("the arguments must be a JSON object")
    if confined and spec.subject and "subject" in args:
        raise InvalidInput("this server is confined to one subject: the subject argument is "
                           "not accepted")
    subject = args.get("subject") if spec.subject and not confined else None
    rest = {k: v for k, v in args.items() if not (k == "subject" and subject is not None)}
    checked = spec.operation.check(rest, spec.params)
    if subject is not None:
        checked["subject"] = ops.SUBJECT.check(subject)
    return spec, checked
