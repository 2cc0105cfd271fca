"""Entity and relation extraction for the entity graph (:mod:`memdb.families.graph`), without I/O:
the
LLM prompt, a strict validator of the model's JSON, and a heuristic extractor for Chinese and
English.

The **heuristic** is deliberately small and predictable (documented patterns, no model):

* relations, one sentence at a time:

  - ``works_with`` (person, person): "X works with Y", "X and Y work together", "X and Y are
    colleagues", "X is a colleague of Y"; "X和/跟/与Y一起工作", "X和Y是同事", "X和Y合作";
  - ``manages`` (person, person): "X is Y's manager/boss/lead", "X manages Y", "Y reports to
    X"; "X是Y的经理/领导/上司/主管", "Y的经理/领导/上司/主管是X";
  - ``works_at`` (person, organization): "X works at/for Y"; "X在Y工作/上班";
  - ``uses`` (project/person, tool): "X uses Y", "X is built with/on Y"; "X用/使用/采用Y"
    (also "项目用 Y": the subject is the entity "项目"). Several objects split on
    "and", ",", "和", "、", "及".

* names outside patterns: capitalised words or phrases ("Alice", "Project Apollo";
  sentence-initial function words such as "The" or "We" excluded), quoted names (“…”,
  "…", 《…》, 「…」, `…`) and CJK person names: a common surname followed by one or two
  characters, when followed by a cue such as 说, 是, 在, 负责, 的, 和 (so "高兴" is not a
  person);

* the SQL side (``memdb.link_memories``) also links every memory to the subject's known
  entities whose name occurs in it, so "王五负责迁移" is linked to the 王五 that another memory
  introduced.

Entity types: person, project, tool, organization, place, concept, other.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from ..write.grounding import Refused, grounded, schema_token

__all__ = ["ENTITY_TYPES", "Extraction", "heuristic_graph", "build_graph_prompt",
           "parse_graph_reply", "GRAPH_SYSTEM_PROMPT", "MAX_ENTITIES", "MAX_RELATIONS",
           "GRAPH_SCHEMA", "check_extraction"]

ENTITY_TYPES = ("person", "project", "tool", "organization", "place", "concept", "other")
MAX_ENTITIES = 30
MAX_RELATIONS = 30
MAX_NAME_CHARS = 200
_REL_TYPE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


@dataclass
class Extraction:
    """The entities and relations of one memory, in the JSON shape ``memdb.link_memories``
    takes. ``path``: "llm" or "heuristic"; ``error``: why the LLM reply was not used."""

    entities: list[dict[str, Any]] = field(default_factory=list)
    relations: list[dict[str, Any]] = field(default_factory=list)
    path: str = "heuristic"
    error: str | None = None
    refused: list[Refused] = field(default_factory=list)

    def add_entity(self, name: str, type_: str = "other") -> str | None:
        """Add (or retype from 'other') an entity; returns its cleaned name or None."""
        clean = _clean_name(name)
        if clean is None:
            return None
        for ent in self.entities:
            if ent["name"].casefold() == clean.casefold():
                if ent["type"] == "other" and type_ != "other":
                    ent["type"] = type_
                return ent["name"]
        if len(self.entities) < MAX_ENTITIES:
            self.entities.append({"name": clean, "type": type_, "aliases": []})
            return clean
        return None

    def add_relation(self, src: str | None, rel: str, dst: str | None,
                     strength: float = 0.8) -> None:
        if not src or not dst or src.casefold() == dst.casefold():
            return
        if len(self.relations) >= MAX_RELATIONS:
            return
        edge = {"from": src, "to": dst, "type": rel, "strength": strength}
        if edge not in self.relations:
            self.relations.append(edge)

    def to_item(self, memory_id: str) -> dict[str, Any]:
        return {"memory_id": memory_id, "entities": self.entities, "relations": self.relations}


_QUOTES = " \t\"'`“”‘’《》「」『』()（）[]【】<>.,;:!?，。；：！？、"
_LEADING = re.compile(r"^(?:the|our|my|this|that|these|a|an|we|your|their|his|her)\s+", re.I)


def _clean_name(name: str) -> str | None:
    if not isinstance(name, str):
        return None
    text = re.sub(r"\s+", " ", name).strip(_QUOTES)
    text = _LEADING.sub("", text).strip(_QUOTES)
    if not text or len(text) > MAX_NAME_CHARS or "\x00" in text:
        return None
    if len(text) < 2:
        return None
    return text


# -- the heuristic ---------------------------------------------------------------------------
_SURNAMES = ("王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董"
             "袁潘于蒋蔡余杜叶程"
             "苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛"
             "郝龚邵万钱严覃武戴莫孔向汤")
_CJK = r"\u3400-\u9fff"
_SPAN = rf"[{_CJK}A-Za-z0-9]"  # a name slot in a Chinese pattern
# A CJK person: surname + 1-2 characters (the shortest that fits, checked by _cjk_person).
_CJK_PERSON_CUE = re.compile(rf"(?<![{_CJK}])([{_SURNAMES}][{_CJK}]{{1,2}}?)"
                             r"(?=说|是|在|负责|的|和|跟|与|也|都|把|给|让|要|会|去|来|同|一起|，|,|。|$)")
_LATIN_NAME = r"[A-Z][A-Za-z0-9_.+#-]*(?:\s+[A-Z][A-Za-z0-9_.+#-]*){0,3}"
_OBJ_END = re.compile(r"\s+(?:for|to|in|on|at|as|with|because|since|when|which|that|and then)\b.*$",
                      re.I)
_STOP_CAPS = {"the", "we", "i", "our", "my", "this", "that", "it", "he", "she", "they", "you",
              "please", "remember", "also", "and", "but", "a", "an", "in", "on", "at", "yes",
              "no", "ok", "okay", "who", "what", "when", "where", "why", "how", "note", "his",
              "her", "their", "its", "there", "here", "then", "today", "tomorrow", "yesterday",
              "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
              "january", "february", "march", "april", "may", "june", "july", "august",
              "september", "october", "november", "december", "if", "so", "for", "always",
              "never", "every", "from", "let", "let's", "don't", "do", "does", "is", "are"}
_QUOTED = re.compile(r"“([^”]{2,60})”|\"([^\"]{2,60})\"|《([^》]{1,60})》|「([^」]{1,60})」|"
                     r"`([^`]{2,60})`")
_SPLIT = re.compile(r"(?<=[。！？!?;；\n])|(?<=\.)\s+")
_OBJ_SPLIT = re.compile(r"\s*(?:,|，|、|\band\b|和|及|以及|与)\s*")

_EN_PATTERNS: list[tuple[re.Pattern[str], str, str, str, bool]] = [
    # (pattern with groups a, b; relation; type of a; type of b; swap a/b)
    (re.compile(rf"(?P<a>{_LATIN_NAME})\s+(?:works|worked|is working)\s+(?:closely\s+)?with\s+"
                rf"(?P<b>{_LATIN_NAME})"), "works_with", "person", "person", False),
    (re.compile(rf"(?P<a>{_LATIN_NAME})\s+and\s+(?P<b>{_LATIN_NAME})\s+(?:work|worked)\s+together"),
     "works_with", "person", "person", False),
    (re.compile(rf"(?P<a>{_LATIN_NAME})\s+and\s+(?P<b>{_LATIN_NAME})\s+are\s+(?:\w+\s+)?colleagues"),
     "works_with", "person", "person", False),
    (re.compile(rf"(?P<a>{_LATIN_NAME})\s+is\s+(?:a\s+)?colleague\s+of\s+(?P<b>{_LATIN_NAME})"),
     "works_with", "person", "person", False),
    (re.compile(rf"(?P<a>{_LATIN_NAME})\s+is\s+(?P<b>{_LATIN_NAME})'s\s+(?:manager|boss|lead|supervisor)"),
     "manages", "person", "person", False),
    (re.compile(rf"(?P<a>{_LATIN_NAME})\s+(?:manages|supervises)\s+(?P<b>{_LATIN_NAME})"),
     "manages", "person", "person", False),
    (re.compile(rf"(?P<b>{_LATIN_NAME})\s+reports\s+to\s+(?P<a>{_LATIN_NAME})"),
     "manages", "person", "person", False),
    (re.compile(rf"(?P<a>{_LATIN_NAME})\s+(?:works|worked)\s+(?:at|for)\s+(?P<b>{_LATIN_NAME})"),
     "works_at", "person", "organization", False),
]
_EN_USES = re.compile(rf"(?P<a>(?:[Tt]he\s+|[Oo]ur\s+|[Tt]his\s+)?"
                      rf"(?:{_LATIN_NAME}|project|team|app|service))"
                      r"\s+(?:uses|is using|used|relies on|is built (?:with|on)|runs on)\s+"
                      r"(?P<b>[^.;!?\n]+)")
_ZH_PERSON_PAIR = re.compile(rf"(?P<a>{_SPAN}{{2,16}}?)\s*(?:和|跟|与|同)\s*(?P<b>{_SPAN}{{2,16}}?)"
                             r"\s*(?:是|为)?(?:一起工作|一起做事|一起上班|同事|合作|共事)")
_ZH_MANAGER = re.compile(rf"(?P<a>{_SPAN}{{2,16}}?)是(?P<b>{_SPAN}{{2,16}}?)的"
                         r"(?:经理|领导|上司|主管|老板|leader)")
_ZH_MANAGER_REV = re.compile(rf"(?P<b>{_SPAN}{{2,16}}?)的(?:经理|领导|上司|主管|老板|leader)是"
                             rf"(?P<a>{_SPAN}{{2,16}})")
_ZH_WORKS_AT = re.compile(rf"(?P<a>{_SPAN}{{2,16}}?)在(?P<b>{_SPAN}{{2,12}}?)(?:工作|上班|任职)")
_ZH_USES = re.compile(rf"(?P<a>{_SPAN}{{2,16}}?)(?:都|也|主要|一直)?(?:使用|采用|用的是|用)\s*"
                      rf"(?P<b>[^。！？!?;；\n]+)")
_ZH_OBJ = re.compile(r"^\s*(?:[A-Za-z][A-Za-z0-9_.+#-]*(?:\s+[A-Z0-9][A-Za-z0-9_.+#-]*)*"
                     rf"|[{_CJK}]{{2,6}})")
_ZH_SUBJECT_NOISE = re.compile(r"^(?:我们的|我们|我的|这个|那个|该|我|他们|他|她|现在|目前)+")


def _first_word(name: str) -> str:
    return re.sub(r"(?:'s|[.+#-])+$", "", name.split()[0].lower())


def _cjk_person(span: str, *, tail: bool) -> str:
    """The person name inside a CJK span before (``tail``) or after a connective: a surname
    plus one or two characters at the span's end (tail) or start; else the span itself."""
    if not re.search(rf"[{_CJK}]", span):
        return span
    latin = re.search(r"[A-Za-z][A-Za-z0-9]*$" if tail else r"^[A-Za-z][A-Za-z0-9]*", span)
    if latin:  # "昨天Alice和Bob…": the Latin name next to the connective
        return latin.group(0)
    if tail:
        for size in (2, 3):
            part = span[-size:]
            if len(part) == size and part[0] in _SURNAMES:
                return part
    elif span and span[0] in _SURNAMES:
        return span[:3] if len(span) >= 3 and span[2] not in "是的和在" else span[:2]
    return _ZH_SUBJECT_NOISE.sub("", span) or span


