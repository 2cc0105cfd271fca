"""The MCP server's tools: names, descriptions and input schemas (no I/O).

The tools that are also actions of the function-calling memory tool (remember = add, search,
update, forget = remove) take their descriptions and parameter schemas from
:mod:`memdb.tool` (:data:`~memdb.tool.ACTION_DESCRIPTIONS`,
:func:`~memdb.tool.action_parameters`): one source for the OpenAI tool and the MCP tools.
The others (recall, get, context, add_document, ask) reuse its property schemas where the
argument is the same (query, k, category, tags, reason) and add their own here.

A server confined to one subject advertises no ``subject`` argument (and refuses one); a
tenant-wide server adds it to every tool that reads or writes a subject's memories.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import best_match

from ..errors import InvalidInput
from ..models import Category, Kind
from ..tool import ACTION_DESCRIPTIONS, MAX_TOOL_TEXT, PROPERTIES, STORE_ADVICE, action_parameters

__all__ = ["ToolSpec", "TOOLS", "SUBJECT_PROPERTY", "tool_specs", "input_schema", "check_arguments",
           "MAX_DOCUMENT_CHARS"]

MAX_DOCUMENT_CHARS = 200_000  # one add_document call's text
MAX_BUDGET_TOKENS = 32_000

SUBJECT_PROPERTY: dict[str, Any] = {
    "type": "string", "minLength": 1, "maxLength": 256,
    "description": "Whose memories: the user's or agent's id (default 'default'). This server "
                   "serves a whole tenant, so name the subject the conversation is about."}


def _shared(name: str) -> dict[str, Any]:
    return copy.deepcopy(PROPERTIES[name])


def _object(props: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(required),
            "additionalProperties": False}


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool: ``action`` names the memory tool's action it shares (None: MCP only);
    ``subject``: whether a tenant-wide server adds the ``subject`` argument."""

    name: str
    description: str
    schema: dict[str, Any]
    action: str | None = None
    subject: bool = True


def _action_tool(name: str, action: str, lead: str, tail: str = "") -> ToolSpec:
    text = f"{lead} ({ACTION_DESCRIPTIONS[action]})."
    return ToolSpec(name, f"{text} {tail}".strip(), action_parameters(action), action)


_FORGET = action_parameters("remove")
_FORGET["required"] = []
_FORGET["properties"].update({
    "erase_subject": {"type": "boolean", "description": "Erase everything memdb holds about "
                      "the subject (memories, history, documents): irreversible; needs "
                      "confirm."},
    "confirm": {"type": "string", "maxLength": 256, "description": "erase_subject: the "
                "subject's name again, exactly, to confirm the erasure."},
})

_FILTERS: dict[str, Any] = {
    "categories": {"type": "array",
                   "items": {"type": "string", "enum": [c.value for c in Category]},
                   "maxItems": 8, "uniqueItems": True,
                   "description": "Only memories of these categories."},
    "kinds": {"type": "array", "items": {"type": "string", "enum": [k.value for k in Kind]},
              "maxItems": 4, "uniqueItems": True, "description": "Only memories of these kinds."},
    "tags_all": {"type": "array", "items": {"type": "string", "maxLength": 64}, "maxItems": 10,
                 "description": "Only memories carrying all of these tags."},
    "uri_prefix": {"type": "string", "maxLength": 2048, "pattern": "^mem://",
                   "description": "Only memories whose mem:// URI starts with this, e.g. "
                                  "mem://alice/preferences/."},
}

