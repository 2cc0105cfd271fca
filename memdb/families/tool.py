"""The memory tool for function calling: one JSON-schema tool an agent's model calls to add,
search, update, remove, summarize, forget and consolidate its memories, and to remember a
conversation turn without waiting (the turn kept at once, its facts extracted by a job).

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

from ..core import bridge
from ..core.errors import InvalidInput, MemdbError
from ..core.ops import catalog as _ops
from ..core.ops import remember as _remember_ops
from ..write.extract import score_importance

__all__ = ["TOOL_NAME", "TOOL_DESCRIPTION", "TOOL_PARAMETERS", "ACTIONS", "ACTION_DESCRIPTIONS",
           "OPERATIONS", "FIXED", "PROPERTIES", "STORE_ADVICE", "action_parameters", "tool_schema",
           "hit_result", "MemoryTool"]

log = logging.getLogger(__name__)

TOOL_NAME = "memory"
MAX_ARGUMENTS_BYTES = 64_000  # the raw arguments string
MAX_RESULT_CHARS = 400  # each memory's content in a result is cut to this

# Each action is a declared operation (memdb.core.ops.catalog, memdb.core.ops.remember): its
# parameters, ranges, defaults and help come from there, as do the MCP tools'. The action
# takes the operation's parameters but the subject (the host binds the tool to one) and those
# it fixes (FIXED).
OPERATIONS = {"add": _ops.ADD, "search": _ops.SEARCH, "update": _ops.UPDATE,
              "remove": _ops.DELETE, "summary": _ops.SUMMARY, "forget": _ops.FORGET_LOW,
              "consolidate": _ops.CONSOLIDATE, "remember": _remember_ops.REMEMBER}
ACTIONS = tuple(OPERATIONS)
# Declared parameters an action sets itself rather than offering them to the model: remember
# never waits (an agent loop must not hold for the extraction; the turn is kept and searchable
# at once, a job extracts its facts), and a dry run needs the wait.
FIXED: dict[str, dict[str, Any]] = {"remember": {"wait": False, "dry_run": False}}
_ALLOWED: dict[str, tuple[str, ...]] = {
    action: tuple(p.name for p in op.params
                  if p.name != "subject" and p.name not in FIXED.get(action, {}))
    for action, op in OPERATIONS.items()}


def _brief(action: str) -> str:
    """What an action takes, in a few words: its parameters and their ranges."""
    op = OPERATIONS[action]
    parts = []
    for param in op.select(_ALLOWED[action]):
        text = param.name if param.required else f"optional {param.name}"
        if param.minimum is not None and param.maximum is not None:
            text += f" {param.minimum:g}-{param.maximum:g}"
        parts.append(text)
    text = f"{op.summary.split(':')[0].split('(')[0].strip().rstrip('.')}: {', '.join(parts)}"
    if FIXED.get(action, {}).get("wait") is False:
        text += "; returns at once with a job_id, the turn searchable at once"
    return text


# What each action does and takes (the OpenAI tool's description and the MCP tools').
ACTION_DESCRIPTIONS: dict[str, str] = {action: _brief(action) for action in ACTIONS}
STORE_ADVICE = "Store only what will matter in future conversations; never store secrets."

TOOL_DESCRIPTION = (
    "Long-term memory about the user and the work. Actions: "
    + "; ".join(f"{a} ({ACTION_DESCRIPTIONS[a]})" for a in ACTIONS) + ". " + STORE_ADVICE)


def _flat_properties() -> dict[str, Any]:
    """One property per parameter name over all actions (the flat object every function-calling
    API takes): the widest range of the actions that share it, and a description naming the
    actions and what each means by it (each action then checks its own range)."""
    out: dict[str, Any] = {"action": {"type": "string", "enum": list(ACTIONS),
                                      "description": "What to do."}}
    users: dict[str, list[tuple[str, Any]]] = {}
    for action in ACTIONS:
        for param in OPERATIONS[action].select(_ALLOWED[action]):
            users.setdefault(param.name, []).append((action, param))
    for name, uses in users.items():
        schema = uses[0][1].schema()
        lows = [p.minimum for _, p in uses if p.minimum is not None]
        highs = [p.maximum for _, p in uses if p.maximum is not None]
        if lows:
            schema["minimum"] = min(lows)
        if highs:
            schema["maximum"] = max(highs)
        texts: dict[str, list[str]] = {}
        for action, param in uses:
            texts.setdefault(param.describe(), []).append(action)
        schema["description"] = " ".join(f"{'/'.join(acts)}: {text}"
                                         for text, acts in texts.items())
        out[name] = schema
    return out


TOOL_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": _flat_properties(),
    "required": ["action"],
    "additionalProperties": False,
}
PROPERTIES: dict[str, Any] = TOOL_PARAMETERS["properties"]


def action_parameters(action: str) -> dict[str, Any]:
    """The JSON Schema of one action's arguments (a fresh copy), from its declared operation:
    only the parameters the action takes, with their own ranges and help."""
    if action not in ACTIONS:
        raise InvalidInput(f"unknown action {action!r}; one of {', '.join(ACTIONS)}")
    return OPERATIONS[action].schema(_ALLOWED[action])


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


def _short(text: str) -> str:
    return text if len(text) <= MAX_RESULT_CHARS else text[:MAX_RESULT_CHARS - 1] + "…"


def hit_result(hit: Any) -> dict[str, Any]:
    """One search hit as the tool (and the MCP search tool) returns it: compact, the content
    cut to MAX_RESULT_CHARS; ``modality`` (image...) for a perceptual memory."""
    out = {"id": str(hit.memory.id), "content": _short(hit.memory.content),
           "category": hit.memory.category.value, "kind": hit.memory.kind.value,
           "importance": round(hit.memory.importance, 2), "score": round(hit.score, 4)}
    if hit.memory.modality is not None:  # a perceptual memory: the text found in an image
        out["modality"] = hit.memory.modality
    return out


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

    @bridge.no_io
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
            rest = {k: v for k, v in args.items() if k != "action"}
            args = OPERATIONS[action].check(rest, _ALLOWED[action])
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

    # -- actions: each takes its checked arguments (defaults filled in) ---------------------
    @staticmethod
    def _fields(args: dict[str, Any]) -> dict[str, Any]:
        return {key: args[key] for key in ("content", "category", "importance", "tags")
                if key in args}

    def _source(self, args: dict[str, Any], provenance: str | None,
                call_id: str | None) -> dict[str, Any]:
        return {"source_type": args.get("source") or "user_statement",
                "source_id": (provenance or (f"tool-call:{call_id}" if call_id else None))}

    @staticmethod
    def _reason(args: dict[str, Any], action: str) -> str:
        text = args.get("reason")
        return f"memory tool {action}" + (f": {text}" if text else "")

    def _add(self, args: dict[str, Any], provenance: str | None,
             call_id: str | None) -> dict[str, Any]:
        fields = self._fields(args)
        kind = args["kind"]
        if not fields["content"].strip():
            raise ToolError("content is empty")
        if "importance" not in fields:  # scored like remember() when the model gives none
            fields["importance"] = score_importance(fields["content"],
                                                    rule=kind == "procedural")
        item: dict[str, Any] = {**fields, "kind": kind, "subject": self.subject,
                                "agent": self.agent, "created_by": "memdb.tool",
                                **self._source(args, provenance, call_id)}
        if kind == "working":
            if "session_id" not in args:
                raise ToolError("add with kind working needs session_id")
            item.update(scope="session", session_id=args["session_id"])
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
        flt: dict[str, Any] = {"subject": self.subject}
        if "category" in args:
            flt["category"] = args["category"]
        hits = self.store.search(args["query"], args["k"], **flt)
        return {"results": [hit_result(h) for h in hits]}

    def _owned(self, memory_id: UUID) -> None:
        """NotFound unless the memory is current and this tool's subject's."""
        from ..core.errors import NotFound

        memory = self.store.get(memory_id)
        if memory.subject != self.subject or memory.superseded_by is not None \
                or memory.valid_to is not None:
            raise NotFound(f"no current memory {memory_id} for this user")

    def _update(self, args: dict[str, Any], provenance: str | None,
                call_id: str | None) -> dict[str, Any]:
        memory_id = UUID(args["id"])
        changes = self._fields(args)
        if "content" in changes and not changes["content"].strip():
            raise ToolError("content is empty")
        if "content" in changes or "source" in args:
            changes.update(self._source(args, provenance, call_id))
        if not changes:
            raise ToolError("update needs at least one of content, category, importance, tags")
        self._owned(memory_id)
        memory = self.store.update(memory_id, reason=self._reason(args, "update"), **changes)
        return {"id": str(memory.id), "version": memory.version}

    def _remove(self, args: dict[str, Any], provenance: str | None,
                call_id: str | None) -> dict[str, Any]:
        memory_id = UUID(args["id"])
        reason = self._reason(args, "remove")
        self._owned(memory_id)
        self.store.delete(memory_id, reason=reason)
        return {"id": str(memory_id), "removed": True}

    def _summary(self, args: dict[str, Any], provenance: str | None,
                 call_id: str | None) -> dict[str, Any]:
        return self.store.subjects.summary(subject=self.subject, k=args["k"],
                                           max_chars=MAX_RESULT_CHARS)

    def _forget(self, args: dict[str, Any], provenance: str | None,
                call_id: str | None) -> dict[str, Any]:
        threshold, dry_run = args["threshold"], args["dry_run"]
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

    def _remember(self, args: dict[str, Any], provenance: str | None,
                  call_id: str | None) -> dict[str, Any]:
        """The turn kept as said (a memory, searchable at once) and a ``remember`` job
        extracting its facts (:mod:`memdb.families.jobs.remember`); the result names the job. The
        turn's id is the model's ``turn_id``, else a hash of the session and the text (not the
        host's turn id: two calls in one turn are two turns, two jobs)."""
        job = self.store.remember(args["text"], session_id=args.get("session_id"),
                                  turn_id=args.get("turn_id"), subject=self.subject,
                                  **FIXED["remember"])
        return job.to_dict()

    def _consolidate(self, args: dict[str, Any], provenance: str | None,
                     call_id: str | None) -> dict[str, Any]:
        moved = self.store.sessions.consolidate(args["session_id"], threshold=args["threshold"],
                                                subject=self.subject, dry_run=args["dry_run"])
        return {"consolidated": len(moved), "dry_run": args["dry_run"],
                "ids": [str(getattr(c, "id", "")) for c in moved[:20]]}
