"""Which directory (category) a memory belongs in, decided at write time without a model.

Three steps, first match wins:

1. an explicit category (kept as given), or a type mapping: ``metadata["type"]`` such as
   ``"rule"`` → system, ``"preference"`` → preferences (:data:`TYPE_MAP`);
2. keyword rules in Chinese and English, checked in priority order (system, preferences,
   skills, events, tools, patterns, entities) with ``system`` first, so a
   rule that mentions a tool (不能把密钥提交到git) lands in system, not tools (:data:`RULES`);
3. ``general``.

Every classification carries :data:`TAG_VERSION`: change the rules, bump it, and
``memdb classify --backfill`` re-classifies the memories classified by older rules.

>>> classify("不能把密钥提交到git").category
<Category.SYSTEM: 'system'>
>>> classify("I prefer green tea").category
<Category.PREFERENCES: 'preferences'>
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.models import Category

__all__ = ["TAG_VERSION", "TYPE_MAP", "RULES", "Classification", "classify", "category_fields",
           "uri_prefix"]

# Bump when RULES or TYPE_MAP change in a way that moves memories.
TAG_VERSION = 2  # 2: epistemic 'must' (must have been, must be so...) is not a rule

TYPE_MAP: dict[str, Category] = {
    "rule": Category.SYSTEM, "policy": Category.SYSTEM, "constraint": Category.SYSTEM,
    "instruction": Category.SYSTEM, "system": Category.SYSTEM,
    "preference": Category.PREFERENCES, "like": Category.PREFERENCES,
    "person": Category.ENTITIES, "entity": Category.ENTITIES, "project": Category.ENTITIES,
    "organization": Category.ENTITIES, "fact": Category.ENTITIES,
    "event": Category.EVENTS, "decision": Category.EVENTS, "meeting": Category.EVENTS,
    "episode": Category.EVENTS,
    "pattern": Category.PATTERNS, "habit": Category.PATTERNS, "routine": Category.PATTERNS,
    "tool": Category.TOOLS, "config": Category.TOOLS, "command": Category.TOOLS,
    "skill": Category.SKILLS, "howto": Category.SKILLS, "procedure": Category.SKILLS,
    "recipe": Category.SKILLS,
}


# "must" as a guess, not an obligation: "must have been", "must've", "must feel", "must be so
# (really, such ...) <adjective>", "a must-see", "a must if/for ..." - chat is full of them
# ("That must have been awesome!"), and as rules they would be boosted over real memories.
_NOT_EPISTEMIC = (
    r"(?!'ve\b|-|\s+(?:have|feel|felt|love|really|surely|also)\b"
    r"|\s+be\s+(?:so|really|such|quite|very|pretty|super|great|nice|fun|hard|tough|awesome|"
    r"amazing|exciting|incredible|scary|challenging|wonderful|lovely|cool|good|lucky|proud|"
    r"tired|busy|interesting|special|difficult|crazy|sad|rough|frustrating)\b"
    r"|\s*[.,!?]|\s*$|\s+(?:if|for)\b)\b")


def _rx(*parts: str) -> re.Pattern[str]:
    return re.compile("|".join(parts), re.IGNORECASE)


# (category, rule name, pattern), in priority order: the first pattern that matches decides.
RULES: tuple[tuple[Category, str, re.Pattern[str]], ...] = (
    (Category.SYSTEM, "system.zh", _rx(
        r"禁止|严禁|务必|必须|不得|不允许|一律|永远不要|绝不|千万不要|规则|规定",
        r"不能(把|将|在|提交|泄露|上传|公开|暴露|删除|直接|使用|用)",
        r"不要(把|将|在|提交|泄露|上传|公开|暴露|删除|直接)",
        r"(请|要)?(始终|总是|一直)(用|使用|以|回答|回复)", r"回答(时|用|要)", r"回复(时|用)")),
    (Category.SYSTEM, "system.en", _rx(
        r"^\s*(always|never|do not|don't|must|please always|please never)\b",
        r"\bmust" + _NOT_EPISTEMIC,
        r"\b(mustn't|shall not|is not allowed|are not allowed|is forbidden|"
        r"are forbidden|is prohibited|not permitted)\b",
        r"\bnever (commit|share|expose|push|reveal|store|log|paste|upload|delete|use|run)\b",
        r"\b(rule|policy|guideline)s?\s*:", r"\balways (answer|reply|respond|use|write)\b")),
    (Category.PREFERENCES, "preferences.zh", _rx(
        r"喜欢|偏好|偏爱|爱吃|爱喝|爱看|讨厌|不爱|更愿意|倾向于|最爱|口味|忌口|不吃|不能吃|吃不了|习惯用")),
    (Category.PREFERENCES, "preferences.en", _rx(
        r"\b(prefers?|preferred|preference|likes?|liked|loves?|loved|enjoys?|hates?|dislikes?|"
        r"favou?rite|rather have|can't stand|fan of)\b")),
    (Category.SKILLS, "skills.zh", _rx(
        r"如何|怎么(做|样|才)|步骤|方法是|做法|流程|教程|技巧|第一步|先.{1,12}然后")),
    (Category.SKILLS, "skills.en", _rx(
        r"\b(how to|steps?|step-by-step|procedure|recipe|tutorial|technique|first,? .{1,40} then|"
        r"checklist)\b")),
    (Category.EVENTS, "events.zh", _rx(
        r"昨天|今天|前天|明天|上周|上个月|上次|去年|今年|刚才|刚刚|那天|\d{1,4}年|\d{1,2}月\d{1,2}[日号]",
        r"会议|开会|发生|参加|举行|发布|上线|决定|定了|讨论了|去了|见了|完成了|出差|旅行|生日")),
    (Category.EVENTS, "events.en", _rx(
        r"\b(yesterday|today|tomorrow|last (week|month|year|time|night)|ago|on (mon|tues|wednes|"
        r"thurs|fri|satur|sun)day|in (19|20)\d\d|meeting|met|went|visited|attended|launched|"
        r"released|shipped|decided|decision|happened|trip|birthday|wedding|incident)\b")),
    (Category.TOOLS, "tools.zh", _rx(
        r"工具|命令|配置|插件|快捷键|脚本|版本|安装|部署|端口|数据库|编辑器|终端|服务器|接口|密钥")),
    (Category.TOOLS, "tools.en", _rx(
        r"\b(git|github|docker|kubernetes|k8s|kubectl|vim|emacs|vs ?code|ide|cli|command|"
        r"config|configuration|plugin|shortcut|script|api|sdk|npm|pip|uv|postgres(ql)?|"
        r"redis|terminal|shell|bash|zsh|port|server|tool|library|framework|editor|install)\b")),
    (Category.PATTERNS, "patterns.zh", _rx(
        r"每天|每周|每月|每年|每次|经常|通常|一般|总是|往往|常常|习惯|规律|周[一二三四五六日末]都")),
    (Category.PATTERNS, "patterns.en", _rx(
        r"\b(usually|often|always|every (day|week|month|morning|evening|night|time|monday|"
        r"tuesday|wednesday|thursday|friday|saturday|sunday)|daily|weekly|monthly|habit|"
        r"routine|tends? to|typically|regularly)\b")),
    (Category.ENTITIES, "entities.zh", _rx(
        r"是(一[个名位家]|我的|我们的|个)|叫做?|名叫|工程师|经理|同事|老板|朋友|家人|公司|团队|项目|"
        r"住在|来自|负责|任职|擅长")),
    (Category.ENTITIES, "entities.en", _rx(
        r"\b(is an?|is my|is our|named|called|works? (at|for|on)|engineer|manager|colleague|"
        r"friend|company|team|project|lives in|from|responsible for|owner of)\b")),
)


@dataclass(frozen=True, slots=True)
class Classification:
    """The outcome: the category, why (``explicit``, ``type:<t>``, the rule's name or
    ``default``) and the rules' version (None for an explicit category)."""

    category: Category
    rule: str
    tag_version: int | None


