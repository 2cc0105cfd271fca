"""The memory tool for function calling: one JSON-schema tool an agent's model calls to add,
search, update, remove, summarize, forget and consolidate its memories.

:data:`TOOL_PARAMETERS` is a plain JSON Schema (draft 2020-12 subset every function-calling
API accepts: one flat object, an ``action`` enum, no ``oneOf``); :func:`tool_schema` wraps it
for OpenAI (``{"type": "function", "function": ...}``), Anthropic (``input_schema``) or as
the bare schema for other frameworks. :class:`MemoryTool` executes a model's call against a
:class:`~memdb.MemoryStore`:

>>> tool = store.tool(subject="alice", source_id="turn-42")
>>> reply = client.chat.completions.create(model=..., messages=msgs, tools=[tool.schema()])
>>> for call in reply.choices[0].message.tool_calls or ():
...     msgs.append(tool.tool_message(call))      # {"role": "tool", "tool_call_id", "content"}

Safety: every argument is validated here (types, ranges, lengths, UUIDs, enums, unknown
keys) before the store sees it; the model never chooses the subject or tenant (the tool is
bound to them); each result is a compact JSON string, and every failure (bad JSON, bad
arguments, the write gate, a missing memory, a database error) comes back as
``{"ok": false, "error": {"type", "message"}}``, never as an exception into the agent loop.
Writes through the tool pass the store's write gate with provenance: ``source_type``
user_statement (what the user said; needs the host's ``source_id``, the turn id) or
model_inference (the model's own conclusion: stored as a hypothesis), ``source_id`` the
host's turn id or else the tool call's id.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any
from uuid import UUID

from . import _bridge
from ._extract import score_importance
from .errors import InvalidInput, MemdbError
from .models import Category, Kind

__all__ = ["TOOL_NAME", "TOOL_DESCRIPTION", "TOOL_PARAMETERS", "ACTIONS", "ACTION_DESCRIPTIONS",
           "PROPERTIES", "STORE_ADVICE", "action_parameters", "tool_schema", "MemoryTool"]

log = logging.getLogger(__name__)

TOOL_NAME = "memory"
ACTIONS = ("add", "search", "update", "remove", "summary", "forget", "consolidate")
MAX_TOOL_TEXT = 4000  # characters of content/query a model may send in one call
MAX_ARGUMENTS_BYTES = 64_000  # the raw arguments string
MAX_RESULT_CHARS = 400  # each memory's content in a result is cut to this
_SOURCES = ("user_statement", "model_inference")

# What each action does and takes: one source for the OpenAI tool's description (below) and
# the MCP server's tools (memdb.mcp), which share the parameter schemas too (action_parameters).
ACTION_DESCRIPTIONS: dict[str, str] = {
    "add": "store a durable fact, preference, rule or event: content, optional category, kind, "
           "importance 0-1, tags, source 'user_statement' if the user said it or "
           "'model_inference' if you concluded it",
    "search": "query, optional k 1-20, category",
    "update": "id, and content/importance/category/tags to change; reason",
    "remove": "id; reason",
    "summary": "counts by kind and category and the most important memories; optional k",
    "forget": "drop memories with importance below threshold 0-0.5; dry_run to preview",
    "consolidate": "session_id: keep the session's important working memories long-term",
}
STORE_ADVICE = "Store only what will matter in future conversations; never store secrets."

TOOL_DESCRIPTION = (
    "Long-term memory about the user and the work. Actions: "
    + "; ".join(f"{a} ({ACTION_DESCRIPTIONS[a]})" for a in ACTIONS) + ". " + STORE_ADVICE)

TOOL_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(ACTIONS), "description": "What to do."},
        "content": {"type": "string", "maxLength": MAX_TOOL_TEXT,
                    "description": "add/update: the memory, one self-contained statement."},
        "query": {"type": "string", "maxLength": MAX_TOOL_TEXT,
                  "description": "search: what to look for."},
        "id": {"type": "string", "format": "uuid",
               "description": "update/remove: the memory id from a search or summary result."},
        "category": {"type": "string", "enum": [c.value for c in Category],
                     "description": "add/update: the memory's category; search: only this one."},
        "kind": {"type": "string", "enum": [k.value for k in Kind if k != Kind.WORKING]
                 + ["working"], "description": "add: semantic (facts, preferences; default), "
                 "episodic (events), procedural (rules), working (this session only)."},
        "importance": {"type": "number", "minimum": 0, "maximum": 1,
                       "description": "add/update: how much it matters, 0-1 (add without "
                                      "it: scored from the text)."},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 64}, "maxItems": 10,
                 "description": "add/update: short labels."},
        "source": {"type": "string", "enum": list(_SOURCES),
                   "description": "add/update: who asserted it (default user_statement)."},
        "k": {"type": "integer", "minimum": 1, "maximum": 20,
              "description": "search/summary: how many memories to return (default 5)."},
        "threshold": {"type": "number", "minimum": 0, "maximum": 0.5,
                      "description": "forget: importance below this is forgotten (default 0.1);"
                                     " consolidate: importance at least this is kept (0.6)."},
        "session_id": {"type": "string", "maxLength": 256,
                       "description": "consolidate: the session; add with kind working: its "
                                      "session."},
        "dry_run": {"type": "boolean", "description": "forget/consolidate: only preview."},
        "reason": {"type": "string", "maxLength": 500,
                   "description": "Why (recorded in the memory's history)."},
    },
    "required": ["action"],
    "additionalProperties": False,
}

# Which arguments each action accepts (besides "action").
_ALLOWED: dict[str, frozenset[str]] = {
    "add": frozenset({"content", "category", "kind", "importance", "tags", "source",
                      "session_id", "reason"}),
    "search": frozenset({"query", "k", "category"}),
    "update": frozenset({"id", "content", "category", "importance", "tags", "source",
                         "reason"}),
    "remove": frozenset({"id", "reason"}),
    "summary": frozenset({"k"}),
    "forget": frozenset({"threshold", "dry_run"}),
    "consolidate": frozenset({"session_id", "threshold", "dry_run"}),
}
_REQUIRED = {"add": ("content",), "search": ("query",), "update": ("id",), "remove": ("id",),
             "consolidate": ("session_id",)}
PROPERTIES: dict[str, Any] = TOOL_PARAMETERS["properties"]


def action_parameters(action: str) -> dict[str, Any]:
    """The JSON Schema of one action's arguments (a fresh copy): the same property schemas
    as :data:`TOOL_PARAMETERS`, only those the action takes, its required ones required (the
    MCP server's tools are built from these)."""
    if action not in ACTIONS:
        raise InvalidInput(f"unknown action {action!r}; one of {', '.join(ACTIONS)}")
    props = {k: json.loads(json.dumps(PROPERTIES[k])) for k in PROPERTIES
             if k in _ALLOWED[action]}
    return {"type": "object", "properties": props, "required": list(_REQUIRED.get(action, ())),
            "additionalProperties": False}


def tool_schema(format: str = "openai", *, name: str = TOOL_NAME) -> dict[str, Any]:
    """The tool definition: ``"openai"`` (Chat Completions ``tools=[...]`` item),
    ``"anthropic"`` (``name``/``description``/``input_schema``), ``"function"`` (the bare
    ``name``/``description``/``parameters`` object: OpenAI Responses, Gemini, most agent
    frameworks) or ``"json_schema"`` (only the parameters schema)."""
    params = json.loads(json.dumps(TOOL_PARAMETERS))  # a deep copy the caller may change
    function = {"name": name, "description": TOOL_DESCRIPTION, "parameters": params}
    if format == "openai":
        return {"type": "function", "function": function}
    if format == "function":
        return function
    if format == "anthropic":
        return {"name": name, "description": TOOL_DESCRIPTION, "input_schema": params}
    if format == "json_schema":
        return params
    raise InvalidInput("format must be one of: openai, function, anthropic, json_schema")


class ToolError(InvalidInput):
    """A tool call's arguments are unusable (reported to the model, not raised)."""


def _call_parts(tool_call: Any) -> tuple[str | None, str | None, Any]:
    """(call id, function name, raw arguments) of an OpenAI tool_call object or a dict
    (``{"id", "function": {"name", "arguments"}}`` or ``{"name", "arguments"|"input"}``)."""
    if isinstance(tool_call, Mapping):
        call_id = tool_call.get("id")
        function = tool_call.get("function", tool_call)
        if not isinstance(function, Mapping):
            raise ToolError("tool_call.function must be an object")
        args = function.get("arguments", function.get("input"))
        return call_id, function.get("name"), args
    function = getattr(tool_call, "function", tool_call)
    return (getattr(tool_call, "id", None), getattr(function, "name", None),
            getattr(function, "arguments", getattr(function, "input", None)))


def _text(args: dict[str, Any], key: str, limit: int = MAX_TOOL_TEXT) -> str:
    value = args[key]
    if not isinstance(value, str):
        raise ToolError(f"{key} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ToolError(f"{key} is empty")
    if len(value) > limit:
        raise ToolError(f"{key} is {len(value)} characters; the tool accepts at most {limit}")
    if "\x00" in value:
        raise ToolError(f"{key} contains a NUL character")
    return value


def _number(args: dict[str, Any], key: str, low: float, high: float) -> float:
    value = args[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise ToolError(f"{key} must be a number, got {type(value).__name__}")
    if not low <= value <= high:
        raise ToolError(f"{key} must be between {low:g} and {high:g}, got {value!r}")
    return float(value)


def _integer(args: dict[str, Any], key: str, low: int, high: int) -> int:
    value = args[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"{key} must be an integer, got {type(value).__name__}")
    if not low <= value <= high:
        raise ToolError(f"{key} must be between {low} and {high}, got {value}")
    return value


def _enum(args: dict[str, Any], key: str, allowed: list[str] | tuple[str, ...]) -> str:
    value = args[key]
    if not isinstance(value, str) or value not in allowed:
        shown = value if isinstance(value, str) else type(value).__name__
        raise ToolError(f"{key} must be one of {', '.join(allowed)}; got {shown[:60]!r}")
    return value


def _memory_id(args: dict[str, Any]) -> UUID:
    value = args["id"]
    if not isinstance(value, str) or len(value) > 64:
        raise ToolError("id must be a memory id (a UUID string)")
    try:
        return UUID(value)
    except ValueError:
        raise ToolError(f"id is not a memory id (UUID): {value[:64]!r}") from None


def _tags(args: dict[str, Any]) -> list[str]:
    value = args["tags"]
    if not isinstance(value, list) or len(value) > 10 or not all(
            isinstance(t, str) and t.strip() and len(t) <= 64 for t in value):
        raise ToolError("tags must be a list of at most 10 non-empty strings of up to 64 "
                        "characters")
    return value


def _short(text: str) -> str:
    return text if len(text) <= MAX_RESULT_CHARS else text[:MAX_RESULT_CHARS - 1] + "…"


class MemoryTool:
    """Executes the memory tool's calls against one store, bound to one subject.

    ``subject``: whose memories the model reads and writes (default: the store's subject,
    else "default"); the model cannot change it. ``source_id``: the current turn's id (set it
    per turn, or pass it to :meth:`dispatch`); writes the model marks ``user_statement`` need
    it (or fall back to the call id). ``allow``: the actions this agent may use (default all;
    e.g. drop "forget" for untrusted agents). ``agent``: recorded on written memories.
    """

    def __init__(self, store: Any, *, subject: str | None = None,
                 source_id: str | None = None, agent: str | None = None,
                 allow: tuple[str, ...] | list[str] = ACTIONS, name: str = TOOL_NAME) -> None:
        unknown = set(allow) - set(ACTIONS)
        if unknown:
            raise InvalidInput(f"unknown tool actions: {sorted(unknown)}")
        self.store = store
        self.subject = subject or getattr(store, "subject", None) or "default"
        self.source_id = source_id
        self.agent = agent
        self.allow = tuple(a for a in ACTIONS if a in allow)
        self.name = name

    @_bridge.no_io
    def schema(self, format: str = "openai") -> dict[str, Any]:
        """The tool definition (see :func:`tool_schema`), listing only the allowed actions."""
        schema = tool_schema(format, name=self.name)
        params = schema.get("function", schema).get("parameters") or schema.get(
            "input_schema") or schema
        params["properties"]["action"]["enum"] = list(self.allow)
        return schema

    # -- entry points ---------------------------------------------------------------------
    def dispatch(self, tool_call: Any, *, source_id: str | None = None) -> str:
        """Execute one tool call; the compact JSON result string for the model. Never
        raises: every failure is ``{"ok": false, "error": {"type", "message"}}``."""
        return json.dumps(self.run(tool_call, source_id=source_id), ensure_ascii=False,
                          separators=(",", ":"), default=str)

    def tool_message(self, tool_call: Any, *, source_id: str | None = None) -> dict[str, str]:
        """The ``{"role": "tool", "tool_call_id", "content"}`` message answering the call."""
        try:
            call_id = _call_parts(tool_call)[0]
        except ToolError:
            call_id = None
        return {"role": "tool", "tool_call_id": str(call_id or ""),
                "content": self.dispatch(tool_call, source_id=source_id)}

    def run(self, tool_call: Any, *, source_id: str | None = None) -> dict[str, Any]:
        """Like :meth:`dispatch`, returning the result as a dict."""
        try:
            call_id, name, raw = _call_parts(tool_call)
            if name != self.name:
                raise ToolError(f"unknown tool {str(name)[:60]!r}; this tool is {self.name!r}")
            args = self._arguments(raw)
            action = args.get("action")
            if action not in ACTIONS:
                raise ToolError(f"unknown action {str(action)[:60]!r}; use one of "
                                f"{', '.join(self.allow)}")
            if action not in self.allow:
                raise ToolError(f"action {action!r} is not allowed for this agent")
            extra = set(args) - _ALLOWED[action] - {"action"}
            if extra:
                raise ToolError(f"{action} does not take {', '.join(sorted(extra))}")
            for key in _REQUIRED.get(action, ()):
                if args.get(key) is None:
                    raise ToolError(f"{action} needs {key}")
            provenance = source_id or self.source_id
            result = getattr(self, f"_{action}")(args, provenance, call_id)
            return {"ok": True, "action": action, **result}
        except MemdbError as exc:
            return {"ok": False, "error": {"type": type(exc).__name__ if not isinstance(
                exc, ToolError) else "InvalidInput", "message": str(exc)[:500],
                **({"reasons": list(exc.reasons)} if getattr(exc, "reasons", None) else {})}}
        except Exception as exc:  # noqa: BLE001 (an agent loop must never see a crash)
            log.exception("memory tool call failed")
            return {"ok": False, "error": {"type": "InternalError",
                                           "message": type(exc).__name__}}

    @staticmethod
    def _arguments(raw: Any) -> dict[str, Any]:
        if raw is None or raw == "":
            raise ToolError("the call has no arguments")
        if isinstance(raw, str):
            if len(raw.encode("utf-8", "surrogatepass")) > MAX_ARGUMENTS_BYTES:
                raise ToolError(f"the arguments are larger than {MAX_ARGUMENTS_BYTES} bytes")
            try:
                raw = json.loads(raw)
            except (json.JSONDecodeError, RecursionError) as exc:
                raise ToolError(f"the arguments are not valid JSON: {exc}"[:200]) from None
        if not isinstance(raw, dict):
            raise ToolError("the arguments must be a JSON object")
        return raw

    # -- actions: each returns the result's fields ----------------------------------------
    def _fields(self, args: dict[str, Any]) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        if "content" in args:
            fields["content"] = _text(args, "content")
        if "category" in args:
            fields["category"] = _enum(args, "category", [c.value for c in Category])
        if "importance" in args:
            fields["importance"] = _number(args, "importance", 0, 1)
        if "tags" in args:
            fields["tags"] = _tags(args)
        return fields

    def _source(self, args: dict[str, Any], provenance: str | None,
                call_id: str | None) -> dict[str, Any]:
        source = _enum(args, "source", _SOURCES) if "source" in args else "user_statement"
        return {"source_type": source,
                "source_id": (provenance or (f"tool-call:{call_id}" if call_id else None))}

    def _reason(self, args: dict[str, Any], action: str) -> str:
        text = _text(args, "reason", 500) if "reason" in args else None
        return f"memory tool {action}" + (f": {text}" if text else "")

    def _add(self, args: dict[str, Any], provenance: str | None,
             call_id: str | None) -> dict[str, Any]:
        fields = self._fields(args)
        kind = _enum(args, "kind", [k.value for k in Kind]) if "kind" in args else "semantic"
        if "importance" not in fields:  # scored like remember() when the model gives none
            fields["importance"] = score_importance(fields["content"],
                                                    rule=kind == "procedural")
        item: dict[str, Any] = {**fields, "kind": kind, "subject": self.subject,
                                "agent": self.agent, "created_by": "memdb.tool",
                                **self._source(args, provenance, call_id)}
        if kind == "working":
            if "session_id" not in args:
                raise ToolError("add with kind working needs session_id")
            item.update(scope="session", session_id=_text(args, "session_id", 256))
        elif "session_id" in args:
            raise ToolError("session_id is only for kind working")
        result = self.store.add_many([item], reason=self._reason(args, "add"))[0]
        out: dict[str, Any] = {"outcome": result.outcome,
                               "id": None if result.id is None else str(result.id)}
        if result.rejected:
            return {**out, "ok": False, "error": {"type": "Rejected", "message":
                    "the write gate refused the memory", "reasons": list(result.reasons)}}
        if result.superseded_id:
            out["superseded_id"] = str(result.superseded_id)
        if result.merged_into:
            out["merged_into"] = str(result.merged_into)
        return out

    def _search(self, args: dict[str, Any], provenance: str | None,
                call_id: str | None) -> dict[str, Any]:
        query = _text(args, "query")
        k = _integer(args, "k", 1, 20) if "k" in args else 5
        flt: dict[str, Any] = {"subject": self.subject}
        if "category" in args:
            flt["category"] = _enum(args, "category", [c.value for c in Category])
        hits = self.store.search(query, k, **flt)
        return {"results": [{"id": str(h.memory.id), "content": _short(h.memory.content),
                             "category": h.memory.category.value, "kind": h.memory.kind.value,
                             "importance": round(h.memory.importance, 2),
                             "score": round(h.score, 4)} for h in hits]}

    def _owned(self, memory_id: UUID) -> None:
        """NotFound unless the memory is current and this tool's subject's."""
        from .errors import NotFound

        memory = self.store.get(memory_id)
        if memory.subject != self.subject or memory.superseded_by is not None \
                or memory.valid_to is not None:
            raise NotFound(f"no current memory {memory_id} for this user")

    def _update(self, args: dict[str, Any], provenance: str | None,
                call_id: str | None) -> dict[str, Any]:
        memory_id = _memory_id(args)
        changes = self._fields(args)
        if "content" in changes or "source" in args:
            changes.update(self._source(args, provenance, call_id))
        if not changes:
            raise ToolError("update needs at least one of content, category, importance, tags")
        self._owned(memory_id)
        memory = self.store.update(memory_id, reason=self._reason(args, "update"), **changes)
        return {"id": str(memory.id), "version": memory.version}

    def _remove(self, args: dict[str, Any], provenance: str | None,
                call_id: str | None) -> dict[str, Any]:
        memory_id = _memory_id(args)
        reason = self._reason(args, "remove")
        self._owned(memory_id)
        self.store.delete(memory_id, reason=reason)
        return {"id": str(memory_id), "removed": True}

    def _summary(self, args: dict[str, Any], provenance: str | None,
                 call_id: str | None) -> dict[str, Any]:
        k = _integer(args, "k", 1, 20) if "k" in args else 5
        return self.store.subjects.summary(subject=self.subject, k=k, max_chars=MAX_RESULT_CHARS)

    def _forget(self, args: dict[str, Any], provenance: str | None,
                call_id: str | None) -> dict[str, Any]:
        threshold = _number(args, "threshold", 0, 0.5) if "threshold" in args else 0.1
        dry_run = self._flag(args)
        # the SQL selection (never category system) is tenant-wide: keep this subject's
        candidates = set(self.store.maintenance.forget_by_importance(
            threshold, limit=100_000, dry_run=True))
        mine = [m.id for m in self.store.list(subject=self.subject, limit=100_000)
                if m.id in candidates][:100]
        if not dry_run:
            for memory_id in mine:
                self.store.delete(memory_id, reason=f"memory tool forget: importance < "
                                                    f"{threshold:g}")
        return {"forgotten" if not dry_run else "would_forget": len(mine),
                "ids": [str(i) for i in mine[:20]], "dry_run": dry_run}

    def _consolidate(self, args: dict[str, Any], provenance: str | None,
                     call_id: str | None) -> dict[str, Any]:
        session = _text(args, "session_id", 256)
        threshold = _number(args, "threshold", 0, 1) if "threshold" in args else 0.6
        moved = self.store.sessions.consolidate(session, threshold=threshold,
                                                subject=self.subject, dry_run=self._flag(args))
        return {"consolidated": len(moved), "dry_run": self._flag(args),
                "ids": [str(getattr(c, "id", "")) for c in moved[:20]]}

    @staticmethod
    def _flag(args: dict[str, Any]) -> bool:
        value = args.get("dry_run", False)
        if not isinstance(value, bool):
            raise ToolError("dry_run must be true or false")
        return value
