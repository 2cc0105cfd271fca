"""Meta memory: what an agent knows about itself (persona, abilities, limits, lessons).

It lives in the ordinary memories table under a reserved subject per agent, ``agent:<name>``
(no table of its own, no migration), so search, history, isolation, export and erasure treat
it like any other memory. :meth:`MetaMemory.add` files a text under one **aspect**: it gets the
subject ``agent:<name>``, the aspect's category (persona → general, abilities → skills,
limits → system, lessons → patterns) and the tags ``meta`` and ``meta:<aspect>``, and passes
the store's write gate as a system statement (limits and lessons count as rules).
:meth:`MetaMemory.read` returns the agent's meta memory as one JSON document from the SQL function
``memdb.agent_meta(tenant, agent, limit)`` (the same from psql); memories written under
``agent:<name>`` by hand count too, their aspect taken from their category.

The context builder renders it into the first system message, after the rules and before the
user profile, when given the agent (``store.context(query, agent="helper")``): whole items
while they fit the budget, each with its id (``[mem:<id>] (limit) ...``).

A store confined to a subject (``MemoryStore(subject="alice")``) cannot see or write another
subject's rows, an agent's included: its meta memory reads empty and writes are Forbidden.

>>> store.meta.add("我是小助手，回答简洁", aspect="persona", agent="helper")   # doctest: +SKIP
>>> store.meta.read("helper")["persona"][0]["content"]                        # doctest: +SKIP
'我是小助手，回答简洁'
"""

from __future__ import annotations

from typing import Any

from ..core import sql
from ..core import validate as v
from ..core.errors import InvalidInput
from ..core.family import Family
from ..core.models import AddResult

__all__ = ["MetaMemory", "ASPECTS", "LABELS", "TITLES", "AGENT_PREFIX", "agent_subject",
           "meta_items"]

AGENT_PREFIX = "agent:"
# aspect -> (category, kind); the render order of the context (identity and limits first)
ASPECTS = {
    "persona": ("general", "semantic"),
    "limits": ("system", "procedural"),
    "abilities": ("skills", "semantic"),
    "lessons": ("patterns", "procedural"),
}
_ALIASES = {"ability": "abilities", "limit": "limits", "lesson": "lessons"}
LABELS = {
    "en": {"persona": "persona", "limits": "limit", "abilities": "ability", "lessons": "lesson"},
    "zh": {"persona": "人设", "limits": "限制", "abilities": "能力", "lessons": "经验"},
}
TITLES = {"en": "About you (the assistant):", "zh": "关于你（助手）："}
MAX_LIMIT = 1000
_SET_BY_ASPECT = ("subject", "category", "kind")


def agent_subject(agent: object) -> str:
    """The reserved subject of an agent's meta memory: ``agent:<name>`` (``agent`` given with
    or without the prefix)."""
    name = v.name(agent, "agent")
    name = name.removeprefix(AGENT_PREFIX)
    if not name.strip():
        raise InvalidInput("agent must name an agent, such as 'helper'")
    return AGENT_PREFIX + name


def aspect_of(value: object) -> str:
    """The aspect a name stands for (persona, abilities, limits, lessons; singular too)."""
    if isinstance(value, str):
        key = _ALIASES.get(value.strip().lower(), value.strip().lower())
        if key in ASPECTS:
            return key
    raise InvalidInput(f"unknown aspect {value!r} (expected one of: {', '.join(ASPECTS)})")


def meta_items(document: dict[str, Any], language: str = "en") -> list[tuple[str, str, str]]:
    """The document's items as (label, content, memory id) in render order (aspects in
    :data:`ASPECTS` order, each by importance). No I/O."""
    labels = LABELS.get(language, LABELS["en"])
    return [(labels[aspect], str(item["content"]), str(item["id"]))
            for aspect in ASPECTS for item in document.get(aspect) or ()]


class MetaMemory(Family):
    """``store.meta``: write and read an agent's meta memory (see the module docstring)."""

    def add(self, content: str, *, aspect: str = "persona", agent: str = "default",
            reason: str | None = None, **fields: Any) -> AddResult:
        """Remember ``content`` as part of ``agent``'s ``aspect`` (persona, abilities, limits,
        lessons) through the store's write gate; ``Rejected`` if refused. Other fields as in
        :meth:`~memdb.MemoryStore.add` (importance, tags - ``meta`` and ``meta:<aspect>`` are
        added -, source_type default ``system``, source_id default ``meta:<aspect>``, ttl...);
        subject, category and kind follow from the agent and the aspect."""
        key = aspect_of(aspect)
        subject = agent_subject(agent)
        taken = sorted(set(_SET_BY_ASPECT) & set(fields))
        if taken:
            raise InvalidInput(f"{', '.join(taken)} follow from the agent and the aspect; "
                               "leave them out")
        category, kind = ASPECTS[key]
        tags = list(v.tags(fields.pop("tags", None) or []))
        tags += [t for t in ("meta", f"meta:{key}") if t not in tags]
        fields.setdefault("source_type", "system")
        fields.setdefault("source_id", f"meta:{key}")
        fields.setdefault("agent", subject.removeprefix(AGENT_PREFIX))
        if kind == "procedural":  # a limit or a lesson is a rule the agent keeps
            fields.setdefault("rule", True)
        return self._store.add(content, subject=subject, category=category, kind=kind,
                               tags=tags, reason=reason, **fields)

    def read(self, agent: str = "default", *, limit: int = 20) -> dict[str, Any]:
        """``agent``'s meta memory as one JSON document: ``persona``, ``abilities``,
        ``limits``, ``lessons`` (each a list of ``{"id", "content", "category",
        "importance", "updated_at"}``, at most ``limit``), ``memory_ids``, ``counts``."""
        name = agent_subject(agent).removeprefix(AGENT_PREFIX)
        v.positive_int(limit, "limit", MAX_LIMIT)
        with self._core.read() as conn:
            return conn.execute(sql.query("agent_meta"), {
                "tenant": self._store.tenant, "agent": name, "limit": limit}).fetchone()["meta"]
