"""Query plans: where to look before looking (which categories, which strategy, what weight).

A :class:`QueryPlan` is a frozen, JSON-serializable description of one retrieval: the intent
of the query, up to three :class:`TypedQuery` (text, categories, strategy, weight), where the
plan came from (``llm`` or ``heuristic``) and whether a fallback was taken on the way. Plans
can be logged (``plan.to_json()``), replayed (``QueryPlan.from_json``) and unit-tested;
``memdb.search_planned`` executes them in SQL.

The :func:`heuristic_plan` needs no model: Chinese and English cue words score each intent,
and the best intent maps to categories and a strategy (:data:`INTENTS`). :class:`Planner`
adds the optional LLM step (:mod:`memdb.retrieval._llm_planner`) for ambiguous queries only
(references
such as 那个/上次/that one, very short queries, close intent scores), validates what the model
returns (:func:`validate_plan`), caches plans, and falls back to the heuristic plan with
``fallback=True`` on any error, timeout or invalid output. :meth:`Planner.decompose` splits a
question joining two facts into sub-queries (search/recall option ``decompose``) the same way:
the LLM when one is configured (checked by :func:`memdb.retrieval.decompose.validate_subqueries`),
else
or on any failure the heuristic :func:`memdb.retrieval.decompose.split_query`.

>>> heuristic_plan("我喜欢喝什么茶？").intent
'preference_query'
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import InvalidInput
from ..core.models import Category
from ..write.grounding import schema_token
from .decompose import Decomposition, split_query, validate_subqueries

__all__ = ["QueryPlan", "TypedQuery", "Planner", "PlanError", "INTENTS", "STRATEGIES",
           "MAX_QUERIES", "heuristic_plan", "score_intents", "is_ambiguous", "validate_plan"]

STRATEGIES = ("exact_match", "semantic", "bm25")
MAX_QUERIES = 3
_CATEGORIES = tuple(c.value for c in Category)

# intent -> (categories searched, strategy). An empty category tuple means every category.
INTENTS: dict[str, tuple[tuple[str, ...], str]] = {
    "preference_update": (("preferences",), "semantic"),
    "preference_query": (("preferences",), "semantic"),
    "entity_recall": (("entities", "events"), "bm25"),
    "event_recall": (("events",), "semantic"),
    "decision_trace": (("events", "entities"), "semantic"),
    "rule_statement": (("system",), "bm25"),
    "skill_request": (("skills", "tools"), "semantic"),
    "tool_query": (("tools",), "semantic"),
    "pattern_query": (("patterns",), "semantic"),
    "correction": (("preferences", "entities", "events"), "semantic"),
    "new_task": (("skills", "tools"), "semantic"),
    "conflict_resolution": (("preferences", "entities", "events", "system"), "exact_match"),
    "general_chat": ((), "semantic"),
}


class PlanError(InvalidInput):
    """A plan (from the LLM or from JSON) failed validation."""


@dataclass(frozen=True, slots=True)
class TypedQuery:
    """One search of a plan: ``text`` inside ``categories`` (empty: all) with a strategy
    (exact_match | semantic | bm25) and an RRF weight in [0.1, 1]."""

    text: str
    categories: tuple[str, ...] = ()
    strategy: str = "semantic"
    weight: float = 1.0

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "categories": list(self.categories),
                "strategy": self.strategy, "weight": self.weight}


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """Where and how to search for ``query``. ``source``: llm | heuristic (| given);
    ``fallback``: the LLM was asked but its plan was not used (``reason`` says why);
    ``ambiguous``: the heuristic found the query ambiguous."""

    query: str
    intent: str
    queries: tuple[TypedQuery, ...]
    source: str = "heuristic"
    fallback: bool = False
    reason: str | None = None
    ambiguous: bool = False
    scores: Mapping[str, float] = field(default_factory=dict)

    @property
    def categories(self) -> tuple[str, ...]:
        """Every category the plan searches (empty: it searches all of them)."""
        if any(not q.categories for q in self.queries):
            return ()
        seen: dict[str, None] = {}
        for q in self.queries:
            seen.update(dict.fromkeys(q.categories))
        return tuple(seen)

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query, "intent": self.intent,
                "queries": [q.to_json() for q in self.queries], "source": self.source,
                "fallback": self.fallback, "reason": self.reason, "ambiguous": self.ambiguous,
                "scores": dict(self.scores)}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | str) -> QueryPlan:
        """A plan from its JSON (as logged or stored in a trace), validated strictly."""
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except json.JSONDecodeError as exc:
                raise PlanError(f"plan is not JSON: {exc.msg}") from None
        if not isinstance(data, Mapping) or not isinstance(data.get("query"), str):
            raise PlanError("a plan is an object with a query string")
        plan = validate_plan(data, str(data["query"]), source=str(data.get("source", "given")),
                             strict=True)
        return QueryPlan(plan.query, plan.intent, plan.queries, plan.source,
                         bool(data.get("fallback", False)), data.get("reason"),
                         bool(data.get("ambiguous", False)),
                         {str(k): float(v) for k, v in dict(data.get("scores") or {}).items()})


# -- heuristic --------------------------------------------------------------------------------
def _cues(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(patterns), re.IGNORECASE)


# intent -> [(cue, points)]; the intent with most points wins, ties in INTENTS order.
_CUES: dict[str, list[tuple[re.Pattern[str], float]]] = {
    "preference_update": [
        (_cues(r"(现在|以后|从今以后|今后|改成|换成|不再|开始)(更)?(喜欢|爱|想|要|喝|吃|用)",
               r"改(喝|吃|用)了?", r"不再(喜欢|喝|吃|用)"), 3),
        (_cues(r"\b(now|from now on|these days|no longer|anymore|switched to|changed my mind)\b.*"
               r"\b(prefer|like|love|want|drink|eat|use)", r"\bi('ve| have) (switched|moved) to\b",
               r"\b(don't|do not) (like|want|drink|eat) .* anymore\b"), 3),
    ],
    "preference_query": [
        (_cues(r"喜欢|偏好|口味|爱吃|爱喝|最爱|讨厌|忌口|爱好", r"(吃|喝|穿|看|听)(什么|啥)"), 2),
        (_cues(r"\b(prefer|preference|favou?rite|like|likes|love|enjoy|hate|dislike|taste|"
               r"hobby|hobbies)\b", r"\bwhat (does|do|did) \w+ (drink|eat|like|prefer|enjoy|"
               r"want)\b"), 2),
    ],
    "entity_recall": [
        (_cues(r"是谁|谁是|叫什么|是什么(公司|项目|人)|哪个(人|项目|公司|团队)|介绍一下|那个项目|"
               r"那个人|什么项目|哪位"), 2),
        (_cues(r"\bwho (is|was|are)\b", r"\bwhat (is|was) (the )?(name|project|company|team)\b",
               r"\btell me about\b", r"\b(which|what) (project|company|person|team)\b",
               r"\bthe project\b"), 2),
        (_cues(r"项目|同事|公司|团队|客户|经理|工程师"), 1),
        (_cues(r"\b(project|colleague|company|team|client|manager|engineer)\b"), 1),
    ],
    "event_recall": [
        (_cues(r"什么时候|何时|哪天|那天|上次|上周|上个月|昨天|去年|发生了什么|开会|会议|(去|做)了什么|"
               r"之前.*(做|去|说)"), 2),
        (_cues(r"\bwhen (did|was|is|were)\b", r"\bwhat happened\b", r"\blast (time|week|month|"
               r"year|meeting)\b", r"\byesterday\b",
               r"\b(meeting|trip|visit|went|attended|did)\b"), 2),
    ],
    "decision_trace": [
        (_cues(r"为什么.{0,6}(决定|选|选择|采用|用|改|放弃|换)",
               r"(决定|选择|选型|拍板)的?(原因|理由|依据)",
               r"怎么(决定|定下来)", r"谁决定", r"当初(为什么|怎么)",
               # what was decided and on what grounds (决定了什么, 出于什么考虑, 依据是什么)
               r"决定了?(什么|哪些|啥)", r"(哪些|什么|几个)决定", r"拍板", r"决定(用|采用|选)",
               r"(出于|基于)(什么|哪些)(考虑|原因|理由)", r"(依据|理由)是什么",
               r"(为啥|为什么).{0,6}定", r"定了(什么|哪个|啥)", r"怎么定的"), 3),
        (_cues(r"\bwhy (did|do) (we|you|i|they) (choose|pick|decide|use|go with|switch|drop)\b",
               r"\b(decision|decisions|decide|decided|rationale|reasoning behind|trade-?off)\b",
               r"\breasons? (for|behind)\b", r"\bwhat led (us|you|them|me|the team) to\b",
               r"\bend(ed)? up (choosing|picking|going with|using)\b", r"\bsettled? on\b",
               r"\bagreed? on\b", r"\bmade the call\b", r"\bwhat made (us|you|them|me|the team)\b"),
         3),
    ],
    "rule_statement": [
        (_cues(r"记住[:：]?.*(不要|不能|必须|永远|始终|禁止)",
               r"^(不要|不能|禁止|永远不要|务必|必须|始终)",
               r"规则|规定|约定|原则|规矩|禁忌", r"可以.*吗[？?]?$",
               # questions about what is not allowed or required: 有什么不能做的 / 哪些是被禁止的
               r"(什么|哪些).{0,6}(不能|不可以|不允许|不准|不许|禁止|限制|要求)",
               r"不(能|可以|允许|准|许)(做|干|碰)(的|哪些|什么)", r"遵守|遵循",
               r"能不能|可不可以|是否允许"),
         3),
        (_cues(r"^(never|always|don't|do not|must)\b", r"\b(rule|policy|guideline|allowed|"
               r"permitted|forbidden)\b", r"\bremember (to|that|not)\b",
               r"\b(off-limits|off limits|restrictions?|requirements?|prohibited)\b",
               r"\b(must|should) (i|we|you) (never|not|avoid)\b", r"\bmust(n't| not)\b",
               r"\bis it (ok|okay|fine|alright) (to|if)\b", r"^(can|may) (i|we)\b"), 3),
    ],
    "skill_request": [
        (_cues(r"怎么(做|弄|办|部署|配置|安装|写|实现|用)", r"如何", r"步骤|流程|教程|方法"), 3),
        (_cues(r"\bhow (do|can|should|to) (i|we|you)?\b", r"\bhow to\b", r"\b(steps?|procedure|"
               r"recipe|tutorial|guide)\b"), 3),
    ],
    "tool_query": [
        (_cues(r"(用|使用)(的)?(什么|哪个|哪种)(工具|编辑器|数据库|框架|语言|命令|版本|终端)",
               r"工具|编辑器|命令|配置|插件|快捷键|版本号|端口"), 2),
        (_cues(r"\b(which|what) (tool|editor|database|framework|library|command|version|shell|"
               r"ide)\b", r"\b(config|configuration|plugin|shortcut|alias|port)\b"), 2),
    ],
    "pattern_query": [
        (_cues(r"通常|一般|经常|习惯|多久|每天|每周|每次|几点"), 2),
        (_cues(r"\b(usually|typically|often|habit|routine|every (day|week|morning)|how often)\b"),
         2),
    ],
    "correction": [
        (_cues(r"不对|错了|说错|其实是|更正|纠正|应该是|不是.*而是"), 4),
        (_cues(r"\b(actually|correction|that's wrong|that is wrong|not .* but|i meant|"
               r"should be|mistake)\b"), 4),
    ],
    "new_task": [
        (_cues(r"^(帮我|请帮我|帮忙|我们来|开始|新任务|新建|写一个|做一个)",
               r"帮我(写|做|建|查|改|整理)"), 3),
        (_cues(r"^(help me|please (write|create|build|make)|let's (start|build|write|create)|"
               r"new task|can you (write|create|build|make))\b"), 3),
    ],
    "conflict_resolution": [
        (_cues(r"哪个(是对|对|准确|正确)", r"矛盾|冲突|不一致|两个说法|到底是"), 4),
        (_cues(r"\b(which is (right|correct|true)|conflict|contradict|inconsistent|"
               r"both say|which one is)\b"), 4),
    ],
    "general_chat": [
        (_cues(r"^(你好|嗨|谢谢|早上好|晚安|哈哈)", r"^(hi|hello|hey|thanks|thank you|good "
               r"(morning|night))\b"), 2),
    ],
}

# references that need the conversation to resolve, and fillers removed from search texts
_REFERENCE = _cues(r"那个|这个|那件|那次|上次|之前那|它|他们|她们", r"\b(that one|that|it|the one|"
                   r"last time|previous|earlier|those|them|this one)\b")
_FILLER = _cues(r"上次那个|上次的|那个|这个|那次|上次|之前|请问|一下|我们的|我的",
                r"吗|呢|吧|啊|[？?！!。，,]",
                r"\b(the one|that one|from last time|last time|please|tell me|do you remember|"
                r"remember)\b")
_IDENTIFIER = re.compile(r"[\"“'‘「『]([^\"”'’」』]{2,60})[\"”'’」』]"
                         r"|(?<![A-Za-z0-9_.-])([A-Za-z][A-Za-z0-9]*[A-Z_.-][A-Za-z0-9_.-]*|"
                         r"[A-Za-z]+[0-9][A-Za-z0-9.-]*)(?![A-Za-z0-9_])")
_CJK = re.compile(r"[\u3400-\u9fff]")


def score_intents(query: str) -> dict[str, float]:
    """Points per intent from the cue words found in ``query`` (only intents with points)."""
    scores: dict[str, float] = {}
    for intent, cues in _CUES.items():
        points = sum(p for rx, p in cues if rx.search(query))
        if points:
            scores[intent] = float(points)
    return scores


def is_ambiguous(query: str, scores: Mapping[str, float] | None = None) -> bool:
    """True when the heuristic should not be trusted alone: a reference (那个/上次/that one),
    a very short query (under 5 CJK characters or 3 words), or two intents within one point."""
    scores = score_intents(query) if scores is None else scores
    if _REFERENCE.search(query):
        return True
    cjk = len(_CJK.findall(query))
    if (cjk and cjk < 5 and len(query.split()) < 3) or (not cjk and len(query.split()) < 3):
        return True
    top = sorted(scores.values(), reverse=True)
    return len(top) >= 2 and top[0] - top[1] < 1.0


def _search_text(query: str) -> str:
    cleaned = " ".join(_FILLER.sub(" ", query).split())
    return cleaned if len(cleaned) >= 2 else query.strip()


def heuristic_plan(query: str) -> QueryPlan:
    """The model-free plan: best-scoring intent → its categories and strategy, a second
    exact-match query for quoted text or identifiers (``Phoenix-2``, ``"周报模板"``), and for
    a new task a look at the rules (system) as well."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query must be a non-blank string")
    scores = score_intents(query)
    order = list(INTENTS)
    intent = max(scores, key=lambda i: (scores[i], -order.index(i))) if scores else "general_chat"
    categories, strategy = INTENTS[intent]
    text = _search_text(query)
    queries = [TypedQuery(text, categories, strategy, 1.0)]
    for m in _IDENTIFIER.finditer(query):
        token = (m.group(1) or m.group(2) or "").strip()
        if token and token.lower() != text.lower() and len(queries) < MAX_QUERIES:
            queries.append(TypedQuery(token, categories, "exact_match", 0.6))
            break
    if intent == "new_task" and len(queries) < MAX_QUERIES:
        queries.append(TypedQuery(text, ("system",), "semantic", 0.5))
    return QueryPlan(query=query, intent=intent, queries=tuple(queries), source="heuristic",
                     ambiguous=is_ambiguous(query, scores), scores=scores)


