"""Helpers the lifecycle families share: ``store.sessions`` (summaries, consolidation),
``store.maintenance`` (forgetting, decay, sedimentation), ``store.review`` and
``store.subjects`` (export, erasure). No I/O of their own except :func:`write_direct`, which
writes through the store it is given."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from ..core import sql
from ..core import validate as v
from ..core.embeddings import embed_checked
from ..core.errors import InvalidInput

__all__ = ["SUMMARY_TAG"]

SUMMARY_TAG = "session-summary"
# words never reported as recurring topics: the cue words and session boilerplate
TOPIC_STOP = ("decided decision agreed prefers preferred likes loves learned lesson never always "
               "must should would could will next time session sessions user users today")




def check_limit(value: int) -> int:
    return v.positive_int(value, "limit", 1_000_000)


def open_new(path: str | os.PathLike[str]) -> Any:
    """The export file, created now; InvalidInput if it exists (never overwritten)."""
    try:
        return open(Path(path), "x", encoding="utf-8")  # noqa: SIM115 (closed by the caller)
    except FileExistsError:
        raise InvalidInput(f"refusing to overwrite existing file {str(path)!r}") from None
    except OSError as exc:
        raise InvalidInput(f"cannot create {str(path)!r}: {exc.strerror}") from None


def write_direct(store: Any, items: list[dict[str, Any]], reason: str, conn: Any = None
                  ) -> list[tuple[UUID, bool]]:
    """Write memories through memdb.add_memories (embedded here) for ``store``, in
    ``conn``'s transaction or a new one; (id, created) per item. Session summaries and
    sedimentation write this way, with their own provenance, not through ``add()``."""
    if not items:
        return []
    vectors = list(embed_checked(store.embedder, [i["content"] for i in items]))
    params = {"items": Jsonb([{**i, "tenant": store.tenant} for i in items]),
              "embeddings": vectors, "space_id": store.space_id()}
    if conn is not None:
        rows = conn.execute(sql.query("add_memories"), params).fetchall()
    else:
        with store.core.transaction() as own:
            store.core.begin(own, reason)
            rows = own.execute(sql.query("add_memories"), params).fetchall()
    return [(r["id"], r["created"]) for r in rows]