def _objects(text: str, *, zh: bool) -> list[str]:
    """The tools named after a "uses" verb: split on and/,/和/、, each cut at a preposition
    (English) or to a leading Latin token or a short CJK run (Chinese)."""
    out = []
    for part in _OBJ_SPLIT.split(text)[:6]:
        part = _OBJ_END.sub("", part.strip())
        if zh or re.match(rf"[{_CJK}]", part):
            m = _ZH_OBJ.match(part)
            part = m.group(0).strip() if m else ""
        else:
            words = part.split()
            part = " ".join(words[:3])
        if part:
            out.append(part)
    return out


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SPLIT.split(text) if s and s.strip()]


def heuristic_graph(text: str) -> Extraction:
    """Entities and relations of ``text`` by the documented patterns (module docstring)."""
    out = Extraction()
    for sentence in _sentences(text):
        for pattern, rel, ta, tb, _swap in _EN_PATTERNS:
            for m in pattern.finditer(sentence):
                a, b = m.group("a"), m.group("b")
                if _first_word(a) in _STOP_CAPS or _first_word(b) in _STOP_CAPS:
                    continue
                out.add_relation(out.add_entity(a, ta), rel, out.add_entity(b, tb))
        for m in _EN_USES.finditer(sentence):
            subject_type = "project" if re.search(r"project|app|service", m.group("a"), re.I) \
                else "other"
            src = out.add_entity(m.group("a"), subject_type)
            for obj in _objects(m.group("b"), zh=False):
                out.add_relation(src, "uses", out.add_entity(obj, "tool"))
        for pattern, rel, ta, tb in ((_ZH_PERSON_PAIR, "works_with", "person", "person"),
                                     (_ZH_MANAGER, "manages", "person", "person"),
                                     (_ZH_MANAGER_REV, "manages", "person", "person"),
                                     (_ZH_WORKS_AT, "works_at", "person", "organization")):
            for m in pattern.finditer(sentence):
                a = _cjk_person(m.group("a"), tail=True)
                b = m.group("b")
                b = _cjk_person(b, tail=False) if tb == "person" else _ZH_SUBJECT_NOISE.sub("", b)
                out.add_relation(out.add_entity(a, ta), rel, out.add_entity(b, tb))
        for m in _ZH_USES.finditer(sentence):
            a = m.group("a")
            if not re.search(rf"[{_CJK}]", a):
                continue
            if "项目" in a:
                prefix = _ZH_SUBJECT_NOISE.sub("", a[:a.index("项目")])
                subject, stype = prefix[-4:] + "项目", "project"
            elif a[-2:] in ("我们", "团队") or a.endswith("组"):
                subject, stype = _ZH_SUBJECT_NOISE.sub("", a), "organization"
                if len(subject) < 2:
                    continue  # "我们用…": nobody to name
            else:
                person = _cjk_person(a, tail=True)
                if person == a and a[0] not in _SURNAMES:
                    continue  # "我用…", "他们用…": nobody to name
                subject, stype = person, "person"
            src = out.add_entity(subject, stype)
            for obj in _objects(m.group("b"), zh=True):
                out.add_relation(src, "uses", out.add_entity(obj, "tool"))
        # names outside the patterns
        for m in _QUOTED.finditer(sentence):
            out.add_entity(next(g for g in m.groups() if g), "other")
        for m in re.finditer(_LATIN_NAME, sentence):
            if _first_word(m.group(0)) in _STOP_CAPS:
                continue
            out.add_entity(m.group(0), "other")
        for m in _CJK_PERSON_CUE.finditer(sentence):
            out.add_entity(m.group(1), "person")
    return out