TOOLS: tuple[ToolSpec, ...] = (
    _action_tool("remember", "add", "Remember one thing for future conversations: "
                 "store", STORE_ADVICE),
    _action_tool("search", "search", "Hybrid search (meaning and keywords) of the long-term "
                 "memories", "Each result has the memory's id, content, category, kind, "
                 "importance and score."),
    ToolSpec("recall", "Planned recall for a question about the user or the work: the query "
             "is routed to the memory categories it concerns (preferences, events, skills...), "
             "filtered by categories, kinds, tags_all and uri_prefix; k results (1-20, default "
             "5), each with its id, uri, content, category and score; status is ok, "
             "no_relevant_memory or degraded.",
             _object({"query": _shared("query"), "k": _shared("k"), **_FILTERS}, ("query",))),
    ToolSpec("get", "One memory by its id (UUID) or its mem:// URI, with all its fields "
             "(content, category, kind, importance, tags, provenance, version, dates).",
             _object({"memory": {"type": "string", "minLength": 1, "maxLength": 2048,
                                 "description": "The memory's id (UUID) or mem:// URI."}},
                     ("memory",)), subject=False),
    _action_tool("update", "update", "Change one memory"),
    ToolSpec("forget", f"Forget one memory ({ACTION_DESCRIPTIONS['remove']}), or erase "
             "everything about the subject: erase_subject true with confirm set to the "
             "subject's name (irreversible).", _FORGET, "remove"),
    ToolSpec("context", "The context for answering a query, within a token budget: the "
             "subject's rules, the most relevant memories and (with session) the session's "
             "recent turns, as chat messages ready to give a model, with the ids used.",
             _object({"query": _shared("query"),
                      "budget_tokens": {"type": "integer", "minimum": 50,
                                        "maximum": MAX_BUDGET_TOKENS,
                                        "description": "The most tokens the messages may "
                                                       "cost (default 2000)."},
                      "k": _shared("k"),
                      "session": {"type": "string", "maxLength": 256,
                                  "description": "The conversation's session id, to include "
                                                 "its recent turns and summary."}},
                     ("query",))),
    ToolSpec("add_document", "Ingest a text (Markdown or plain) as a document: chunked, "
             "embedded and searchable with ask; a document of the same id is replaced.",
             _object({"document_id": {"type": "string", "minLength": 1, "maxLength": 512,
                                      "description": "The document's id (a name or URL, unique "
                                                     "in this tenant)."},
                      "text": {"type": "string", "minLength": 1,
                               "maxLength": MAX_DOCUMENT_CHARS,
                               "description": "The document's text."},
                      "title": {"type": "string", "maxLength": 512,
                                "description": "Its title."},
                      "format": {"type": "string", "enum": ["markdown", "text"],
                                 "description": "markdown (default) or text."},
                      "category": _shared("category"), "tags": _shared("tags")},
                     ("document_id", "text"))),
    ToolSpec("ask", "Answer a question from the ingested documents (and optionally the "
             "memories), citing the passages used as [n]; without a language model "
             "configured on the server, returns the best passages.",
             _object({"question": {"type": "string", "minLength": 1,
                                   "maxLength": MAX_TOOL_TEXT,
                                   "description": "The question."},
                      "k": _shared("k"),
                      "include_memories": {"type": "boolean",
                                           "description": "Also search the memories (default "
                                                          "false: documents only)."}},
                     ("question",))),
)
_BY_NAME = {t.name: t for t in TOOLS}


def input_schema(spec: ToolSpec, *, confined: bool) -> dict[str, Any]:
    """The tool's input schema on a server confined to one subject (``confined``) or not."""
    schema = copy.deepcopy(spec.schema)
    if spec.subject and not confined:
        schema["properties"]["subject"] = copy.deepcopy(SUBJECT_PROPERTY)
    return schema


def tool_specs() -> tuple[ToolSpec, ...]:
    return TOOLS


def check_arguments(name: str, arguments: Any, *, confined: bool) -> tuple[ToolSpec, dict]:
    """The tool and its arguments, validated against its input schema; InvalidInput (naming
    the argument) for an unknown tool or arguments the schema refuses."""
    spec = _BY_NAME.get(name)
    if spec is None:
        raise InvalidInput(f"unknown tool {str(name)[:60]!r}; tools: "
                           f"{', '.join(_BY_NAME)}")
    args = {} if arguments is None else arguments
    if not isinstance(args, dict):
        raise InvalidInput("the arguments must be a JSON object")
    schema = input_schema(spec, confined=confined)
    if confined and spec.subject and "subject" in args:
        raise InvalidInput("this server is confined to one subject: the subject argument is "
                           "not accepted")
    error = best_match(Draft202012Validator(schema, format_checker=FormatChecker())
                       .iter_errors(args))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path)
        message = error.message if len(error.message) <= 300 else error.message[:299] + "…"
        raise InvalidInput(f"{name}: {where + ': ' if where else ''}{message}")
    return spec, args
