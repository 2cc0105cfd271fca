"""Short-term and working memory per session, in PostgreSQL (``memdb.sessions``,
``memdb.session_messages``; revision 0007).

* **Conversation buffer**: :meth:`Sessions.append` appends a turn (role, content, its
  token count). A sliding window keeps the newest turns within ``max_tokens`` and
  ``max_messages`` (:class:`SessionWindow`); turns that scroll out are folded into the session's
  **running summary** (the previous summary + the scrolled-out turns, summarized by the
  configured LLM, else extractively offline, see :mod:`memdb.families.summarize`) and deleted. The
  newest turn always stays in the window.
* **Working state**: the structured JSON of the current task (:class:`WorkingState`: goal,
  constraints, steps done, plan, budget, notes), written with optimistic concurrency: every
  write names the version it read, and a stale version raises
  :class:`~memdb.core.errors.Conflict`, so two workers cannot silently overwrite each other.

Both tables carry tenant and subject under row-level security, so subject isolation applies
and ``store.subjects.forget`` erases them. The window arithmetic, the fold
and the versioned write are SQL functions (``sql/functions/25x_session_*.sql``).

The family also writes a session's working memories on: :meth:`Sessions.summarize` (one
episodic summary memory) and :meth:`Sessions.consolidate` (working -> episodic).

>>> store.sessions.append("s1", "user", "我们用 PostgreSQL 18。")       # doctest: +SKIP
>>> st = store.sessions.get_state("s1")                                 # doctest: +SKIP
>>> store.sessions.set_state("s1", st.replace(goal="ship v1"),
...                          expected_version=st.version)            # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from ..core import sql
from ..core import validate as v
from ..core.errors import Conflict, InvalidInput, NotFound
from ..core.family import Family
from ..core.lifecycle_models import Consolidated, SessionSummary
from ..core.llm import ChatLLM
from ..core.tokens import count_tokens
from .lifecycle import SUMMARY_TAG, write_direct
from .summarize import summarize

__all__ = ["Sessions", "SessionWindow", "Message", "SessionView", "WorkingState",
           "AppendResult", "ROLES", "DEFAULT_WINDOW"]

ROLES = ("system", "user", "assistant", "tool")
MAX_MESSAGE_CHARS = 65536
_FROM_ENV: Any = object()  # llm=... default: the store's LLM (MEMDB_LLM_*), else extractive
_FOLD_ATTEMPTS = 3


@dataclass(frozen=True, slots=True)
class SessionWindow:
    """The sliding window of a conversation buffer: at most ``max_messages`` turns and
    ``max_tokens`` tokens of content (either may be None: no limit). Older turns are folded
    into the running summary of at most ``summary_sentences`` sentences."""

    max_tokens: int | None = 2000
    max_messages: int | None = 50
    summary_sentences: int = 6

    def __post_init__(self) -> None:
        for name in ("max_tokens", "max_messages"):
            value = getattr(self, name)
            if value is not None:
                v.positive_int(value, name, 10_000_000)
        v.positive_int(self.summary_sentences, "summary_sentences", 100)


DEFAULT_WINDOW = SessionWindow()


@dataclass(frozen=True, slots=True)
class Message:
    """One buffered turn."""

    id: int
    role: str
    content: str
    tokens: int
    created_at: datetime

    def to_openai(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "role": self.role, "content": self.content,
                "tokens": self.tokens, "created_at": self.created_at.isoformat()}


def _strings(value: object, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise InvalidInput(f"working state {name} must be a list of strings")
    return tuple(v.content(item, f"working state {name} item") for item in value)


@dataclass(frozen=True, slots=True)
class WorkingState:
    """The working state of a session's current task, as the program controls it.

    ``goal``: what the task is for; ``constraints``, ``steps_done``, ``plan``: lists of
    strings; ``budget``: numbers by name (e.g. ``{"tool_calls": 10, "usd": 0.5}``); ``notes``:
    any JSON object for the rest. ``version`` is the stored version this value was read at
    (0: none stored yet); pass it back as ``expected_version`` when writing.
    """

    goal: str | None = None
    constraints: tuple[str, ...] = ()
    steps_done: tuple[str, ...] = ()
    plan: tuple[str, ...] = ()
    budget: Mapping[str, float] = field(default_factory=dict)
    notes: Mapping[str, Any] = field(default_factory=dict)
    version: int = 0

    def __post_init__(self) -> None:  # normalize and validate whatever was passed
        if self.goal is not None:
            object.__setattr__(self, "goal", v.content(self.goal, "working state goal"))
        for name in ("constraints", "steps_done", "plan"):
            object.__setattr__(self, name, _strings(getattr(self, name), name))
        budget = self.budget or {}
        if not isinstance(budget, Mapping) or not all(
                isinstance(k, str) and isinstance(x, (int, float)) and not isinstance(x, bool)
                and math.isfinite(x) for k, x in budget.items()):
            raise InvalidInput("working state budget must map names to finite numbers")
        object.__setattr__(self, "budget", dict(budget))
        object.__setattr__(self, "notes", v.metadata(dict(self.notes or {})
                                                     if isinstance(self.notes, Mapping)
                                                     else self.notes, "working state notes"))

    @classmethod
    def from_json(cls, data: Mapping[str, Any], version: int = 0) -> WorkingState:
        """A state from its JSON object; unknown keys raise InvalidInput."""
        if not isinstance(data, Mapping):
            raise InvalidInput("working state must be a JSON object")
        known = {f.name for f in fields(cls)} - {"version"}
        unknown = set(data) - known
        if unknown:
            raise InvalidInput(f"unknown working state keys {sorted(unknown)}; "
                               f"known: {sorted(known)} (put the rest in notes)")
        return cls(**dict(data), version=version)

    def to_json(self) -> dict[str, Any]:
        """The JSON object stored (without the version)."""
        out = asdict(self)
        out.pop("version")
        for name in ("constraints", "steps_done", "plan"):
            out[name] = list(out[name])
        return out

    def replace(self, **changes: Any) -> WorkingState:
        """A copy with these fields changed (same version)."""
        return replace(self, **changes)


@dataclass(frozen=True, slots=True)
class SessionView:
    """A session as read: its running summary, the turns in the window (oldest first), how
    many turns are buffered in all, and its working state."""

    session_id: str
    subject: str
    summary: str
    summary_tokens: int
    summary_path: str | None
    messages: tuple[Message, ...]
    buffered: int
    state: WorkingState

    def to_dict(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "subject": self.subject,
                "summary": self.summary, "summary_tokens": self.summary_tokens,
                "summary_path": self.summary_path, "buffered": self.buffered,
                "messages": [m.to_dict() for m in self.messages],
                "state": {**self.state.to_json(), "version": self.state.version}}


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What :meth:`Sessions.append` did: the new turn's id and token count, how many
    older turns it folded into the summary, and which path made the summary ('llm' or
    'extractive'; None when nothing was folded) and why the LLM was not used."""

    id: int
    tokens: int
    folded: int = 0
    summary_path: str | None = None
    fallback_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _turn_text(role: str, content: str) -> str:
    return f"{role}: {' '.join(content.split())}"


