"""The context builder: OpenAI-style messages for one model call that fit a token budget.

:meth:`ContextBuilder.context` (``store.context``) gathers, for a query and a session, in
priority order:

1. the subject's **system rules** (current memories of category ``system``, most important
   first) with the answering instruction, always first and always whole — if they alone do
   not fit the budget, :class:`~memdb.core.errors.InvalidInput` says how many tokens they need;
2. **long-term memories** relevant to the query (:meth:`~memdb.MemoryStore.search`, hybrid;
   category system excluded, it is already in 1), each on its own line with its id as
   ``[mem:<uuid>]`` so an answer can cite it;
3. the session's **running summary** (what scrolled out of the conversation window);
4. the **most recent turns**, newest first, as many as fit, returned in chronological order
   (never a gap: the first turn that does not fit ends the history).

Given ``agent=``, the agent's **meta memory** (:mod:`memdb.families.meta`: its persona, limits,
abilities and lessons, kept under the subject ``agent:<name>``) is rendered into the first
system message after the rules, under "About you (the assistant):" / "关于你（助手）：", before
the profile: whole items while they fit (``max_meta_tokens`` caps its share), each with its id.

With ``include_profile=True`` the subject's **profile** (:meth:`~memdb.MemoryStore.profile`:
communication style, preferences, expertise, habits, lessons; each line with the id of the
memory it came from) is rendered into the first system message after the rules, between 1 and
2 in priority: whole items in profile order while they fit (``max_profile_tokens`` caps its
share); a memory already shown in the profile is not repeated among the memories.

Nothing is ever cut mid-item: an item (a memory, the summary, a turn) is in whole or left out,
and a lower-priority item that fits is still taken after a larger one was left out (except
turns, which must stay contiguous). Every message's cost is counted on its final text
(:func:`memdb.core.tokens.message_tokens`: content tokens + a per-message overhead), so the total
never exceeds ``budget_tokens`` with the counter used. :func:`assemble` does the packing with
no I/O.

The instruction ("answer only from the memories given, cite their ids, say so when they are
missing") is configurable: ``instructions="auto"`` picks Chinese or English by the query's
script, a string replaces it, None leaves it out.

>>> ctx = store.context("用户喜欢喝什么？", session="s1", budget_tokens=800)        # doctest: +SKIP
>>> client.chat.completions.create(model=..., messages=ctx.messages)              # doctest: +SKIP
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core import sql
from ..core import validate as v
from ..core.errors import InvalidInput, NotFound
from ..core.models import Category
from ..core.tokens import MESSAGE_OVERHEAD, counter_or_default
from ..retrieval.profile import TITLES, profile_items
from .meta import TITLES as META_TITLES
from .meta import agent_subject, meta_items

__all__ = ["ContextBuilder", "Context", "Item", "assemble", "INSTRUCTIONS", "TEXTS",
           "language_of"]

INSTRUCTIONS = {
    "en": ("Answer only from the memories and the conversation given here. Cite the memories "
           "you use by their ids, like [mem:<id>]. If they do not contain the answer, say that "
           "you do not know rather than guessing."),
    "zh": ("只根据这里给出的记忆和对话回答。引用用到的记忆时写出其编号，如 [mem:<id>]。"
           "如果其中没有答案，就说明你不知道，不要猜测。"),
}
TEXTS = {
    "en": {"rules": "Rules:", "memories": "Relevant memories:",
           "none": "No stored memories match this request.",
           "summary": "Summary of the earlier conversation:"},
    "zh": {"rules": "规则：", "memories": "相关记忆：", "none": "没有与此请求相关的记忆。",
           "summary": "之前对话的摘要："},
}
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]+")
MAX_BUDGET = 2_000_000


def language_of(text: str) -> str:
    """'zh' when CJK characters outnumber Latin words in ``text``, else 'en'."""
    return "zh" if len(_CJK.findall(text)) > len(_LATIN.findall(text)) else "en"


@dataclass(frozen=True, slots=True)
class Item:
    """One candidate for the context: a memory (with its id) or a turn."""

    content: str
    id: str | None = None
    role: str = "system"

    def line(self) -> str:
        text = " ".join(self.content.split())
        return f"[mem:{self.id}] {text}" if self.id else text


@dataclass(frozen=True, slots=True)
class Context:
    """The assembled messages and how they were chosen.

    ``messages``: OpenAI-style dicts, ready for ``chat.completions.create``; ``tokens``: what
    they cost with the counter used (<= ``budget``); ``memory_ids`` / ``rule_ids`` /
    ``profile_ids``: ids of the memories, rules and profile items included (cite-able);
    ``included`` / ``dropped``: counts per part (rules, memories, summary, turns; profile
    and meta when asked for); ``timings_ms``: search and assembly time; ``meta_ids``: ids of
    the agent's meta memories included.
    """

    messages: list[dict[str, str]]
    tokens: int
    budget: int
    memory_ids: tuple[str, ...] = ()
    rule_ids: tuple[str, ...] = ()
    included: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    profile_ids: tuple[str, ...] = ()
    meta_ids: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"messages": self.messages, "tokens": self.tokens, "budget": self.budget,
                "memory_ids": list(self.memory_ids), "rule_ids": list(self.rule_ids),
                "profile_ids": list(self.profile_ids), "meta_ids": list(self.meta_ids),
                "included": self.included, "dropped": self.dropped,
                "timings_ms": self.timings_ms}


def _message(role: str, content: str, count: Callable[[str], int]) -> tuple[dict[str, str], int]:
    return {"role": role, "content": content}, MESSAGE_OVERHEAD + count(content)


def assemble(budget: int, *, instructions: str | None, rules: Sequence[Item] = (),
             memories: Sequence[Item] = (), summary: str = "", turns: Sequence[Item] = (),
             language: str = "en", query_message: str | None = None,
             max_memory_tokens: int | None = None,
             counter: Callable[[str], int] | None = None,
             profile: Sequence[Item] | None = None,
             max_profile_tokens: int | None = None,
             meta: Sequence[Item] | None = None,
             max_meta_tokens: int | None = None) -> Context:
    """Pack the parts into at most ``budget`` tokens in priority order (see the module
    docstring). No I/O. ``query_message``: a final user message that must be included, like
    the rules. Raises InvalidInput when the mandatory part (instructions, rules, query)
    alone exceeds the budget. ``profile``: profile items (``content`` already labelled) packed
    into the first system message under its title, whole, while they fit."""
    count = counter_or_default(counter)
    texts = TEXTS[language]
    included = {"rules": 0, "memories": 0, "summary": 0, "turns": 0}
    dropped = dict(included)

    head_parts = [instructions] if instructions else []
    if rules:
        head_parts.append("\n".join([texts["rules"], *(f"- {r.line()}" for r in rules)]))
    mandatory: list[tuple[dict[str, str], int]] = []
    if head_parts:
        mandatory.append(_message("system", "\n\n".join(head_parts), count))
    tail = _message("user", query_message, count) if query_message else None
    need = sum(c for _, c in mandatory) + (tail[1] if tail else 0)
    if need > budget:
        raise InvalidInput(f"budget_tokens={budget} is too small for the instructions, system "
                           f"rules and query, which need {need} tokens")
    included["rules"] = len(rules)
    meta_ids: list[str] = []
    if meta is not None:  # the agent's meta memory, after the rules, before the profile
        head, meta_ids = _pack_profile(mandatory[0] if mandatory else None, head_parts, meta,
                                       budget - need, max_meta_tokens, language, count,
                                       META_TITLES)
        included["meta"] = len(meta_ids)
        dropped["meta"] = len(meta) - len(meta_ids)
        if meta_ids:
            need += head[1] - (mandatory[0][1] if mandatory else 0)
            mandatory[:1] = [head]
            head_parts = [head[0]["content"]]
            memories = [m for m in memories if m.id not in meta_ids]
    profile_ids: list[str] = []
    if profile is not None:
        head, profile_ids = _pack_profile(mandatory[0] if mandatory else None, head_parts,
                                          profile, budget - need, max_profile_tokens,
                                          language, count)
        included["profile"] = len(profile_ids)
        dropped["profile"] = len(profile) - len(profile_ids)
        if profile_ids:
            need += head[1] - (mandatory[0][1] if mandatory else 0)
            mandatory[:1] = [head]
            shown = set(profile_ids)
            memories = [m for m in memories if m.id not in shown]
    remaining = budget - need
    messages = [m for m, _ in mandatory]

    # 2. long-term memories, whole items in rank order
    cap = remaining if max_memory_tokens is None else min(remaining, max_memory_tokens)
    lines, kept, cost = _pack_lines(texts["memories"], memories, cap, count)
    dropped["memories"] = len(memories) - len(kept)
    if lines:
        messages.append({"role": "system", "content": "\n".join([texts["memories"], *lines])})
        remaining -= cost
    else:
        note, c = _message("system", texts["none"], count)
        if instructions and c <= remaining:  # tell the model the memories are missing
            messages.append(note)
            remaining -= c
    included["memories"] = len(kept)

    # 3. the running summary, whole or not at all
    if summary.strip():
        msg, c = _message("system", f"{texts['summary']}\n{summary.strip()}", count)
        if c <= remaining:
            messages.append(msg)
            remaining -= c
            included["summary"] = 1
        else:
            dropped["summary"] = 1

    # 4. the most recent turns, contiguous, newest first
    recent: list[dict[str, str]] = []
    for n, turn in enumerate(reversed(turns)):
        msg, c = _message(turn.role, turn.content, count)
        if c > remaining:
            dropped["turns"] = len(turns) - n
            break
        recent.append(msg)
        remaining -= c
    included["turns"] = len(recent)
    messages.extend(reversed(recent))
    if tail:
        messages.append(tail[0])
    total = budget - remaining  # every message's cost was counted on its final text
    return Context(messages=messages, tokens=total, budget=budget, memory_ids=tuple(kept),
                   rule_ids=tuple(r.id or "" for r in rules), included=included,
                   dropped=dropped, profile_ids=tuple(profile_ids), meta_ids=tuple(meta_ids))


def _pack_profile(head: tuple[dict[str, str], int] | None, head_parts: list[str],
                  profile: Sequence[Item], spare: int, cap: int | None, language: str,
                  count: Callable[[str], int], titles: dict[str, str] = TITLES
                  ) -> tuple[tuple[dict[str, str], int], list[str]]:
    """The first system message with as many whole profile lines (in order) as fit in
    ``spare`` more tokens (and ``cap``, if given) than it costs now; (message and its exact
    cost, ids of the items kept). Candidates are accepted on an additive bound (a line's
    tokens + 1 for its newline) and counted exactly only when the bound is over; the final
    message is counted exactly, dropping lines from the end should a counter break the
    bound."""
    base_cost = head[1] if head else 0
    limit = base_cost + (spare if cap is None else min(spare, cap))
    title = titles.get(language, titles["en"])

    def render(lines: list[str]) -> tuple[dict[str, str], int]:
        return _message("system", "\n\n".join([*head_parts, "\n".join([title, *lines])]),
                        count)

    lines: list[str] = []
    ids: list[str] = []
    bound = render([])[1]
    for item in profile:
        line = f"- {item.line()}"
        step = count(line) + 1
        if bound + step <= limit or render([*lines, line])[1] <= limit:
            lines.append(line)
            ids.append(item.id or "")
            bound += step
    while lines:
        message = render(lines)
        if message[1] <= limit:
            return message, ids
        lines.pop()
        ids.pop()
    return head or ({"role": "system", "content": ""}, 0), []


def _pack_lines(header: str, items: Sequence[Item], cap: int,
                count: Callable[[str], int]) -> tuple[list[str], list[str], int]:
    """Greedily keep whole items (in order) whose lines, joined under ``header``, fit ``cap``
    tokens as one message; returns (lines, ids, the message's exact cost).

    Fast path: a candidate is accepted on the bound OVERHEAD + count(header) + sum(count(line)
    + 1) (a newline join adds at most one token with the bundled tokenizer), and only counted
    exactly when the bound is over ``cap``. The packed message is then counted exactly; should
    a custom counter break the bound, packing is redone counting every candidate exactly.
    """
    def pack(exact: bool) -> tuple[list[str], list[str], int]:
        lines: list[str] = []
        kept: list[str] = []
        bound = MESSAGE_OVERHEAD + count(header)
        for item in items:
            line = item.line()
            step = count(line) + 1
            if not exact and bound + step <= cap:
                ok = True
            else:
                ok = MESSAGE_OVERHEAD + count("\n".join([header, *lines, line])) <= cap
            if ok:
                lines.append(line)
                kept.append(item.id or "")
                bound += step
        cost = MESSAGE_OVERHEAD + count("\n".join([header, *lines])) if lines else 0
        return lines, kept, cost

    lines, kept, cost = pack(exact=False)
    if cost > cap:
        lines, kept, cost = pack(exact=True)
    return lines, kept, cost


_NOT_SYSTEM = [c.value for c in Category if c is not Category.SYSTEM]


class ContextBuilder:
    """``context`` on :class:`~memdb.MemoryStore` (a mixin of its core verbs; the session's
    turns and token counter come from ``store.sessions``)."""

    tenant: str
    subject: str | None

    def context(self, query: str, session: str | None = None,
                      budget_tokens: int = 2000, *, subject: str | None = None, k: int = 10,
                      instructions: str | None = "auto", include_query: bool = False,
                      max_memory_tokens: int | None = None, max_rules: int = 100,
                      counter: Callable[[str], int] | None = None,
                      include_profile: bool = False, max_profile_tokens: int | None = None,
                      profile_limit: int = 10, agent: str | None = None,
                      max_meta_tokens: int | None = None, meta_limit: int = 10,
                      **search: Any) -> Context:
        """Messages for answering ``query`` in ``session`` within ``budget_tokens`` (see the
        module docstring for the order and the guarantees).

        ``subject``: whose rules, memories and session (default: the store's, else
        'default'); ``k``: how many memories to search for; ``instructions``: "auto" (Chinese
        or English by the query), your own text, or None; ``include_query``: end with the
        query as a user message (mandatory, like the rules); ``max_memory_tokens``: a cap
        on the memories' share; ``counter``: a token counter (default
        :func:`memdb.core.tokens.count_tokens`); ``include_profile``: render the subject's
        profile (at most ``profile_limit`` items per section, at most ``max_profile_tokens``)
        into the system message after the rules; ``agent``: render that agent's meta memory
        (:mod:`memdb.families.meta`; at most ``meta_limit`` items per aspect, at most
        ``max_meta_tokens``) after the rules, before the profile; other keywords go to
        :meth:`~memdb.MemoryStore.search` (routes, weights, mmr, tags, ...).
        """
        if not isinstance(query, str):
            raise InvalidInput("query must be a string")
        v.positive_int(budget_tokens, "budget_tokens", MAX_BUDGET)
        v.positive_int(k, "k", 1000)
        v.positive_int(max_rules, "max_rules", 10_000)
        if max_memory_tokens is not None:
            v.positive_int(max_memory_tokens, "max_memory_tokens", MAX_BUDGET)
        if not isinstance(include_profile, bool):
            raise InvalidInput("include_profile must be True or False")
        if max_profile_tokens is not None:
            v.positive_int(max_profile_tokens, "max_profile_tokens", MAX_BUDGET)
        v.positive_int(profile_limit, "profile_limit", 1000)
        meta_subject = None if agent is None else agent_subject(agent)
        if max_meta_tokens is not None:
            v.positive_int(max_meta_tokens, "max_meta_tokens", MAX_BUDGET)
        v.positive_int(meta_limit, "meta_limit", 1000)
        who = v.optional_name(subject, "subject") or self.subject or "default"
        lang = language_of(query)
        if instructions == "auto":
            instructions = INSTRUCTIONS[lang]
        elif instructions is not None:
            instructions = v.content(instructions, "instructions")
        started = time.perf_counter()
        with self.core.read() as conn:
            rules = [Item(r["content"], str(r["id"])) for r in conn.execute(
                sql.query("system_rules"),
                {"tenant": self.tenant, "subject": who, "limit": max_rules}).fetchall()]
            meta = None
            if meta_subject is not None:
                document = conn.execute(sql.query("agent_meta"), {
                    "tenant": self.tenant, "agent": meta_subject.removeprefix("agent:"),
                    "limit": meta_limit}).fetchone()["meta"]
                meta = [Item(f"({label}) {text}", mid)
                        for label, text, mid in meta_items(document, lang)]
            profile = None
            if include_profile:
                document = conn.execute(sql.query("subject_profile"), {
                    "tenant": self.tenant, "subject": who,
                    "limit": profile_limit}).fetchone()["profile"]
                shown = {r.id for r in rules}  # a style rule is already among the rules
                profile = [Item(f"({label}) {text}", mid)
                           for label, text, mid in profile_items(document, lang)
                           if mid not in shown]
        search.setdefault("category", _NOT_SYSTEM)
        hits = self.search(query, k=k, subject=who, **search) if query.strip() else []  # type: ignore[attr-defined]
        memories = [Item(h.memory.content, str(h.memory.id)) for h in hits]
        searched = time.perf_counter()
        summary, turns = "", []
        if session is not None:
            from .session import SessionWindow

            try:
                view = self.sessions.get(session, subject=who,  # type: ignore[attr-defined]
                                         window=SessionWindow(None, None))
                summary = view.summary
                turns = [Item(m.content, role=m.role) for m in view.messages]
            except NotFound:
                pass
        loaded = time.perf_counter()
        ctx = assemble(budget_tokens, instructions=instructions, rules=rules,
                       memories=memories, summary=summary, turns=turns, language=lang,
                       query_message=query if include_query else None,
                       max_memory_tokens=max_memory_tokens,
                       counter=counter or self.sessions.token_counter,  # type: ignore[attr-defined]
                       profile=profile,
                       max_profile_tokens=max_profile_tokens, meta=meta,
                       max_meta_tokens=max_meta_tokens)
        done = time.perf_counter()
        ctx.timings_ms.update({"rules_and_search": round((searched - started) * 1000, 3),
                               "session": round((loaded - searched) * 1000, 3),
                               "assemble": round((done - loaded) * 1000, 3)})
        return ctx
