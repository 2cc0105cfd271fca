"""``store.subjects``: one subject's memories as a whole - a summary of them, their export,
and their erasure (memories, history, usage, review entries, sessions, graph, traces' rows).

>>> store.subjects.export("alice", "alice.json")               # doctest: +SKIP
{'memories': 12, 'memory_history': 15, ...}
>>> store.subjects.forget("alice", export_to="alice-final.json").counts   # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from psycopg.types.json import Jsonb

from ..core import sql
from ..core import validate as v
from ..core.family import Family
from ..core.filters import Filter
from ..core.lifecycle_models import SubjectErasure
from .lifecycle import open_new

__all__ = ["Subjects"]


class Subjects(Family):
    """``store.subjects`` (see the module docstring)."""

    def export(self, subject: str, path: str | os.PathLike[str]) -> dict[str, int]:
        """Write everything memdb holds about ``subject`` to a new JSON file at ``path``
        (refuses to overwrite); returns the number of rows per table."""
        subject = v.name(subject, "subject")
        out = open_new(path)
        try:
            with out, self._core.transaction() as conn:
                data = conn.execute(sql.query("export_subject"), {
                    "tenant": self._store.tenant, "subject": subject}).fetchone()["export"]
                json.dump(data, out, ensure_ascii=False, indent=2, default=str)
        except BaseException:
            Path(path).unlink(missing_ok=True)
            raise
        return {table: len(rows) for table, rows in data["tables"].items()}

    def forget(self, subject: str, *, export_to: str | os.PathLike[str] | None = None,
               dry_run: bool = False) -> SubjectErasure:
        """Erase everything about ``subject`` in one transaction (memories, their history,
        usage, review entries, sediment runs, BM25 terms left with no document); with
        ``export_to``, first write it all to that new JSON file (in the same transaction: if
        the export fails nothing is deleted). Returns counts per table."""
        subject = v.name(subject, "subject")
        out = open_new(export_to) if export_to is not None and not dry_run else None
        try:
            with self._core.transaction() as conn:
                self._core.begin(conn, "forget_subject")
                if out is not None:
                    data = conn.execute(sql.query("export_subject"), {
                        "tenant": self._store.tenant, "subject": subject}).fetchone()["export"]
                    json.dump(data, out, ensure_ascii=False, indent=2, default=str)
                    out.flush()
                    os.fsync(out.fileno())
                counts = conn.execute(sql.query("forget_subject"), {
                    "tenant": self._store.tenant, "subject": subject,
                    "dry_run": bool(dry_run)}).fetchone()["counts"]
        except BaseException:
            if out is not None:
                out.close()
                Path(export_to).unlink(missing_ok=True)
            raise
        if out is not None:
            out.close()
        return SubjectErasure(subject, counts, bool(dry_run),
                              None if out is None else str(export_to))

    def summary(self, *, subject: str | None = None, k: int = 5,
                max_chars: int = 400) -> dict[str, Any]:
        """Counts of current memories by kind and by category, and the ``k`` most important
        (ties: most recently updated), for one subject (or all visible ones)."""
        v.positive_int(k, "k", 100)
        v.positive_int(max_chars, "max_chars", 100_000)
        flt = Jsonb(Filter.of(None, **({"subject": subject} if subject else {})).to_json())
        params = {"tenant": self._store.tenant, "filter": flt, "limit": k}
        with self._core.transaction() as conn:
            counts = conn.execute(sql.query("summary_counts"), params).fetchall()
            top = conn.execute(sql.query("summary_top"), params).fetchall()
        by_kind: dict[str, int] = {}
        by_category: dict[str, int] = {}
        for row in counts:
            by_kind[row["kind"]] = by_kind.get(row["kind"], 0) + int(row["n"])
            by_category[row["category"]] = by_category.get(row["category"], 0) + int(row["n"])
        return {"total": sum(by_kind.values()), "by_kind": by_kind, "by_category": by_category,
                "top": [{"id": str(r["id"]), "kind": r["kind"], "category": r["category"],
                         "importance": round(float(r["importance"]), 2),
                         "content": r["content"] if len(r["content"]) <= max_chars
                         else r["content"][:max_chars - 1] + "…"} for r in top]}