class Sessions(Family):
    """``store.sessions``: each session's conversation buffer, running summary and working
    state, and the session's working memories (summary, consolidation); see the module
    docstring. ``window`` is the default :class:`SessionWindow`; ``token_counter`` counts a
    text's tokens (default :func:`memdb.core.tokens.count_tokens`)."""

    window: SessionWindow = DEFAULT_WINDOW
    token_counter: Callable[[str], int] | None = None

    # -- helpers ---------------------------------------------------------------------------
    def _session_key(self, session: str, subject: str | None) -> dict[str, str]:
        return {"tenant": self._store.tenant, "session": v.name(session, "session"),
                "subject": (v.optional_name(subject, "subject") or self._store.subject
                            or "default")}

    def _count(self, text: str) -> int:
        counter = self.token_counter or count_tokens
        return int(counter(text)) if text else 0

    # -- the conversation buffer -----------------------------------------------------------
    def append(self, session: str, role: str, content: str, *,
               subject: str | None = None, window: SessionWindow | None = None,
               llm: ChatLLM | None = _FROM_ENV) -> AppendResult:
        """Append one turn to ``session`` (role: system, user, assistant or tool), then fold
        the turns that scrolled out of ``window`` (default: the family's ``window``)
        into the running summary. ``llm``: default the store's (MEMDB_LLM_*), None for the
        offline extractive summary; an LLM failure falls back to it too."""
        key = self._session_key(session, subject)
        if role not in ROLES:
            raise InvalidInput(f"role must be one of {ROLES}, got {role!r}")
        if not isinstance(content, str):
            raise InvalidInput("content must be a string")
        v.optional_text(content, "content", MAX_MESSAGE_CHARS)
        tokens = self._count(content)
        with self._core.transaction() as conn:
            new_id = conn.execute(sql.query("session_append"), {
                **key, "role": role, "content": content, "tokens": tokens}).fetchone()["id"]
        chat = self._store.llm if llm is _FROM_ENV else llm
        folded, path, reason = self._fold(key, window or self.window, chat)
        return AppendResult(int(new_id), tokens, folded, path, reason)

    def _fold(self, key: dict[str, str], window: SessionWindow,
              chat: ChatLLM | None) -> tuple[int, str | None, str | None]:
        """Fold the turns outside the window into the summary (retried if another worker
        folded meanwhile); returns (turns folded, summary path, fallback reason)."""
        for _attempt in range(_FOLD_ATTEMPTS):
            with self._core.transaction() as conn:
                head = conn.execute(sql.query("session_get"), key).fetchone()
                rows = conn.execute(sql.query("session_window"), {
                    **key, "max_tokens": window.max_tokens,
                    "max_messages": window.max_messages}).fetchall()
            out = [r for r in rows if not r["in_window"]]
            if head is None or not out:
                return 0, None, None
            texts = ([head["summary"]] if head["summary"] else []) + [
                _turn_text(r["role"], r["content"]) for r in out]
            made = summarize(texts, chat, max_sentences=window.summary_sentences)
            with self._core.transaction() as conn:
                applied = conn.execute(sql.query("session_fold"), {
                    **key, "expected_through": head["summarized_through"],
                    "through": out[-1]["id"], "summary": made.text,
                    "summary_tokens": self._count(made.text), "path": made.path,
                }).fetchone()["applied"]
            if applied:
                return len(out), made.path, made.fallback_reason
        return 0, None, None  # others kept folding; the next append folds what is left

    def get(self, session: str, *, subject: str | None = None,
            window: SessionWindow | None = None) -> SessionView:
        """The session's summary, the turns inside ``window`` (default: the family's), and
        its working state; NotFound if the session has neither turns nor state."""
        key = self._session_key(session, subject)
        win = window or self.window
        with self._core.read() as conn:
            head = conn.execute(sql.query("session_get"), key).fetchone()
            rows = conn.execute(sql.query("session_window"), {
                **key, "max_tokens": win.max_tokens,
                "max_messages": win.max_messages}).fetchall()
        if head is None:
            raise NotFound(f"no session {key['session']!r} for subject {key['subject']!r}")
        return SessionView(
            session_id=head["session_id"], subject=head["subject"], summary=head["summary"],
            summary_tokens=int(head["summary_tokens"]), summary_path=head["summary_path"],
            messages=tuple(Message(int(r["id"]), r["role"], r["content"], int(r["tokens"]),
                                   r["created_at"]) for r in rows if r["in_window"]),
            buffered=int(head["buffered"]),
            state=WorkingState.from_json(head["state"], int(head["state_version"])))

    def delete(self, session: str, *, subject: str | None = None) -> None:
        """Delete a session: its turns, summary and working state; NotFound if none."""
        key = self._session_key(session, subject)
        with self._core.transaction() as conn:
            if conn.execute(sql.query("session_delete"), key).fetchone() is None:
                raise NotFound(f"no session {key['session']!r} for subject {key['subject']!r}")

    def list(self, *, subject: str | None = None,
             limit: int = 100) -> list[dict[str, Any]]:
        """Sessions of this tenant (or subject), most recently updated first."""
        v.positive_int(limit, "limit", 100_000)
        with self._core.read() as conn:
            rows = conn.execute(sql.query("session_list"), {
                "tenant": self._store.tenant, "limit": limit,
                "subject": v.optional_name(subject, "subject") or self._store.subject}).fetchall()
        return [dict(r) for r in rows]

    # -- working state ---------------------------------------------------------------------
    def get_state(self, session: str, *, subject: str | None = None) -> WorkingState:
        """The session's working state (an empty one at version 0 if none was written)."""
        key = self._session_key(session, subject)
        with self._core.read() as conn:
            head = conn.execute(sql.query("session_get"), key).fetchone()
        if head is None:
            return WorkingState()
        return WorkingState.from_json(head["state"], int(head["state_version"]))

    def set_state(self, session: str, state: WorkingState | Mapping[str, Any], *,
                  expected_version: int, subject: str | None = None) -> WorkingState:
        """Replace the working state if it is still at ``expected_version`` (0: none yet);
        returns it at its new version. :class:`~memdb.core.errors.Conflict` if another writer got
        there first (nothing is changed; re-read, merge, retry)."""
        key = self._session_key(session, subject)
        if isinstance(expected_version, bool) or not isinstance(expected_version, int) \
                or expected_version < 0:
            raise InvalidInput("expected_version must be a non-negative integer")
        value = state if isinstance(state, WorkingState) else WorkingState.from_json(state)
        with self._core.transaction() as conn:
            row = conn.execute(sql.query("session_set_state"), {
                **key, "state": Jsonb(value.to_json()),
                "expected_version": expected_version}).fetchone()
        if not row["applied"]:
            raise Conflict(f"working state of session {key['session']!r} is at version "
                           f"{row['version']}, not {expected_version}: re-read and retry")
        return value.replace(version=int(row["version"]))

    def update_state(self, session: str, *, expected_version: int | None = None,
                     subject: str | None = None, **changes: Any) -> WorkingState:
        """Change some fields of the working state (goal, constraints, steps_done, plan,
        budget, notes). With ``expected_version`` it must still be at that version; without,
        the version just read is expected (a concurrent write in between raises Conflict)."""
        with self._store.consistency("primary"):  # the version to expect is the primary's
            current = self.get_state(session, subject=subject)
        expected = current.version if expected_version is None else expected_version
        if expected != current.version:
            raise Conflict(f"working state of session {session!r} is at version "
                           f"{current.version}, not {expected}: re-read and retry")
        if "version" in changes:
            raise InvalidInput("version is not a field to update: pass expected_version")
        try:
            updated = current.replace(**changes)
        except TypeError:
            raise InvalidInput(f"unknown working state fields in {sorted(changes)}") from None
        return self.set_state(session, updated, expected_version=expected, subject=subject)

    def recent(self, session: str, *, subject: str | None = None,
               window: SessionWindow | None = None) -> Sequence[Message]:
        """The turns inside the window, oldest first (empty for an unknown session)."""
        try:
            return self.get(session, subject=subject, window=window).messages
        except NotFound:
            return ()

    # -- the session's working memories: summary and consolidation -------------------------
    def summarize(self, session_id: str, *, subject: str | None = None,
                  llm: ChatLLM | None = _FROM_ENV, max_sentences: int = 5,
                  dry_run: bool = False) -> SessionSummary:
        """Summarize a session's working memories into one episodic memory (category events,
        tag 'session-summary', source_id the session; source_type 'model_inference' from the
        LLM, 'system' from the extractive fallback). ``llm=None`` forces the offline path.
        The result says which path was taken and why the LLM was not used."""
        session_id = v.name(session_id, "session_id")
        subject = v.optional_name(subject, "subject")
        v.positive_int(max_sentences, "max_sentences", 50)
        with self._core.transaction() as conn:
            rows = conn.execute(sql.query("session_memories"), {
                "tenant": self._store.tenant, "session_id": session_id, "subject": subject,
                "limit": 1000}).fetchall()
        subjects = sorted({r["subject"] for r in rows})
        if len(subjects) > 1:
            raise InvalidInput(f"session {session_id!r} has memories of several subjects "
                               f"({', '.join(subjects)}): pass subject=")
        owner = subject or (subjects[0] if subjects else None)
        if not rows:
            return SessionSummary(session_id, owner, "", "none", "no working memories", ())
        chat = self._store.llm if llm is _FROM_ENV else llm
        result = summarize([r["content"] for r in rows], chat,
                           weights=[float(r["importance"]) for r in rows],
                           max_sentences=max_sentences)
        source_ids = tuple(r["id"] for r in rows)
        summary = SessionSummary(session_id, owner, result.text, result.path,
                                 result.fallback_reason, source_ids)
        if dry_run or not result.text:
            return summary
        item = {
            "content": result.text, "subject": owner, "kind": "episodic", "category": "events",
            "scope": "user", "session_id": session_id,
            "importance": max(float(r["importance"]) for r in rows),
            "source_type": "model_inference" if result.path == "llm" else "system",
            "source_id": session_id, "created_by": "memdb.summarize", "tags": [SUMMARY_TAG],
            "metadata": {"summary_of_session": session_id, "path": result.path,
                         "fallback_reason": result.fallback_reason,
                         "source_ids": [str(i) for i in source_ids]},
        }
        [(memory_id, created)] = write_direct(self._store, [item],
                                               f"summary of session {session_id}")
        return SessionSummary(session_id, owner, result.text, result.path,
                              result.fallback_reason, source_ids, memory_id, created)

    def consolidate(self, session_id: str, *, threshold: float = 0.6,
                    subject: str | None = None, dry_run: bool = False) -> list[Consolidated]:
        """Move the session's working memories with importance >= ``threshold`` to episodic
        (importance × 1.1, capped at 1; expiry cleared), all in one transaction."""
        with self._core.transaction() as conn:
            self._core.begin(conn, f"consolidate: session {session_id}")
            rows = conn.execute(sql.query("consolidate_session"), {
                "tenant": self._store.tenant, "session_id": v.name(session_id, "session_id"),
                "threshold": v.unit(threshold, "threshold"),
                "subject": v.optional_name(subject, "subject"),
                "dry_run": bool(dry_run)}).fetchall()
        return [Consolidated(**r) for r in rows]
