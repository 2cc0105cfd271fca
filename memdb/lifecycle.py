"""The memory lifecycle on :class:`~memdb.MemoryStore`: forgetting, decay, consolidation,
session summaries, sedimentation, review, and a subject's export and erasure.

``Lifecycle`` is a mixin: it uses the store's ``_transaction()`` (row-level security on the
store's tenant), ``_begin()`` (actor and reason for history rows), ``tenant``, ``embedder`` and
``space_id()``. Every ranking, selection and deletion is an SQL function in
``sql/functions/2xx_*.sql`` (callable from psql the same way); this module validates, embeds
new texts, and shapes results. New memories are written through ``memdb.add_memories`` with
explicit provenance (source_type 'system' or 'model_inference', source_id the session or
summary), not through ``add()``.

>>> store.maintain(dry_run=True)["steps"]                     # doctest: +SKIP
{'purge_expired': 0, 'forget_importance': 2, ...}
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import defaultdict
from datetime import date
from pathlib import Path
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from . import _sql
from . import _validate as v
from .errors import Forbidden, InvalidInput, NotFound
from .lifecycle_models import (
    Consolidated,
    HypothesisChange,
    ReviewItem,
    SedimentResult,
    SessionSummary,
    SubjectErasure,
)
from .llm import ChatLLM, llm_from_env
from .sediment import TARGETS, Candidate, extract, topic_text
from .summarize import summarize

__all__ = ["Lifecycle", "SUMMARY_TAG"]

SUMMARY_TAG = "session-summary"
_FROM_ENV: Any = object()  # summarize_session(llm=...) default: the LLM the environment sets
# words never reported as recurring topics: the cue words and session boilerplate
_TOPIC_STOP = ("decided decision agreed prefers preferred likes loves learned lesson never always "
               "must should would could will next time session sessions user users today")


def _uuid(value: object) -> UUID:
    try:
        return value if isinstance(value, UUID) else UUID(str(value))
    except ValueError:
        raise InvalidInput(f"not an id (UUID): {value!r}") from None


def _limit(value: int) -> int:
    return v.positive_int(value, "limit", 1_000_000)


def _open_new(path: str | os.PathLike[str]) -> Any:
    """The export file, created now; InvalidInput if it exists (never overwritten)."""
    try:
        return open(Path(path), "x", encoding="utf-8")  # noqa: SIM115 (closed by the caller)
    except FileExistsError:
        raise InvalidInput(f"refusing to overwrite existing file {str(path)!r}") from None
    except OSError as exc:
        raise InvalidInput(f"cannot create {str(path)!r}: {exc.strerror}") from None


class Lifecycle:
    """Lifecycle methods of MemoryStore (see the module docstring)."""

    tenant: str
    _llm: ChatLLM | None = None

    # -- maintenance: TTL, forgetting, decay ------------------------------------------------
    def maintain(self, *, dry_run: bool = False, all_tenants: bool = False,
                 **options: Any) -> dict[str, Any]:
        """One ``memdb.run_maintenance`` pass over this tenant (and, under subject isolation,
        only this subject's rows): purge expired, forget by importance, age and capacity,
        decay hypotheses; counts per step (jsonb as a dict).

        Options (all optional): steps, batch_limit, importance_threshold, age_days,
        age_max_uses, capacity_per_session, capacity_half_life_days,
        hypothesis_half_life_days, hypothesis_floor, hypothesis_min_step, lock_timeout_ms.
        A store never acts outside its tenant: ``all_tenants=True`` raises
        :class:`~memdb.errors.Forbidden` and changes nothing (every tenant is
        :meth:`memdb.MemoryAdmin.maintain`'s, as the admin login).
        Returns {"skipped": true, ...} at once when another run holds the lock.
        """
        if all_tenants:
            raise Forbidden("a MemoryStore maintains only its own tenant: run maintenance over "
                            "every tenant as the admin, with memdb.MemoryAdmin().maintain() "
                            "or `memdb admin maintain`")
        params = {"tenant": self.tenant, "options": Jsonb(options), "dry_run": bool(dry_run)}
        with self._transaction() as conn:  # type: ignore[attr-defined]
            self._begin(conn, "maintenance")  # type: ignore[attr-defined]
            return conn.execute(_sql.query("run_maintenance"), params).fetchone()["result"]

    def _ids(self, name: str, reason: str, params: dict[str, Any]) -> list[UUID]:
        with self._transaction() as conn:  # type: ignore[attr-defined]
            self._begin(conn, reason)  # type: ignore[attr-defined]
            rows = conn.execute(_sql.query(name), {"tenant": self.tenant, **params}).fetchall()
        return [r["id"] for r in rows]

    def forget_by_importance(self, threshold: float = 0.1, *, limit: int = 1000,
                             dry_run: bool = False) -> list[UUID]:
        """Forget current memories with importance below ``threshold`` (never category
        system); the ids deleted, or with ``dry_run`` the ids that would be."""
        return self._ids("forget_by_importance", "forget by importance", {
            "threshold": v.unit(threshold, "threshold"), "limit": _limit(limit),
            "dry_run": bool(dry_run)})

    def forget_by_age(self, days: float = 180, *, max_uses: int = 0, limit: int = 1000,
                      dry_run: bool = False) -> list[UUID]:
        """Forget memories older than ``days`` used at most ``max_uses`` times and not in
        the last ``days`` (never category system); ids as for :meth:`forget_by_importance`."""
        if isinstance(days, bool) or not isinstance(days, (int, float)) or days < 0:
            raise InvalidInput("days must be a non-negative number")
        if isinstance(max_uses, bool) or not isinstance(max_uses, int) or max_uses < 0:
            raise InvalidInput("max_uses must be a non-negative integer")
        return self._ids("forget_by_age", "forget by age", {
            "days": float(days), "max_uses": max_uses, "limit": _limit(limit),
            "dry_run": bool(dry_run)})

    def forget_by_capacity(self, max_per_session: int = 100, *, half_life_days: float = 7,
                           limit: int = 1000, dry_run: bool = False) -> list[UUID]:
        """Keep at most ``max_per_session`` working memories per session, by importance ×
        time decay (``half_life_days``); forget the rest (never category system)."""
        if isinstance(max_per_session, bool) or not isinstance(max_per_session, int) \
                or max_per_session < 0:
            raise InvalidInput("max_per_session must be a non-negative integer")
        if isinstance(half_life_days, bool) or not isinstance(half_life_days, (int, float)) \
                or half_life_days <= 0:
            raise InvalidInput("half_life_days must be a positive number")
        return self._ids("forget_by_capacity", "forget by capacity", {
            "max_per_session": max_per_session, "half_life_days": float(half_life_days),
            "limit": _limit(limit), "dry_run": bool(dry_run)})

    def decay_hypotheses(self, half_life_days: float = 7, floor: float = 0.2, *,
                         min_step: float = 0.01, limit: int = 1000,
                         dry_run: bool = False) -> list[HypothesisChange]:
        """Exponential confidence decay of unconfirmed hypotheses (status 'hypothesis') since
        each was last written; those falling below ``floor`` are forgotten."""
        if isinstance(half_life_days, bool) or not isinstance(half_life_days, (int, float)) \
                or half_life_days <= 0:
            raise InvalidInput("half_life_days must be a positive number")
        with self._transaction() as conn:  # type: ignore[attr-defined]
            self._begin(conn, "hypothesis decay")  # type: ignore[attr-defined]
            rows = conn.execute(_sql.query("decay_hypotheses"), {
                "tenant": self.tenant, "half_life_days": float(half_life_days),
                "floor": v.unit(floor, "floor"), "min_step": v.unit(min_step, "min_step"),
                "limit": _limit(limit), "dry_run": bool(dry_run)}).fetchall()
        return [HypothesisChange(**r) for r in rows]

    # -- consolidation and summaries ------------------------------------------------------------
    def consolidate(self, session_id: str, *, threshold: float = 0.6,
                    subject: str | None = None, dry_run: bool = False) -> list[Consolidated]:
        """Move the session's working memories with importance >= ``threshold`` to episodic
        (importance × 1.1, capped at 1; expiry cleared), all in one transaction."""
        with self._transaction() as conn:  # type: ignore[attr-defined]
            self._begin(conn, f"consolidate: session {session_id}")  # type: ignore[attr-defined]
            rows = conn.execute(_sql.query("consolidate_session"), {
                "tenant": self.tenant, "session_id": v.name(session_id, "session_id"),
                "threshold": v.unit(threshold, "threshold"),
                "subject": v.optional_name(subject, "subject"),
                "dry_run": bool(dry_run)}).fetchall()
        return [Consolidated(**r) for r in rows]

    @property
    def llm(self) -> ChatLLM | None:
        """The LLM for summaries: set it, or it comes from MEMDB_LLM_* (None: offline)."""
        if self._llm is None:
            self._llm = llm_from_env()
        return self._llm

    @llm.setter
    def llm(self, value: ChatLLM | None) -> None:
        self._llm = value

    def summarize_session(self, session_id: str, *, subject: str | None = None,
                          llm: ChatLLM | None = _FROM_ENV, max_sentences: int = 5,
                          dry_run: bool = False) -> SessionSummary:
        """Summarize a session's working memories into one episodic memory (category events,
        tag 'session-summary', source_id the session; source_type 'model_inference' from the
        LLM, 'system' from the extractive fallback). ``llm=None`` forces the offline path.
        The result says which path was taken and why the LLM was not used."""
        session_id = v.name(session_id, "session_id")
        subject = v.optional_name(subject, "subject")
        v.positive_int(max_sentences, "max_sentences", 50)
        with self._transaction() as conn:  # type: ignore[attr-defined]
            rows = conn.execute(_sql.query("session_memories"), {
                "tenant": self.tenant, "session_id": session_id, "subject": subject,
                "limit": 1000}).fetchall()
        subjects = sorted({r["subject"] for r in rows})
        if len(subjects) > 1:
            raise InvalidInput(f"session {session_id!r} has memories of several subjects "
                               f"({', '.join(subjects)}): pass subject=")
        owner = subject or (subjects[0] if subjects else None)
        if not rows:
            return SessionSummary(session_id, owner, "", "none", "no working memories", ())
        chat = self.llm if llm is _FROM_ENV else llm
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
        [(memory_id, created)] = self._write_direct([item], f"summary of session {session_id}")
        return SessionSummary(session_id, owner, result.text, result.path,
                              result.fallback_reason, source_ids, memory_id, created)

    def _write_direct(self, items: list[dict[str, Any]], reason: str, conn: Any = None
               ) -> list[tuple[UUID, bool]]:
        """Write memories through memdb.add_memories (embedded here), in ``conn``'s
        transaction or a new one; (id, created) per item."""
        if not items:
            return []
        vectors = list(self.embedder.embed_passages([i["content"] for i in items]))  # type: ignore[attr-defined]
        params = {"items": Jsonb([{**i, "tenant": self.tenant} for i in items]),
                  "embeddings": vectors, "space_id": self.space_id()}  # type: ignore[attr-defined]
        if conn is not None:
            rows = conn.execute(_sql.query("add_memories"), params).fetchall()
        else:
            with self._transaction() as own:  # type: ignore[attr-defined]
                self._begin(own, reason)  # type: ignore[attr-defined]
                rows = own.execute(_sql.query("add_memories"), params).fetchall()
        return [(r["id"], r["created"]) for r in rows]

    # -- sedimentation ------------------------------------------------------------------------
    def sediment(self, *, subject: str | None = None, days: int = 30, min_sessions: int = 3,
                 dry_run: bool = False) -> list[SedimentResult]:
        """Extract preferences, decisions, lessons and rules from the session summaries of
        the last ``days`` days (per subject), plus recurring topics (terms in at least
        ``min_sessions`` summaries). Preferences, decisions, lessons and topics become
        memories; rules go to the review queue (pending). Idempotent: a subject's run over the
        same summaries on the same day is recorded in memdb.sediment_runs and skipped after;
        texts already stored or proposed are never written twice. ``dry_run``: what it would
        write, nothing changed."""
        subject = v.optional_name(subject, "subject")
        v.positive_int(days, "days", 3650)
        v.positive_int(min_sessions, "min_sessions", 1000)
        with self._transaction() as conn:  # type: ignore[attr-defined]
            rows = conn.execute(_sql.query("recent_summaries"), {
                "tenant": self.tenant, "subject": subject, "days": days}).fetchall()
        by_subject: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            by_subject[r["subject"]].append(r)
        return [self._sediment_subject(s, summaries, min_sessions, dry_run)
                for s, summaries in sorted(by_subject.items())]

    def _sediment_subject(self, subject: str, summaries: list[dict[str, Any]],
                          min_sessions: int, dry_run: bool) -> SedimentResult:
        key = "\n".join(sorted(f"{r['id']}:{r['version']}" for r in summaries))
        source_hash = hashlib.sha256(key.encode()).digest()
        base = {"subject": subject, "source_hash": source_hash.hex(),
                "summaries": len(summaries), "dry_run": dry_run}
        ids = [r["id"] for r in summaries]
        with self._transaction() as conn:  # type: ignore[attr-defined]
            if conn.execute(_sql.query("sediment_run_exists"), {
                    "tenant": self.tenant, "subject": subject,
                    "source_hash": source_hash}).fetchone()["done"]:
                return SedimentResult(**base, skipped=True)
            candidates = extract([(r["id"], r["content"]) for r in summaries],
                                 min_sessions=min_sessions)
            terms = conn.execute(_sql.query("recurring_terms"), {
                "tenant": self.tenant, "ids": ids, "min_sessions": min_sessions,
                "stop": _TOPIC_STOP, "limit": 5}).fetchall()
            candidates += [Candidate("pattern", topic_text(t["term"]), tuple(ids))
                           for t in terms]
            known = {r["content"] for r in conn.execute(_sql.query("known_contents"), {
                "tenant": self.tenant, "subject": subject,
                "contents": [c.content for c in candidates]}).fetchall()}
        fresh = [c for c in candidates if c.content not in known]
        to_store = [c for c in fresh if c.destination == "memory"]
        to_review = [c for c in fresh if c.destination == "review"]
        if dry_run:
            return SedimentResult(**base, skipped=False,
                                  memories=tuple(c.to_dict() for c in to_store),
                                  proposed=tuple(c.to_dict() for c in to_review))
        items = [{"content": c.content, "subject": subject, "kind": TARGETS[c.cls][1],
                  "category": TARGETS[c.cls][2], "scope": "user", "importance": 0.6,
                  "source_type": "system", "source_id": f"summary:{c.source_ids[0]}",
                  "created_by": "memdb.sediment", "tags": ["sediment", c.cls],
                  "metadata": {"sediment_class": c.cls,
                               "source_ids": [str(i) for i in c.source_ids]}}
                 for c in to_store]
        with self._transaction() as conn:  # type: ignore[attr-defined]
            self._begin(conn, f"sediment {date.today().isoformat()}")  # type: ignore[attr-defined]
            inserted = conn.execute(_sql.query("sediment_run_insert"), {
                "tenant": self.tenant, "subject": subject, "source_hash": source_hash,
                "written": Jsonb({})}).fetchone()
            if inserted is None:  # a concurrent run of the same day and sources won
                return SedimentResult(**base, skipped=True)
            written = self._write_direct(items, "sediment", conn)
            stored = tuple({**c.to_dict(), "id": str(mid)}
                           for c, (mid, _) in zip(to_store, written, strict=True))
            proposed = []
            for c in to_review:
                row = conn.execute(_sql.query("review_propose"), {
                    "tenant": self.tenant, "subject": subject, "kind": TARGETS[c.cls][1],
                    "category": TARGETS[c.cls][2], "content": c.content, "reason": c.cls,
                    "source_ids": list(c.source_ids)}).fetchone()
                if row is not None:
                    proposed.append({**c.to_dict(), "id": str(row["id"])})
            conn.execute(_sql.query("sediment_run_written"), {
                "written": Jsonb({"memories": [m["id"] for m in stored],
                                   "proposed": [p["id"] for p in proposed]}),
                "tenant": self.tenant, "subject": subject, "source_hash": source_hash})
        return SedimentResult(**base, skipped=False, memories=stored, proposed=tuple(proposed))

    # -- review queue ----------------------------------------------------------------------------
    def review_list(self, status: str | None = "pending", *, subject: str | None = None,
                    limit: int = 100) -> list[ReviewItem]:
        """Review-queue entries (``status`` pending | approved | rejected | None for all),
        oldest first."""
        if status not in (None, "pending", "approved", "rejected"):
            raise InvalidInput("status must be pending, approved, rejected or None")
        with self._transaction() as conn:  # type: ignore[attr-defined]
            rows = conn.execute(_sql.query("review_list"), {
                "tenant": self.tenant, "status": status,
                "subject": v.optional_name(subject, "subject"), "limit": _limit(limit)}).fetchall()
        return [ReviewItem.from_row(r) for r in rows]

    def review_approve(self, review_id: UUID | str, *, decided_by: str | None = None) -> UUID:
        """Approve a pending entry: its memory is created (category system for rules) and the
        entry records decided_by/decided_at and memory_id. Returns the memory id."""
        rid = _uuid(review_id)
        with self._transaction() as conn:  # type: ignore[attr-defined]
            row = conn.execute(_sql.query("review_content"),
                               {"tenant": self.tenant, "id": rid}).fetchone()
        if row is None:
            raise NotFound(f"no review entry {rid}")
        vector = self.embedder.embed_passages([row["content"]])[0]  # type: ignore[attr-defined]
        with self._transaction() as conn:  # type: ignore[attr-defined]
            self._begin(conn, "review approved")  # type: ignore[attr-defined]
            return self._decide(conn, "review_approve", {
                "tenant": self.tenant, "id": rid, "embedding": vector,
                "decided_by": v.optional_name(decided_by, "decided_by"),
                "space_id": self.space_id()})["memory_id"]  # type: ignore[attr-defined]

    def review_reject(self, review_id: UUID | str, *, decided_by: str | None = None) -> None:
        """Reject a pending entry (no memory; the same text is not proposed again)."""
        rid = _uuid(review_id)
        with self._transaction() as conn:  # type: ignore[attr-defined]
            self._begin(conn, "review rejected")  # type: ignore[attr-defined]
            self._decide(conn, "review_reject", {
                "tenant": self.tenant, "id": rid,
                "decided_by": v.optional_name(decided_by, "decided_by")})

    @staticmethod
    def _decide(conn: Any, name: str, params: dict[str, Any]) -> dict[str, Any]:
        try:
            return conn.execute(_sql.query(name), params).fetchone()
        except Exception as exc:
            if getattr(exc, "sqlstate", None) == "P0002":
                raise NotFound(f"no review entry {params['id']}") from None
            raise

    # -- a subject's export and erasure ------------------------------------------------------------
    def export_subject(self, subject: str, path: str | os.PathLike[str]) -> dict[str, int]:
        """Write everything memdb holds about ``subject`` to a new JSON file at ``path``
        (refuses to overwrite); returns the number of rows per table."""
        subject = v.name(subject, "subject")
        out = _open_new(path)
        try:
            with out, self._transaction() as conn:  # type: ignore[attr-defined]
                data = conn.execute(_sql.query("export_subject"), {
                    "tenant": self.tenant, "subject": subject}).fetchone()["export"]
                json.dump(data, out, ensure_ascii=False, indent=2, default=str)
        except BaseException:
            Path(path).unlink(missing_ok=True)
            raise
        return {table: len(rows) for table, rows in data["tables"].items()}

    def forget_subject(self, subject: str, *, export_to: str | os.PathLike[str] | None = None,
                       dry_run: bool = False) -> SubjectErasure:
        """Erase everything about ``subject`` in one transaction (memories, their history,
        usage, review entries, sediment runs, BM25 terms left with no document); with
        ``export_to``, first write it all to that new JSON file (in the same transaction: if
        the export fails nothing is deleted). Returns counts per table."""
        subject = v.name(subject, "subject")
        out = _open_new(export_to) if export_to is not None and not dry_run else None
        try:
            with self._transaction() as conn:  # type: ignore[attr-defined]
                self._begin(conn, "forget_subject")  # type: ignore[attr-defined]
                if out is not None:
                    data = conn.execute(_sql.query("export_subject"), {
                        "tenant": self.tenant, "subject": subject}).fetchone()["export"]
                    json.dump(data, out, ensure_ascii=False, indent=2, default=str)
                    out.flush()
                    os.fsync(out.fileno())
                counts = conn.execute(_sql.query("forget_subject"), {
                    "tenant": self.tenant, "subject": subject,
                    "dry_run": bool(dry_run)}).fetchone()["counts"]
        except BaseException:
            if out is not None:
                out.close()
                Path(export_to).unlink(missing_ok=True)  # type: ignore[arg-type]
            raise
        if out is not None:
            out.close()
        return SubjectErasure(subject, counts, bool(dry_run),
                              None if out is None else str(export_to))