# -- the LLM path ----------------------------------------------------------------------------
GRAPH_SYSTEM_PROMPT = (
    "You extract a knowledge graph from one memory of an AI agent.\n"
    'Return only JSON: {"entities": [{"name": str, "type": one of person|project|tool|'
    'organization|place|concept|other, "aliases": [str]}], "relations": [{"from": entity name, '
    '"to": entity name, "type": snake_case verb such as works_with|manages|uses|works_at|'
    'member_of|located_in|related_to, "strength": 0-1}]}\n'
    "Rules: names as written in the memory (keep the user's language); only entities the memory "
    "names (people, projects, tools, organisations, places, concepts), not pronouns or the user "
    'themself; "X is Y\'s manager" is {"from": X, "type": "manages", "to": Y}; no relations: '
    '"relations": [].')


def build_graph_prompt(text: str) -> list[dict[str, str]]:
    """The chat messages asking the model for the graph of one memory."""
    return [{"role": "system", "content": GRAPH_SYSTEM_PROMPT},
            {"role": "user", "content": f"Memory:\n{text}\n\nJSON:"}]


def parse_graph_reply(reply: str) -> Extraction:
    """A validated Extraction from the model's reply (path "llm"), or one with ``error`` set
    when the reply is not the strict JSON object asked for (the caller falls back).

    Strict: the reply must be one JSON object (optionally in a code fence) with an
    ``entities`` list; entities need a 2..200 character name (unknown types become "other");
    relations need both endpoints and a snake_case type (their endpoints are added as
    entities when missing; strength outside (0, 1] becomes 0.5); other items are dropped.
    """
    text = reply.strip()
    fence = re.fullmatch(r"```(?:json|JSON)?\s*(.*?)\s*```", text, re.DOTALL)
    if fence:
        text = fence.group(1)
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return Extraction(path="llm", error="the reply is not JSON")
    if not isinstance(value, dict) or not isinstance(value.get("entities"), list):
        return Extraction(path="llm", error='the reply has no "entities" list')
    relations = value.get("relations", [])
    if not isinstance(relations, list):
        return Extraction(path="llm", error='"relations" is not a list')
    out = Extraction(path="llm")
    for raw in value["entities"][:MAX_ENTITIES * 2]:
        if not isinstance(raw, dict):
            continue
        kind = raw.get("type") if raw.get("type") in ENTITY_TYPES else "other"
        name = out.add_entity(raw.get("name"), kind)  # type: ignore[arg-type]
        aliases = raw.get("aliases")
        if name and isinstance(aliases, list):
            clean = [a for a in (_clean_name(x) for x in aliases[:10] if isinstance(x, str)) if a]
            for ent in out.entities:
                if ent["name"] == name:
                    ent["aliases"] = sorted(set(ent["aliases"]) | set(clean))
    for raw in relations[:MAX_RELATIONS * 2]:
        if not isinstance(raw, dict):
            continue
        rel = raw.get("type")
        if not isinstance(rel, str):
            continue
        rel = re.sub(r"[^a-z0-9_]+", "_", rel.strip().lower()).strip("_")
        if not _REL_TYPE.match(rel):
            continue
        strength = raw.get("strength")
        if isinstance(strength, bool) or not isinstance(strength, (int, float)) \
                or not 0 < strength <= 1:
            strength = 0.5
        src = out.add_entity(raw.get("from"), "other")  # type: ignore[arg-type]
        dst = out.add_entity(raw.get("to"), "other")  # type: ignore[arg-type]
        out.add_relation(src, rel, dst, float(strength))
    return out