# -- validation -------------------------------------------------------------------------------
def validate_plan(data: Any, query: str, *, source: str = "llm", strict: bool = False) -> QueryPlan:
    """A QueryPlan from untrusted JSON (an LLM's answer, a replayed log).

    Unknown intents are rejected (PlanError); unknown categories are dropped (none left →
    general); unknown strategies become semantic; weights are clamped to [0.1, 1]; at most
    three queries are kept; a query text must be a non-blank string (else the user's query is
    used). From the LLM (``source="llm"``) a query text that is a schema word ("text",
    "query", ``snake_case``) or longer than four times the query plus 200 characters is
    rejected (PlanError): the model echoed the form or ran on. ``strict`` (replay) also keeps
    an empty category list as "all categories"."""
    if not isinstance(data, Mapping):
        raise PlanError("plan must be a JSON object")
    intent = data.get("intent")
    if not isinstance(intent, str) or intent not in INTENTS:
        raise PlanError(f"unknown intent {intent!r}")
    raw = data.get("queries")
    if not isinstance(raw, Sequence) or isinstance(raw, (str, bytes)) or not raw:
        raise PlanError("plan needs a non-empty list of queries")
    queries = []
    for item in list(raw)[:MAX_QUERIES]:
        if not isinstance(item, Mapping):
            raise PlanError("each query must be an object")
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            text = query
        text = text.strip()
        if source == "llm" and (schema_token(text) or len(text) > 4 * len(query) + 200):
            raise PlanError("a planned query text is a schema word or runs on")
        text = text[:1000]
        cats_raw = item.get("categories")
        if isinstance(cats_raw, str):
            cats_raw = [cats_raw]
        if not isinstance(cats_raw, Sequence):
            cats_raw = []
        cats = tuple(dict.fromkeys(c for c in cats_raw if isinstance(c, str) and c in _CATEGORIES))
        if not cats and not (strict and isinstance(cats_raw, Sequence) and not cats_raw):
            cats = ("general",)
        strategy = item.get("strategy")
        if strategy not in STRATEGIES:
            strategy = "semantic"
        weight = item.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight != weight:
            weight = 1.0
        weight = min(1.0, max(0.1, float(weight)))
        queries.append(TypedQuery(text, cats, strategy, weight))
    return QueryPlan(query=query, intent=intent, queries=tuple(queries), source=source)


