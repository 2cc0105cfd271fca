"""The write gate: may this be remembered, and as what?

A :class:`WritePolicy` is a plain, frozen, configurable Python object; ``policy.decide(item)``
returns a :class:`Decision` (``accepted`` | ``hypothesis`` | ``rejected``, the reasons, and
the item as it will be written: confidence, status and TTL adjusted). It does no I/O, so it can
be tested, tuned and dry-run without a database. :class:`memdb.MemoryStore` applies it to every
write unless the caller passes ``bypass_gate=True`` (or ``gate=None``).

What the gate treats as what (each item has exactly one role):

* **working** memory (kind ``working``): a scratchpad. Only the length and filler checks apply;
  no source is needed.
* **rule**: kind ``procedural``, category ``system``, or ``rule=True`` on the input. A rule must
  be generalizable: it contains a rule cue (if/when/must/always/never/should/do not...,
  如果/当/必须/总是/不要/禁止/不能/每次/务必...) unless ``rule=True`` says so explicitly.
* **fact**: everything else (kind ``semantic`` or ``episodic``: knowledge, preferences,
  profile attributes, events).

Checks, in order; a rejected item gets every reason that applies:

1. filler (``ok``, ``thanks``, ``好的``, ``哈哈``...: the whole text, punctuation ignored) and
   too-short text (``min_weight``: a CJK character weighs 2, any other non-space character 1)
   are refused, whatever the role;
2. facts and rules need a ``source_id`` (a user turn, a tool output, a document) when
   ``require_source_id`` (the default);
3. rules without a cue and without ``rule=True`` are refused;
4. hedged statements (我猜, 可能 (not 不可能), 大概, 也许, maybe, probably, I think...) are
   refused as facts and rules unless their source type is one of ``hedge_trusted_sources``
   (document, tool output, system by default: a user guessing is not a fact);
5. ``model_inference`` is never stored as a fact or rule: with ``model_inference="hypothesis"``
   (the default) it is accepted as a *hypothesis* (status ``hypothesis``, confidence at most
   ``hypothesis_confidence``, TTL ``ttl.hypothesis``), with ``"reject"`` it is refused.

Accepted items without ``ttl``/``expires_at`` get the TTL default of their class
(:class:`TTLDefaults`): working memory 24 h, hypotheses 7 days, reflections 180 days, events
(category ``events`` or kind ``episodic``) a year; knowledge, rules, preferences and stable
personal facts none. A *reflection* is a memory in category ``patterns`` tagged
``reflection`` (or with metadata ``{"reflection": true}``). A *stable personal fact*
(class ``profile``) is a fact with a profile cue (``profile_cues_en/zh``: a birthday or
birth date, an allergy, a name, where someone lives or comes from, blood type, mother
tongue...): "Alice 的生日是 5 月 3 日" is classified as an event but does not expire.

Facts phrased as corrections ("not A, B", "actually B, not A", 不是A，是B, 不是A而是B) are
marked (``Decision.correction``): the store then supersedes the memory they correct instead of
adding beside it. The policy also carries the store's write settings: the near-duplicate
cosine threshold, the correction-match threshold and the source-strength order used when a
duplicate is bumped.

>>> WritePolicy().decide(MemoryInput("我猜他住在北京", source_id="turn-1")).outcome
'rejected'
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..core.corrections import Correction, detect_correction
from ..core.errors import InvalidInput
from ..core.models import Category, Kind, SourceType
from .inputs import MemoryInput, as_input

__all__ = ["WritePolicy", "TTLDefaults", "Decision", "Correction", "DEFAULT_POLICY",
           "item_role", "detect_correction"]

HOUR = 3600.0
DAY = 24 * HOUR

Outcome = Literal["accepted", "hypothesis", "rejected"]
Role = Literal["working", "rule", "fact"]

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")
_PUNCT_SPACE = re.compile(r"[\s\W_]+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class TTLDefaults:
    """Seconds a memory lives when the write names no ``ttl``/``expires_at`` (None: forever)."""

    working: float | None = 24 * HOUR
    hypothesis: float | None = 7 * DAY
    reflection: float | None = 180 * DAY
    event: float | None = 365 * DAY
    profile: float | None = None
    knowledge: float | None = None
    rule: float | None = None
    preference: float | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """The gate's verdict on one item.

    ``outcome``: accepted | hypothesis | rejected. ``reasons``: ``"code: explanation"``
    strings (codes: filler, too_short, no_source, not_generalizable, hedged,
    model_inference, ttl_default, correction, bypassed). ``item``: the input as it will be
    written (None when rejected). ``role``: working | rule | fact.
    """

    outcome: Outcome
    reasons: tuple[str, ...]
    item: MemoryInput | None
    role: Role
    ttl_class: str | None = None
    correction: Correction | None = None

    @property
    def accepted(self) -> bool:
        return self.outcome != "rejected"

    @property
    def codes(self) -> tuple[str, ...]:
        """The reason codes alone (``"no_source"``...)."""
        return tuple(r.split(":", 1)[0] for r in self.reasons)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"outcome": self.outcome, "reasons": list(self.reasons),
                               "role": self.role, "ttl_class": self.ttl_class}
        if self.correction is not None:
            out["correction"] = {"old": self.correction.old, "new": self.correction.new}
        if self.item is not None:
            out["status"] = self.item.status
            out["confidence"] = self.item.confidence
            ttl = self.item.ttl
            out["ttl_seconds"] = ttl.total_seconds() if hasattr(ttl, "total_seconds") else ttl
        return out


_FILLER = frozenset({
    "ok", "okay", "k", "kk", "yes", "no", "yeah", "yep", "nope", "sure", "thanks", "thank you",
    "thx", "lol", "haha", "hmm", "hm", "um", "uh", "cool", "nice", "great", "got it", "i see",
    "hi", "hello", "hey", "bye", "好", "好的", "好吧", "嗯", "嗯嗯", "哦", "噢", "啊", "哈哈",
    "哈哈哈", "呵呵", "谢谢", "多谢", "收到", "明白", "明白了", "知道了", "行", "可以", "对",
    "是的", "没问题", "你好", "再见", "拜拜",
})

_NEGATED_POSSIBLE = "(?<!不)"  # 不可能 (impossible) is certain, not a hedge


@dataclass(frozen=True)
class WritePolicy:
    """Every threshold and word list of the write gate (see the module docstring).

    ``min_weight``: shortest accepted text (CJK characters weigh 2, other non-space characters
    1). ``filler``: whole texts refused as filler (compared lower-cased, punctuation removed).
    ``hedge_cues_en`` / ``hedge_cues_zh``, ``rule_cues_en`` / ``rule_cues_zh``: regular
    expressions (English ones are matched as whole words, case-insensitive).
    ``model_inference``: 'hypothesis' or 'reject'. ``hypothesis_confidence``: the most a
    hypothesis may claim. ``require_source_id``: facts and rules need one.
    ``hedge_trusted_sources``: source types whose hedged statements are still facts.
    ``near_dup_threshold``: cosine at or above which a write merges into an existing memory of
    the same subject and category (None: off); the store also requires the two texts to
    share their words (one's words contain the other's) and their negation, because the local
    model rates 前端工程师 / 后端工程师 at 0.99. ``correction_threshold``: cosine at or above
    which a correction supersedes the most similar memory when no memory contains what it
    denies. ``source_order``: strongest first; a duplicate from a stronger source raises the
    stored confidence and takes over the provenance. ``detect_corrections``: look for
    correction phrasing. ``ttl``: :class:`TTLDefaults`. ``reflection_tag``: the tag marking
    a reflection. ``profile_cues_en`` / ``profile_cues_zh``: what makes a fact a stable
    personal fact (TTL class ``profile``, never expiring by default) even when it is
    classified as an event.
    """

    min_weight: int = 6
    filler: frozenset[str] = _FILLER
    hedge_cues_en: tuple[str, ...] = ("maybe", "probably", "perhaps", "possibly", "i think",
                                      "i guess", "i suppose", "i believe", "might be",
                                      "not sure")
    hedge_cues_zh: tuple[str, ...] = ("我猜", _NEGATED_POSSIBLE + "可能", "大概", "也许",
                                      "或许", "估计", "好像", "说不定", "应该是", "我觉得")
    rule_cues_en: tuple[str, ...] = ("if", "when", "whenever", "must", "always", "never",
                                     "should", "do not", "don't", "only", "unless", "before",
                                     "after")
    rule_cues_zh: tuple[str, ...] = ("如果", "(?<![相适妥恰])当(?![然时前地天年初中])", "必须",
                                     "总是", "不要", "禁止", "不能", "每次", "务必", "一律",
                                     "始终", "永远", "不得", "只能", "之前", "之后")
    model_inference: Literal["hypothesis", "reject"] = "hypothesis"
    hypothesis_confidence: float = 0.3
    require_source_id: bool = True
    hedge_trusted_sources: frozenset[str] = frozenset({"document", "tool_observation", "system"})
    near_dup_threshold: float | None = 0.95
    correction_threshold: float = 0.93
    detect_corrections: bool = True
    source_order: tuple[str, ...] = ("system", "user_statement", "document",
                                     "tool_observation", "model_inference")
    ttl: TTLDefaults = field(default_factory=TTLDefaults)
    reflection_tag: str = "reflection"
    profile_cues_en: tuple[str, ...] = (
        "birthday is", "birthday's", "birthday falls", "born on", "born in", "date of birth",
        "birth date", "birthdate", "allergic", "allergy", "allergies", "intolerant",
        "name is", "name's", "named", "goes by", "lives in", "lives at", "live in",
        "living in", "hometown", "home town", "grew up in", "is from", "am from", "are from",
        "comes from", "come from", "blood type", "nationality", "native language",
        "mother tongue")
    profile_cues_zh: tuple[str, ...] = (
        "生日(?:是|在|为|[:：])", "出生(?:于|在|日期)", "(?<![产发])生于", "过敏", "不耐受",
        "名字(?:是|叫)", "名叫", "叫做", "住在", "家住", "住址", "家在", "老家", "籍贯",
        "来自", "血型", "母语", "国籍")

    def __post_init__(self) -> None:
        if self.model_inference not in ("hypothesis", "reject"):
            raise InvalidInput("model_inference must be 'hypothesis' or 'reject'")
        if not 0.0 <= self.hypothesis_confidence <= 1.0:
            raise InvalidInput("hypothesis_confidence must be in [0, 1]")
        for name in ("near_dup_threshold", "correction_threshold"):
            value = getattr(self, name)
            if value is not None and not -1.0 <= value <= 1.0:
                raise InvalidInput(f"{name} must be a cosine in [-1, 1]")
        if sorted(self.source_order) != sorted(s.value for s in SourceType):
            raise InvalidInput("source_order must list every source type once")
        object.__setattr__(self, "_hedge", _cue_regex(self.hedge_cues_en, self.hedge_cues_zh))
        object.__setattr__(self, "_rule", _cue_regex(self.rule_cues_en, self.rule_cues_zh))
        object.__setattr__(self, "_profile",
                           _cue_regex(self.profile_cues_en, self.profile_cues_zh))

    # -- the checks ----------------------------------------------------------------------
    def is_filler(self, text: str) -> bool:
        return _PUNCT_SPACE.sub(" ", unicodedata.normalize("NFKC", text).lower()).strip() \
            in self.filler

    def weight(self, text: str) -> int:
        """Length as the gate counts it: CJK characters 2, other non-space characters 1."""
        return sum(2 if _CJK.match(ch) else 1 for ch in text if not ch.isspace())

    def is_hedged(self, text: str) -> bool:
        return bool(self._hedge.search(text))  # type: ignore[attr-defined]

    def has_rule_cue(self, text: str) -> bool:
        return bool(self._rule.search(text))  # type: ignore[attr-defined]

    def is_profile_fact(self, text: str) -> bool:
        """A stable personal fact (birthday, allergy, name, home...), zh or en."""
        return bool(self._profile.search(text))  # type: ignore[attr-defined]

    def ttl_class(self, item: MemoryInput, hypothesis: bool = False) -> str:
        """Which :class:`TTLDefaults` field applies to the item."""
        if hypothesis:
            return "hypothesis"
        if item.kind == Kind.WORKING:
            return "working"
        if item_role(item) == "rule":
            return "rule"
        if item.category == Category.PATTERNS and (
                self.reflection_tag in (item.tags or ())
                or (item.metadata or {}).get("reflection") is True):
            return "reflection"
        if isinstance(item.content, str) and self.is_profile_fact(item.content):
            return "profile"
        if item.category == Category.EVENTS or item.kind == Kind.EPISODIC:
            return "event"
        if item.category == Category.PREFERENCES:
            return "preference"
        return "knowledge"

    def decide(self, item: MemoryInput | dict[str, Any] | str, *,
               enforce: bool = True) -> Decision:
        """The verdict on one item. ``enforce=False`` (a bypassed gate) skips the acceptance
        checks and only applies TTL defaults and correction detection."""
        item = as_input(item)
        text = item.content if isinstance(item.content, str) else ""
        role = item_role(item)
        reasons: list[str] = []
        rejected = False
        hypothesis = item.status == "hypothesis"
        if enforce:
            if self.is_filler(text):
                reasons.append("filler: only a filler word or phrase")
                rejected = True
            elif self.weight(text) < self.min_weight:
                reasons.append(f"too_short: {self.weight(text)} < {self.min_weight} "
                               "(CJK characters count 2)")
                rejected = True
            if role != "working":
                if self.require_source_id and not item.source_id:
                    reasons.append(f"no_source: a {role} needs a source_id (the user turn, tool "
                                   "output or document it comes from)")
                    rejected = True
                if role == "rule" and not item.rule and not self.has_rule_cue(text):
                    reasons.append("not_generalizable: a rule needs a condition or modal "
                                   "(if/when/must/always/never, 如果/当/必须/总是/不要/禁止) "
                                   "or rule=True")
                    rejected = True
                inference = item.source_type == SourceType.MODEL_INFERENCE
                if inference:
                    if self.model_inference == "reject":
                        reasons.append(f"model_inference: a model inference is not stored as "
                                       f"a {role}")
                        rejected = True
                    else:
                        reasons.append("model_inference: stored as a hypothesis (low "
                                       "confidence, short TTL) until a trusted source confirms")
                        hypothesis = True
                elif (self.is_hedged(text)
                      and str(item.source_type) not in self.hedge_trusted_sources):
                    reasons.append(f"hedged: a guess ({_first(self._hedge, text)!r}) from "  # type: ignore[attr-defined]
                                   f"{item.source_type} is not stored as a {role}")
                    rejected = True
        else:
            reasons.append("bypassed: gate checks skipped by the caller")
        if rejected:
            return Decision("rejected", tuple(reasons), None, role)
        changes: dict[str, Any] = {}
        if hypothesis:
            changes["status"] = "hypothesis"
            changes["confidence"] = min(float(item.confidence), self.hypothesis_confidence)
        ttl_class = self.ttl_class(item, hypothesis)
        if item.ttl is None and item.expires_at is None:
            seconds = getattr(self.ttl, ttl_class)
            if seconds is not None:
                changes["ttl"] = seconds
                reasons.append(f"ttl_default: {_span(seconds)} for {ttl_class}")
        correction = None
        if self.detect_corrections and role == "fact":
            correction = detect_correction(text)
            if correction is not None:
                reasons.append(f"correction: replaces what said {correction.old!r}")
        adjusted = replace(item, **changes) if changes else item
        return Decision("hypothesis" if hypothesis else "accepted", tuple(reasons), adjusted,
                        role, ttl_class, correction)

    def decide_many(self, items: Iterable[MemoryInput | dict[str, Any] | str], *,
                    enforce: bool = True) -> list[Decision]:
        """One decision per item, in order; never raises for a rejection."""
        return [self.decide(i, enforce=enforce) for i in items]

    def sql_options(self) -> dict[str, Any]:
        """The write settings memdb.write_memories reads (its p_options)."""
        return {"near_dup_threshold": self.near_dup_threshold,
                "correction_threshold": self.correction_threshold,
                "source_order": list(self.source_order)}



def item_role(item: MemoryInput) -> Role:
    """working | rule | fact (see the module docstring)."""
    if item.kind == Kind.WORKING:
        return "working"
    if item.rule or item.kind == Kind.PROCEDURAL or item.category == Category.SYSTEM:
        return "rule"
    return "fact"


def _cue_regex(en: tuple[str, ...], zh: tuple[str, ...]) -> re.Pattern[str]:
    parts = [r"(?<![\w'])" + r"\s+".join(re.escape(w) for w in cue.split()) + r"(?![\w'])"
             for cue in en]
    parts += list(zh)
    return re.compile("|".join(f"(?:{p})" for p in parts) or r"(?!x)x", re.IGNORECASE)


def _first(pattern: re.Pattern[str], text: str) -> str:
    m = pattern.search(text)
    return m.group(0) if m else ""


def _span(seconds: float) -> str:
    if seconds % DAY == 0 and seconds >= 2 * DAY:
        return f"{int(seconds // DAY)} days"
    if seconds % HOUR == 0:
        return f"{int(seconds // HOUR)} h"
    return f"{seconds:g} s"


DEFAULT_POLICY = WritePolicy()