GRAPH_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["entities", "relations"],
    "properties": {
        "entities": {"type": "array", "maxItems": MAX_ENTITIES, "items": {
            "type": "object", "additionalProperties": False,
            "required": ["name", "type", "aliases"],
            "properties": {"name": {"type": "string", "minLength": 2, "maxLength": 100},
                           "type": {"type": "string", "enum": list(ENTITY_TYPES)},
                           "aliases": {"type": "array", "maxItems": 5,
                                       "items": {"type": "string", "maxLength": 100}}}}},
        "relations": {"type": "array", "maxItems": MAX_RELATIONS, "items": {
            "type": "object", "additionalProperties": False,
            "required": ["from", "to", "type", "strength"],
            "properties": {"from": {"type": "string", "maxLength": 100},
                           "to": {"type": "string", "maxLength": 100},
                           "type": {"type": "string", "maxLength": 64},
                           "strength": {"type": "number"}}}}}}


def _key(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _named_in(name: str, text: str) -> bool:
    """A name is grounded when it occurs in the memory (case and width folded) or half its
    content words do; a schema word never is."""
    return not schema_token(name) and (_key(name) in _key(text) or grounded(name, text, 0.5))


def check_extraction(ext: Extraction, text: str) -> Extraction:
    """``ext`` keeping only entities the memory names (aliases likewise) and relations
    between them; everything else is listed in ``refused`` with the reason."""
    out = Extraction(path=ext.path, error=ext.error)
    for ent in ext.entities:
        if not _named_in(ent["name"], text):
            out.refused.append(Refused(ent["name"], "entity not named in the memory"))
            continue
        aliases = [a for a in ent["aliases"] if _named_in(a, text)]
        out.refused += [Refused(a, "alias not named in the memory")
                        for a in ent["aliases"] if a not in aliases]
        out.entities.append({**ent, "aliases": aliases})
    names = {e["name"].casefold() for e in out.entities}
    for rel in ext.relations:
        if rel["from"].casefold() in names and rel["to"].casefold() in names:
            out.relations.append(rel)
        else:
            out.refused.append(Refused(f"{rel['from']} -{rel['type']}-> {rel['to']}",
                                       "relation between entities not named in the memory"))
    return out