# -- the planner ------------------------------------------------------------------------------
class Planner:
    """Plans queries: heuristic first; the LLM (``llm``: a
    :class:`memdb.retrieval._llm_planner.LLMPlanner`
    or anything with ``plan_json(query) -> dict``) only for ambiguous queries (``mode="auto"``),
    for every query (``"llm"``) or never (``"heuristic"``). Plans are cached (LRU)."""

    def __init__(self, llm: Any = None, *, mode: str = "auto", cache_size: int = 1024) -> None:
        if mode not in ("auto", "llm", "heuristic"):
            raise InvalidInput("planner mode must be auto, llm or heuristic")
        self.llm, self.mode, self.cache_size = llm, mode, cache_size
        self._cache: OrderedDict[str, QueryPlan] = OrderedDict()
        self._split_cache: OrderedDict[str, Decomposition] = OrderedDict()
        self._lock = threading.Lock()
        self.last_ms = 0.0

    @classmethod
    def from_env(cls) -> Planner:
        """An LLM planner when ``MEMDB_LLM_MODEL`` (and an endpoint) is configured, else the
        heuristic one (mode from ``MEMDB_PLANNER``: auto, llm or heuristic)."""
        import os

        from ._llm_planner import LLMPlanner

        mode = os.environ.get("MEMDB_PLANNER", "auto")
        llm = LLMPlanner.from_env() if mode != "heuristic" else None
        return cls(llm, mode=mode if llm is not None else "heuristic")

    def plan(self, query: str) -> QueryPlan:
        """The plan for ``query`` (never raises for planner failures: see the module doc)."""
        started = time.perf_counter()
        try:
            return self._plan(query)
        finally:
            self.last_ms = (time.perf_counter() - started) * 1000

    def _plan(self, query: str) -> QueryPlan:
        base = heuristic_plan(query)
        if self.llm is None or self.mode == "heuristic" or (self.mode == "auto"
                                                             and not base.ambiguous):
            return base
        key = " ".join(query.split()).lower()
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
        try:
            plan = validate_plan(self.llm.plan_json(query), query, source="llm")
            plan = QueryPlan(plan.query, plan.intent, plan.queries, "llm", False, None,
                             base.ambiguous, base.scores)
        except Exception as exc:  # noqa: BLE001 - any failure means: use the heuristic plan
            reason = _failure(exc)
            return QueryPlan(base.query, base.intent, base.queries, "heuristic", True, reason,
                             base.ambiguous, base.scores)
        with self._lock:
            self._cache[key] = plan
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return plan


    def decompose(self, query: str) -> Decomposition:
        """The sub-queries of ``query`` (search/recall option ``decompose``; never raises for
        LLM failures). With an LLM (mode auto or llm, and an LLM that has
        ``decompose_json(query)``, as :class:`memdb.retrieval._llm_planner.LLMPlanner` does) the
        model
        splits every query it is given, its reply checked by
        :func:`memdb.retrieval.decompose.validate_subqueries` (an empty list is a valid "does not
        split"); on any error, timeout or refused reply the heuristic
        :func:`memdb.retrieval.decompose.split_query` is used, with ``fallback=True`` and the reason
        (decompose_timeout, decompose_invalid, decompose_error). Without an LLM (or in mode
        heuristic): the heuristic split. LLM answers are cached (LRU) like plans."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query must be a non-blank string")
        if self.llm is None or self.mode == "heuristic" or not hasattr(self.llm,
                                                                        "decompose_json"):
            return Decomposition(query, tuple(split_query(query)))
        key = " ".join(query.split()).lower()
        with self._lock:
            cached = self._split_cache.get(key)
            if cached is not None:
                self._split_cache.move_to_end(key)
                return Decomposition(query, cached.subqueries, "llm")
        try:
            subs = validate_subqueries(self.llm.decompose_json(query), query)
        except Exception as exc:  # noqa: BLE001 - any failure means: the heuristic split
            reason = _failure(exc).replace("planner_", "decompose_")
            return Decomposition(query, tuple(split_query(query)), "heuristic", True, reason)
        out = Decomposition(query, tuple(subs), "llm")
        with self._lock:
            self._split_cache[key] = out
            while len(self._split_cache) > self.cache_size:
                self._split_cache.popitem(last=False)
        return out


def _failure(exc: BaseException) -> str:
    """A short, secret-free reason: planner_timeout, planner_invalid or planner_error."""
    name = type(exc).__name__.lower()
    if "timeout" in name or isinstance(exc, TimeoutError) \
            or getattr(exc, "kind", None) == "timeout":  # memdb.core.llm.LLMError
        return "planner_timeout"
    if isinstance(exc, (PlanError, json.JSONDecodeError, ValueError, KeyError, TypeError)) \
            or getattr(exc, "kind", None) in ("bad_response", "truncated", "looping"):
        return "planner_invalid"
    return "planner_error"
