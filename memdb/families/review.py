"""``store.review``: the review queue, where proposed rules wait for a person's decision.

Sedimentation (:meth:`memdb.families.maintenance.Maintenance.sediment`) and ``task_end`` propose
rules
into ``memdb.review_queue``; approving one creates its memory (category system for rules),
rejecting it keeps the same text from being proposed again (``sql/functions/2xx_review_*``).

>>> for item in store.review.list():                          # doctest: +SKIP
...     store.review.approve(item.id, decided_by="alice")
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from ..core import sql
from ..core import validate as v
from ..core.embeddings import embed_checked
from ..core.errors import InvalidInput, NotFound
from ..core.family import Family
from ..core.lifecycle_models import ReviewItem
from .lifecycle import check_limit

__all__ = ["Review"]


class Review(Family):
    """``store.review`` (see the module docstring)."""

    def list(self, status: str | None = "pending", *, subject: str | None = None,
             limit: int = 100) -> list[ReviewItem]:
        """Review-queue entries (``status`` pending | approved | rejected | None for all),
        oldest first."""
        if status not in (None, "pending", "approved", "rejected"):
            raise InvalidInput("status must be pending, approved, rejected or None")
        with self._core.transaction() as conn:
            rows = conn.execute(sql.query("review_list"), {
                "tenant": self._store.tenant, "status": status,
                "subject": v.optional_name(subject, "subject"),
                "limit": check_limit(limit)}).fetchall()
        return [ReviewItem.from_row(r) for r in rows]

    def approve(self, review_id: UUID | str, *, decided_by: str | None = None) -> UUID:
        """Approve a pending entry: its memory is created (category system for rules) and the
        entry records decided_by/decided_at and memory_id. Returns the memory id."""
        rid = v.uuid(review_id, "review id")
        with self._core.transaction() as conn:
            row = conn.execute(sql.query("review_content"),
                               {"tenant": self._store.tenant, "id": rid}).fetchone()
        if row is None:
            raise NotFound(f"no review entry {rid}")
        vector = embed_checked(self._store.embedder, [row["content"]])[0]
        with self._core.transaction() as conn:
            self._core.begin(conn, "review approved")
            return self._decide(conn, "review_approve", {
                "tenant": self._store.tenant, "id": rid, "embedding": vector,
                "decided_by": v.optional_name(decided_by, "decided_by"),
                "space_id": self._store.space_id()})["memory_id"]

    def reject(self, review_id: UUID | str, *, decided_by: str | None = None) -> None:
        """Reject a pending entry (no memory; the same text is not proposed again)."""
        rid = v.uuid(review_id, "review id")
        with self._core.transaction() as conn:
            self._core.begin(conn, "review rejected")
            self._decide(conn, "review_reject", {
                "tenant": self._store.tenant, "id": rid,
                "decided_by": v.optional_name(decided_by, "decided_by")})

    @staticmethod
    def _decide(conn: Any, name: str, params: dict[str, Any]) -> dict[str, Any]:
        try:
            return conn.execute(sql.query(name), params).fetchone()
        except Exception as exc:
            if getattr(exc, "sqlstate", None) == "P0002":
                raise NotFound(f"no review entry {params['id']}") from None
            raise
