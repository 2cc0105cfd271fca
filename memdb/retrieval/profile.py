"""The user profile: one JSON document per subject, derived from its current memories.

``store.profile("alice")`` calls the SQL function ``memdb.subject_profile(tenant, subject,
limit)`` (``sql/functions/260_subject_profile.sql``; the same document from psql), which sorts
the subject's current, active memories into sections by category and by Chinese/English cue
words: **preferences**, **habits**, **expertise**, **communication_style**, the agent's
**lessons** (reflections, see :meth:`~memdb.MemoryStore.task_end`) and **facts**: the stable
facts about the subject no other section took (an allergy, a birthday, a name, where they live
or come from, by the write gate's profile cues in Chinese and English; else a short semantic
memory of category entities or general; cue facts first). Every item lists the ids of
the memories it came from (``memory_ids``), so each line of a profile can be traced, corrected
or forgotten. The profile is never stored separately: it changes exactly when the memories
change (``remember`` after each turn, ``task_end`` at the end of a task, ``add``, ``update``,
``forget``).

:func:`profile_items` turns a document into the lines the context builder renders into the
system message (``build_context(..., include_profile=True)``); no I/O.

>>> store.profile("alice")["preferences"][0]                      # doctest: +SKIP
{'content': 'Alice prefers green tea', 'memory_ids': ['0b9c…'], 'category': 'preferences', ...}
"""

from __future__ import annotations

from typing import Any

from ..core import sql
from ..core import validate as v

__all__ = ["SECTIONS", "LABELS", "TITLES", "profile_items", "Profiles"]

# the document's sections, in the order they are rendered into a context
# (facts early: an allergy matters more than a taste when the budget is short)
SECTIONS = ("communication_style", "facts", "preferences", "expertise", "habits", "lessons")
LABELS = {
    "en": {"communication_style": "style", "facts": "fact", "preferences": "preference",
           "expertise": "expertise", "habits": "habit", "lessons": "lesson"},
    "zh": {"communication_style": "沟通风格", "facts": "事实", "preferences": "偏好",
           "expertise": "专长", "habits": "习惯", "lessons": "经验"},
}
TITLES = {"en": "User profile:", "zh": "用户画像："}
MAX_LIMIT = 1000


def profile_items(document: dict[str, Any], language: str = "en"
                  ) -> list[tuple[str, str, str]]:
    """The document's items as (label, content, memory id) in render order (sections in
    :data:`SECTIONS` order, each by importance); the id is the item's first memory (its most
    important source)."""
    labels = LABELS.get(language, LABELS["en"])
    out = []
    for section in SECTIONS:
        for item in document.get(section) or ():
            ids = item.get("memory_ids") or [""]
            out.append((labels[section], str(item["content"]), str(ids[0])))
    return out


class Profiles:
    """``profile`` on :class:`~memdb.MemoryStore` (uses ``_transaction()``, ``tenant`` and
    ``subject``)."""

    tenant: str
    subject: str | None

    def profile(self, subject: str | None = None, *, limit: int = 20) -> dict[str, Any]:
        """The profile of ``subject`` (default: the store's, else 'default') as one JSON
        document (see the module docstring); ``limit``: the most items per section. A subject
        with no memories has empty sections."""
        who = v.optional_name(subject, "subject") or self.subject or "default"
        v.positive_int(limit, "limit", MAX_LIMIT)
        with self.core.read() as conn:
            return conn.execute(sql.query("subject_profile"), {
                "tenant": self.tenant, "subject": who, "limit": limit}).fetchone()["profile"]