def classify(content: str, metadata: Mapping[str, Any] | None = None,
             category: Category | str | None = None) -> Classification:
    """Classify one memory (see the module docstring). ``category`` given: kept as is."""
    if category is not None:
        return Classification(Category(category), "explicit", None)
    kind = (metadata or {}).get("type")
    if isinstance(kind, str) and kind.strip().lower() in TYPE_MAP:
        return Classification(TYPE_MAP[kind.strip().lower()], f"type:{kind.strip().lower()}",
                              TAG_VERSION)
    for cat, name, pattern in RULES:
        if pattern.search(content):
            return Classification(cat, name, TAG_VERSION)
    return Classification(Category.GENERAL, "default", TAG_VERSION)


def category_fields(content: Any, metadata: Any, category: Any) -> dict[str, Any]:
    """The write hook (``MemoryInput.to_item``): ``{"category": ...}`` for an explicit category
    (validated), else the classified one with its ``tag_version``."""
    if category is not None:
        from ..core import validate as v

        return {"category": v.choice(category, Category, "category").value}
    found = classify(content if isinstance(content, str) else "",
                     metadata if isinstance(metadata, dict) else None)
    return {"category": found.category.value, "tag_version": found.tag_version}


def uri_prefix(subject: str, category: Category | str | None = None) -> str:
    """``mem://{subject}/`` or ``mem://{subject}/{category}/``, the subject percent-encoded as
    memdb.uri_for does. A URI is a retrieval scope, never a permission boundary."""
    enc = (subject.replace("%", "%25").replace("/", "%2F").replace(" ", "%20")
           .replace("\t", "%09"))
    return f"mem://{enc}/" + (f"{Category(category).value}/" if category is not None else "")
