"""``remember`` (extract facts from a conversation turn, :mod:`memdb.write.remember`), declared once
like the operations of :mod:`memdb.core.ops.catalog`: the CLI options of ``memdb remember``, the
HTTP body of ``POST /v1/remember``, the MCP tool ``remember_turn``, the memory tool's action
``remember`` (never waiting: :data:`memdb.families.tool.FIXED`) and the docs' tables."""

from __future__ import annotations

from ._operation import Operation
from ._param import REQUIRED, Param

__all__ = ["REMEMBER", "REMEMBER_OPERATIONS", "MAX_TURN_CHARS"]

MAX_TURN_CHARS = 20_000  # a turn's text (memdb.write.remember refuses longer ones)

TEXT = Param("text", "str", "What the user said in this turn (the turn's text).", REQUIRED,
             min_length=1, max_length=MAX_TURN_CHARS, argument=True)
WAIT = Param("wait", "bool", "Wait for the extraction (true), or return at once (false): "
             "the turn is kept as said, searchable at once, and a background job extracts "
             "and reconciles its facts; the result is the job's id (follow it with "
             "store.jobs.wait, `memdb jobs wait`, GET /v1/jobs/{job_id} or the MCP job tool).",
             True, flags=("--wait/--no-wait",))

REMEMBER = Operation(
    "remember", "Extract the facts worth remembering from a conversation turn (preferences, "
    "entities, events, rules), reconcile them with what is already known (add, update or "
    "nothing) and write them through the write gate.",
    (TEXT,
     Param("session_id", "str", "The session the turn belongs to.", min_length=1,
           max_length=256, flags=("--session",)),
     Param("turn_id", "str", "The turn's id, recorded as the source_id of what the user said "
           "(default: a hash of the session and the text).", min_length=1, max_length=256),
     Param("subject", "str", "Whose memories (default: default).", min_length=1,
           max_length=256),
     Param("dry_run", "bool", "Only show the decisions: write nothing (needs wait).", False),
     WAIT),
    scope="subject",
    result="wait: turn_id, path, decisions; no wait: job_id, turn_id, memory_id (the turn "
           "kept as said), state",
    errors=("InvalidInput", "Rejected", "Forbidden", "Conflict", "DatabaseUnavailable"),
    doors=(("cli", "remember"), ("http", "POST /v1/remember"), ("mcp", "remember_turn"),
           ("tool", "remember")))

REMEMBER_OPERATIONS: tuple[Operation, ...] = (REMEMBER,)
