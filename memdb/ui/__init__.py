"""``memdb ui``: the memory browser, server-rendered HTML pages under /ui of the HTTP door
(``memdb serve``), with the same API keys and row-level security as the API: subjects and
profiles, a filtered memory list, search with every route's rank and score, one memory with
its history, the review queue, a maintenance dry run, the entity graph and the job queue. No
JavaScript, no build step; text is escaped by construction (:mod:`memdb.ui._html`). See
docs/ui.md."""

from __future__ import annotations

from . import _jobs  # noqa: F401  (registers /ui/jobs)
from ._pages import install, router

__all__ = ["install", "router"]
