"""Is a model's text grounded in the text it came from? One rule for Chinese and English, no I/O.

A text's **content units** are its English (Latin-script) words and numbers, minus stop words
and the words a model uses to speak *about* the user ("user", "用户", "the person"...), each
cut to its first five letters (so "peanut"/"peanuts" and "allergic"/"allergy" match), and
the character bigrams of its CJK runs (a single CJK character stands alone), after removing
the same subject words ("用户", "该用户", "他", "她"). A text is **grounded** in a source when
it has at least one content unit and at least ``ratio`` (default 0.6) of its distinct units
occur in the source. A text is a **schema token** when it is nothing but identifiers from the
prompt's schema (``user_statement``, ``content``, ``category``...) or a snake_case /
camelCase identifier: a model echoing the form instead of filling it in.

``covers(memory, fact)`` is grounding with ratio 0.7: an existing memory covers a new fact
when most of the fact's units are already in it (a no-op may only point at such a memory).

>>> grounded("用户叫李雷", "我叫李雷，在北京工作，喜欢打篮球")
True
>>> grounded("User is allergic to peanuts", "I'm allergic to peanuts")
True
>>> grounded("The user lives in Paris", "I'm allergic to peanuts")
False
>>> schema_token("user_statement"), schema_token("I like tea")
(True, False)
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

__all__ = ["Refused", "units", "grounded", "coverage", "covers", "schema_token", "SCHEMA_WORDS"]

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_TOKEN = re.compile(rf"[a-z0-9][a-z0-9']*|[{_CJK}]+")
_CJK_RUN = re.compile(rf"^[{_CJK}]+$")
# how a model refers to the speaker, in a fact about them: not content
_CJK_SUBJECT = re.compile(r"该用户|用户|此人|对方|他们|她们|他|她")
_STOP = frozenset("""a an the and or but if then so to of in on at by for with from as into
about is am are was were be been being do does did have has had having i i'm im me my mine
myself you your we our us they them their he him his she her it its this that these those
there here not no yes very also just user users user's person speaker human assistant
someone somebody who whom what which when where why how will would shall should can could
may might must""".split())
SCHEMA_WORDS = frozenset("""content category kind importance source action target reason
facts fact memories memory items results user_statement model_inference add update noop
semantic episodic procedural preferences entities events patterns tools skills general
system str null none true false json summary queries query scores order rule entities
relations name type aliases from to strength intent text strategy weight""".split())
_IDENT = re.compile(r"^[a-z]+(?:_[a-z0-9]+)+$|^[a-z]+[A-Z][A-Za-z0-9]*$")


@dataclass(frozen=True, slots=True)
class Refused:
    """One item of a model's reply that a check refused: the item (cut to 200 characters)
    and why. Every LLM path reports these instead of dropping them silently."""

    item: str
    reason: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "item", " ".join(str(self.item).split())[:200])

    def to_dict(self) -> dict[str, Any]:
        return {"item": self.item, "reason": self.reason}


def units(text: str) -> set[str]:
    """The content units of ``text`` (module docstring)."""
    text = _CJK_SUBJECT.sub(" ", unicodedata.normalize("NFKC", text).lower())
    out: set[str] = set()
    for token in _TOKEN.findall(text):
        if _CJK_RUN.match(token):
            if len(token) == 1:
                out.add(token)
            out.update(token[i:i + 2] for i in range(len(token) - 1))
        else:
            token = token.strip("'")
            if token and token not in _STOP:
                out.add(token[:5])
    return out


def coverage(text: str, source: str) -> tuple[int, int]:
    """(how many of ``text``'s content units occur in ``source``, how many it has)."""
    mine = units(text)
    return len(mine & units(source)), len(mine)


def grounded(text: str, source: str, ratio: float = 0.6) -> bool:
    """Whether at least ``ratio`` of ``text``'s content units occur in ``source`` (and it has
    one at all, and it is not a schema token)."""
    if schema_token(text):
        return False
    found, total = coverage(text, source)
    return total > 0 and found >= ratio * total


def covers(memory: str, fact: str) -> bool:
    """Whether the existing ``memory`` already says ``fact`` (70% of the fact's units)."""
    return grounded(fact, memory, 0.7) and not schema_token(memory)


def schema_token(text: str) -> bool:
    """Whether ``text`` is only words of the prompt's schema or a code identifier."""
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*|\S", text.strip())
    if not words:
        return True
    if len(words) == 1 and _IDENT.match(words[0]):
        return True
    return all(w.lower() in SCHEMA_WORDS or not w[0].isalnum() for w in words)
