"""``store.maintenance``: keeping a tenant's memories in shape - expiry, forgetting, hypothesis
decay, the re-embedding queue, sedimentation of session summaries and the classification
backfill.

Every ranking, selection and deletion is an SQL function in ``sql/functions/2xx_*.sql``
(callable from psql the same way); this module validates, embeds new texts, and shapes
results. New memories are written through ``memdb.add_memories`` with explicit provenance
(source_type 'system', source_id the summary), not through ``add()``. A store maintains only
its own tenant (and, under subject isolation, its subject); every tenant is
:class:`memdb.MemoryAdmin`'s.

>>> store.maintenance.run(dry_run=True)["steps"]              # doctest: +SKIP
{'purge_expired': 0, 'forget_importance': 2, ...}
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable
from datetime import date
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from ..core import sql
from ..core import validate as v
from ..core.embeddings import embed_checked
from ..core.errors import EmbeddingError, Forbidden, InvalidInput
from ..core.family import Family
from ..core.lifecycle_models import HypothesisChange, SedimentResult
from ..write.classify import TAG_VERSION, classify
from ..write.inputs import MemoryInput
from .lifecycle import TOPIC_STOP, check_limit, write_direct
from .sediment import TARGETS, Candidate, extract, topic_text

__all__ = ["Maintenance"]


class Maintenance(Family):
    """``store.maintenance`` (see the module docstring)."""

    # -- maintenance: TTL, forgetting, decay ------------------------------------------------
    def run(self, *, dry_run: bool = False, all_tenants: bool = False,
            **options: Any) -> dict[str, Any]:
        """One ``memdb.run_maintenance`` pass over this tenant (and, under subject isolation,
        only this subject's rows): purge expired, forget by importance, age and capacity,
        decay hypotheses; counts per step (jsonb as a dict).

        Options (all optional): steps, batch_limit, importance_threshold, age_days,
        age_max_uses, capacity_per_session, capacity_half_life_days,
        hypothesis_half_life_days, hypothesis_floor, hypothesis_min_step, lock_timeout_ms.
        A store never acts outside its tenant: ``all_tenants=True`` raises
        :class:`~memdb.core.errors.Forbidden` and changes nothing (every tenant is
        :meth:`memdb.MemoryAdmin.maintain`'s, as the admin login).
        Returns {"skipped": true, ...} at once when another run holds the lock.
        """
        if all_tenants:
            raise Forbidden("a MemoryStore maintains only its own tenant: run maintenance over "
                            "every tenant as the admin, with memdb.MemoryAdmin().maintain() "
                            "or `memdb admin maintain`")
        params = {"tenant": self._store.tenant, "options": Jsonb(options), "dry_run": bool(dry_run)}
        with self._core.transaction() as conn:
            self._core.begin(conn, "maintenance")
            return conn.execute(sql.query("run_maintenance"), params).fetchone()["result"]

    def _ids(self, name: str, reason: str, params: dict[str, Any]) -> list[UUID]:
        with self._core.transaction() as conn:
            self._core.begin(conn, reason)
            rows = conn.execute(sql.query(name),
                                {"tenant": self._store.tenant, **params}).fetchall()
        return [r["id"] for r in rows]

    def forget_by_importance(self, threshold: float = 0.1, *, limit: int = 1000,
                             dry_run: bool = False) -> list[UUID]:
        """Forget current memories with importance below ``threshold`` (never category
        system); the ids deleted, or with ``dry_run`` the ids that would be."""
        return self._ids("forget_by_importance", "forget by importance", {
            "threshold": v.unit(threshold, "threshold"), "limit": check_limit(limit),
            "dry_run": bool(dry_run)})

    def forget_by_age(self, days: float = 180, *, max_uses: int = 0, limit: int = 1000,
                      dry_run: bool = False) -> list[UUID]:
        """Forget memories older than ``days`` used at most ``max_uses`` times and not in
        the last ``days`` (never category system); ids as for :meth:`forget_by_importance`."""
        days = v.days(days, "days")
        if isinstance(max_uses, bool) or not isinstance(max_uses, int) or max_uses < 0:
            raise InvalidInput("max_uses must be a non-negative integer")
        return self._ids("forget_by_age", "forget by age", {
            "days": float(days), "max_uses": max_uses, "limit": check_limit(limit),
            "dry_run": bool(dry_run)})

    def forget_by_capacity(self, max_per_session: int = 100, *, half_life_days: float = 7,
                           limit: int = 1000, dry_run: bool = False) -> list[UUID]:
        """Keep at most ``max_per_session`` working memories per session, by importance ×
        time decay (``half_life_days``); forget the rest (never category system)."""
        if isinstance(max_per_session, bool) or not isinstance(max_per_session, int) \
                or max_per_session < 0:
            raise InvalidInput("max_per_session must be a non-negative integer")
        half_life_days = v.days(half_life_days, "half_life_days", positive=True)
        return self._ids("forget_by_capacity", "forget by capacity", {
            "max_per_session": max_per_session, "half_life_days": float(half_life_days),
            "limit": check_limit(limit), "dry_run": bool(dry_run)})

    def decay_hypotheses(self, half_life_days: float = 7, floor: float = 0.2, *,
                         min_step: float = 0.01, limit: int = 1000,
                         dry_run: bool = False) -> list[HypothesisChange]:
        """Exponential confidence decay of unconfirmed hypotheses (status 'hypothesis') since
        each was last written; those falling below ``floor`` are forgotten."""
        half_life_days = v.days(half_life_days, "half_life_days", positive=True)
        with self._core.transaction() as conn:
            self._core.begin(conn, "hypothesis decay")
            rows = conn.execute(sql.query("decay_hypotheses"), {
                "tenant": self._store.tenant, "half_life_days": float(half_life_days),
                "floor": v.unit(floor, "floor"), "min_step": v.unit(min_step, "min_step"),
                "limit": check_limit(limit), "dry_run": bool(dry_run)}).fetchall()
        return [HypothesisChange(**r) for r in rows]

    def purge_expired(self) -> int:
        """Delete this tenant's expired memories; returns how many."""
        with self._core.transaction() as conn:
            self._core.begin(conn, "expired")
            return int(conn.execute(sql.query("purge_expired"),
                                    {"tenant": self._store.tenant}).fetchone()["purged"])

    # -- the re-embedding queue -------------------------------------------------------------
    def pending_embeddings(self) -> int:
        """How many current memories of this tenant (or subject) wait for an embedding."""
        with self._core.transaction() as conn:
            return int(conn.execute(sql.query("pending_embeddings"),
                                    {"tenant": self._store.tenant}).fetchone()["n"])

    def reembed(self, batch_size: int = 64, limit: int | None = None, *,
                progress: Callable[[int, int], None] | None = None) -> int:
        """Embed queued memories (current rows without an embedding) and store their vectors;
        returns how many were written.

        One pass over the queue in id order, ``batch_size`` rows at a time, each batch read,
        embedded outside any transaction, then written in a transaction of its own that only
        touches rows still holding exactly the embedded text and still without a vector (a
        row changed meanwhile is skipped; its new text stays queued). ``limit`` caps the rows
        read. ``progress(done, total)`` is called after each batch (``total``: the queue's size
        at the start, capped by ``limit``). A provider failure raises EmbeddingError; batches
        written before it stay written.
        """
        v.positive_int(batch_size, "batch_size", 10_000)
        if limit is not None:
            v.positive_int(limit, "limit", 10**9)
        total = self.pending_embeddings()
        if limit is not None:
            total = min(total, limit)
        space_id = self._store.space_id()
        after, read, written = UUID(int=0), 0, 0
        while limit is None or read < limit:
            size = batch_size if limit is None else min(batch_size, limit - read)
            with self._core.transaction() as conn:
                rows = conn.execute(sql.query("embedding_queue"), {
                    "tenant": self._store.tenant, "after": after, "limit": size}).fetchall()
            if not rows:
                break
            read += len(rows)
            after = rows[-1]["id"]
            texts = [MemoryInput(content=r["content"],
                                 search_context=r["search_context"]).embedding_text()
                     for r in rows]
            try:
                vectors = embed_checked(self._store.embedder, texts)
            except EmbeddingError as exc:
                raise EmbeddingError(
                    f"re-embedding stopped after {written} memories: {exc}") from exc
            with self._core.transaction() as conn:
                written += int(conn.execute(sql.query("set_embeddings"), {
                    "tenant": self._store.tenant, "space_id": space_id,
                    "ids": [r["id"] for r in rows],
                    "contents": [r["content"] for r in rows],
                    "contexts": [r["search_context"] for r in rows],
                    "embeddings": list(vectors),
                }).fetchone()["n"])
            if progress is not None:
                progress(min(read, total) if total else read, total)
        return written

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
        with self._core.transaction() as conn:
            rows = conn.execute(sql.query("recent_summaries"), {
                "tenant": self._store.tenant, "subject": subject, "days": days}).fetchall()
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
        with self._core.transaction() as conn:
            if conn.execute(sql.query("sediment_run_exists"), {
                    "tenant": self._store.tenant, "subject": subject,
                    "source_hash": source_hash}).fetchone()["done"]:
                return SedimentResult(**base, skipped=True)
            candidates = extract([(r["id"], r["content"]) for r in summaries],
                                 min_sessions=min_sessions)
            terms = conn.execute(sql.query("recurring_terms"), {
                "tenant": self._store.tenant, "ids": ids, "min_sessions": min_sessions,
                "stop": TOPIC_STOP, "limit": 5}).fetchall()
            candidates += [Candidate("pattern", topic_text(t["term"]), tuple(ids))
                           for t in terms]
            known = {r["content"] for r in conn.execute(sql.query("known_contents"), {
                "tenant": self._store.tenant, "subject": subject,
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
        with self._core.transaction() as conn:
            self._core.begin(conn, f"sediment {date.today().isoformat()}")
            inserted = conn.execute(sql.query("sediment_run_insert"), {
                "tenant": self._store.tenant, "subject": subject, "source_hash": source_hash,
                "written": Jsonb({})}).fetchone()
            if inserted is None:  # a concurrent run of the same day and sources won
                return SedimentResult(**base, skipped=True)
            written = write_direct(self._store, items, "sediment", conn)
            stored = tuple({**c.to_dict(), "id": str(mid)}
                           for c, (mid, _) in zip(to_store, written, strict=True))
            proposed = []
            for c in to_review:
                row = conn.execute(sql.query("review_propose"), {
                    "tenant": self._store.tenant, "subject": subject, "kind": TARGETS[c.cls][1],
                    "category": TARGETS[c.cls][2], "content": c.content, "reason": c.cls,
                    "source_ids": list(c.source_ids)}).fetchone()
                if row is not None:
                    proposed.append({**c.to_dict(), "id": str(row["id"])})
            conn.execute(sql.query("sediment_run_written"), {
                "written": Jsonb({"memories": [m["id"] for m in stored],
                                   "proposed": [p["id"] for p in proposed]}),
                "tenant": self._store.tenant, "subject": subject, "source_hash": source_hash})
        return SedimentResult(**base, skipped=False, memories=stored, proposed=tuple(proposed))

    # -- classification backfill -----------------------------------------------------------
    def reclassify(self, *, dry_run: bool = True, batch_size: int = 500,
                   sample: int = 10) -> dict[str, Any]:
        """Re-classify current memories classified by older rules (tag_version below
        :data:`memdb.write.classify.TAG_VERSION`) and unclassified ones still in ``general``;
        explicit categories are left alone. Reports ``scanned``, ``moves`` (how many would
        move / moved, per ``from->to``), ``unchanged`` (only their tag_version is set) and a
        ``sample`` of moves; writes only when ``dry_run`` is False, batch by batch."""
        v.positive_int(batch_size, "batch_size", 100_000)
        after = UUID(int=0)
        report: dict[str, Any] = {"dry_run": dry_run, "tag_version": TAG_VERSION, "scanned": 0,
                                  "moved": 0, "unchanged": 0, "moves": {}, "sample": []}
        while True:
            with self._core.transaction() as conn:
                rows = conn.execute(sql.query("classification_batch"), {
                    "tenant": self._store.tenant, "after": after, "version": TAG_VERSION,
                    "limit": batch_size}).fetchall()
                if not rows:
                    break
                after = rows[-1]["id"]
                moves = []
                for r in rows:
                    found = classify(r["content"], r["metadata"])
                    moves.append({"id": str(r["id"]), "category": found.category.value,
                                  "tag_version": found.tag_version})
                    if found.category.value != r["category"]:
                        key = f"{r['category']}->{found.category.value}"
                        report["moves"][key] = report["moves"].get(key, 0) + 1
                        report["moved"] += 1
                        if len(report["sample"]) < sample:
                            report["sample"].append({"id": str(r["id"]), "from": r["category"],
                                                     "to": found.category.value,
                                                     "rule": found.rule,
                                                     "content": r["content"][:80]})
                    else:
                        report["unchanged"] += 1
                report["scanned"] += len(rows)
                if not dry_run:
                    self._core.begin(conn, "reclassify")
                    conn.execute(sql.query("reclassify"), {"tenant": self._store.tenant,
                                                            "moves": Jsonb(moves)})
        return report
