"""Redaction of what a trace keeps of a query: secrets and contact details never reach the
traces table, and each text is cut to :data:`MAX_CHARS`.

>>> redact("call me at 13812345678 or a@b.io, key sk-abcdefghijklmnopqrstuv")
'call me at [REDACTED:phone] or [REDACTED:email], key [REDACTED:secret]'
>>> redact("手机号13812345678，密码hunter2")
'手机号[REDACTED:phone]，密码[REDACTED:secret]'
>>> redact("我的手机是１３８１２３４５６７８，密码ｈｕｎｔｅｒ２")
'我的手机是[REDACTED:phone]，密码[REDACTED:secret]'

How text is matched:

* Full-width forms (a Chinese keyboard's ``１３８…``, ``ｚｈａｎｇ＠ｅｘａｍｐｌｅ．ｃｏｍ``) are
  matched after NFKC normalization, character by character; the span of the *original* text
  that a match covers is replaced, so what is kept stays as it was typed.
* CJK punctuation (，。；：、！？ and brackets) is not normalized and ends a value:
  ``密码是hunter2，电话是…`` redacts ``hunter2`` and then the phone number, not one run.
* Boundaries are ASCII: a secret or number ends where an ASCII letter or digit does not
  follow, whatever surrounds it (``\\b`` and ``\\w`` count Chinese characters as word
  characters, so "手机号13812345678" would have no boundary before the number).
* :func:`redact_record` is the one entry point for a stored record (a trace row): every
  string in it, nested JSON included, passes :func:`redact` with the secrets found in any of
  them, so a sub-query that quotes a secret bare ("hunter2", a DSN's password) is cleaned too.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Collection, Iterable
from typing import Any

__all__ = ["redact", "redact_record", "secrets_in", "MAX_CHARS"]

MAX_CHARS = 500

# CJK punctuation kept as typed (NFKC would turn the full-width ones into ASCII): a value
# (a password after its cue, an e-mail address) never runs across them.
_CJK_PUNCT = "，。；：、！？（）【】《》「」『』〈〉〔〕“”‘’"
_STOP = r"\s" + _CJK_PUNCT
_VALUE = rf"[^{_STOP}]+"

_S = r"(?<![A-Za-z0-9])"  # starts a token: no ASCII letter or digit right before
_E = r"(?![A-Za-z0-9])"  # ends a token
_KEYWORD = (r"(?:password|passwd|passcode|pwd|secret|token|api[_-]?key|access[_-]?key|"
            r"密码|口令|密钥|令牌)")
_CJK_KEYWORD = r"(?:密码|口令|密钥|令牌)"
# "password: x", "密码是：x", "password is x"
_SEPARATOR = r"(?:\s*(?:[:=：]|是|为|\bis\b|\bwas\b)){1,2}\s*"
# Internationalized top-level domains in CJK scripts (an e-mail address like a@例子.中国)
_IDN_TLD = (r"(?:中国|中國|公司|网络|網絡|网址|网店|在线|香港|台湾|台灣|新加坡|信息|集团|商城|移动|"
            r"みんな|コム|한국)")
_LABEL = r"(?:[A-Za-z0-9-]|[^\W_\x00-\x7f])+"

# (label, pattern, keep): applied in order, specific secrets before generic numbers; with
# ``keep`` the pattern's first group (a "password:" cue) stays and only the value goes.
_PATTERNS: tuple[tuple[str, re.Pattern[str], bool], ...] = (
    ("secret", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?"
                          r"(-----END [A-Z ]*PRIVATE KEY-----|$)", re.DOTALL), False),
    ("secret", re.compile(r"(" + _S + r"(?i:bearer|basic)\s+)[A-Za-z0-9._~+/=-]{12,}"), True),
    ("secret", re.compile(r"(?<![A-Za-z0-9_-])(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}"), False),
    ("secret", re.compile(_S + r"(?:AKIA|ASIA)[A-Z0-9]{16}" + _E), False),
    ("secret", re.compile(_S + r"(?:ghp|gho|ghu|ghs|ghr|github_pat|glpat|xox[abpors])[-_]"
                          r"[A-Za-z0-9_-]{16,}"), False),
    ("secret", re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\."
                          r"[A-Za-z0-9_-]{8,}"), False),
    # scheme://user:PASSWORD@host: only the password goes (so it is found bare elsewhere)
    ("secret", re.compile(r"(?i)((?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+(?=@)"),
     True),
    # "password: x", "密码是 x"; the value ends at whitespace or CJK punctuation
    ("secret", re.compile(r"(?i)(" + _KEYWORD + _SEPARATOR + r")" + _VALUE), True),
    # "passwd hunter2": a password word, a space, and a value with a digit or a symbol
    # ("password reset" is kept)
    ("secret", re.compile(r"(?i)((?:password|passwd|passcode|pwd)\s+)"
                          rf"(?=[^{_STOP}]*[0-9!#$%&*@^~_+=])" + _VALUE), True),
    # a Chinese cue also takes an ASCII value right after it ("密码hunter2"), but not Chinese
    # text ("密码学" is cryptography)
    ("secret", re.compile(r"(" + _CJK_KEYWORD + r"\s*)[A-Za-z0-9][!-~]*"), True),
    ("email", re.compile(r"[A-Za-z0-9._%+-]+@(?:" + _LABEL + r"\.)+"
                         r"(?:[A-Za-z]{2,63}" + _E + "|" + _IDN_TLD + ")"), False),
    ("id_number", re.compile(r"(?<![0-9])[0-9]{17}[0-9Xx](?![0-9])"), False),
    # US social security number: 123-45-6789 (area 000, 666 and 9xx are never issued)
    ("id_number", re.compile(r"(?<![0-9-])(?!000|666|9)[0-9]{3}-(?!00)[0-9]{2}-(?!0000)"
                             r"[0-9]{4}(?![0-9-])"), False),
    ("phone", re.compile(_S + r"(?:\+?86[ -]?)?1[3-9][0-9][ -]?[0-9]{4}[ -]?[0-9]{4}"
                         r"(?![0-9])"), False),
    ("phone", re.compile(_S + r"0[1-9][0-9]{1,2}-[0-9]{7,8}(?![0-9])"), False),  # 010-12345678
    ("phone", re.compile(_S + r"\+?[0-9]{1,3}?[ .-]?\(?[0-9]{2,4}\)?[ .-][0-9]{3,4}[ .-]"
                         r"[0-9]{3,4}(?![0-9])"), False),
    ("card", re.compile(r"(?<![0-9])(?:[0-9][ -]?){13,19}(?![0-9])"), False),
    ("secret", re.compile(r"(?<![A-Za-z0-9_])[A-Fa-f0-9]{32,}(?![A-Za-z0-9_])"
                          r"|(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{40,}={0,2}"), False),
)
_MIN_PIECE = 4  # a secret's alphanumeric runs this long are removed on their own too


def _normalize(text: str) -> tuple[str, range | list[int]]:
    """``text`` NFKC-normalized character by character (CJK punctuation kept), and for each
    character of the result the index of the original character it came from."""
    if text.isascii():
        return text, range(len(text))
    parts: list[str] = []
    owner: list[int] = []
    for i, ch in enumerate(text):
        norm = ch if ch.isascii() or ch in _CJK_PUNCT else unicodedata.normalize("NFKC", ch)
        parts.append(norm)
        owner.extend([i] * len(norm))
    return "".join(parts), owner


def _replace(text: str, pattern: re.Pattern[str], label: str, keep: bool,
             found: list[tuple[str, str]] | None) -> str:
    """``text`` with each match of ``pattern`` in its normalized form (its value, with
    ``keep``) replaced, in the original text, by ``[REDACTED:label]``."""
    norm, owner = _normalize(text)
    mark = f"[REDACTED:{label}]"
    out: list[str] = []
    last = 0
    for m in pattern.finditer(norm):
        start, end = (m.end(1) if keep else m.start()), m.end()
        if end <= start or owner[start] < last:
            continue
        if found is not None:
            found.append((label, norm[start:end]))
        out += [text[last:owner[start]], mark]
        last = owner[end - 1] + 1
    return "".join(out) + text[last:] if out else text


def _redact(text: str, found: list[tuple[str, str]] | None = None) -> str:
    out = text
    for label, pattern, keep in _PATTERNS:
        out = _replace(out, pattern, label, keep, found)
    return out


def secrets_in(text: str) -> list[tuple[str, str]]:
    """The (kind, text) pairs :func:`redact` removes from ``text`` (normalized: half-width),
    and for a secret its alphanumeric runs of 4 or more characters: pass them as ``also=`` to
    redact text derived from it (a recall plan's sub-queries, which may quote a secret
    without the cue that marked it, as "hunter2" from "密码hunter2")."""
    found: list[tuple[str, str]] = []
    _redact(text, found)
    out = []
    for label, value in found:
        if "[REDACTED:" in value:
            continue
        out.append((label, value))
        if label == "secret":
            out += [(label, piece) for piece in re.findall(r"[A-Za-z0-9]+", value)
                    if len(piece) >= _MIN_PIECE and piece != value]
    return list(dict.fromkeys(out))


def redact(text: str, max_chars: int = MAX_CHARS, also: Iterable[tuple[str, str]] = ()) -> str:
    """``text`` with secrets, e-mail addresses, phone, card and ID numbers replaced by
    ``[REDACTED:<kind>]``, then truncated to ``max_chars`` (marked with an ellipsis). Chinese,
    English and mixed text, full- or half-width, alike. ``also``: (kind, text) pairs found
    elsewhere (:func:`secrets_in`), removed wherever they occur (ignoring case and width)."""
    out = text
    for label, value in sorted(set(also), key=lambda pair: -len(pair[1])):
        if value.strip():
            out = _replace(out, re.compile(re.escape(value), re.IGNORECASE), label, False, None)
    out = _redact(out)
    return out if len(out) <= max_chars else out[: max_chars - 1] + "…"


def _walk(value: Any, keep: Collection[str], fn: Callable[[str], Any]) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {k: (v if k in keep else _walk(v, keep, fn)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_walk(v, keep, fn) for v in value]
    return value


def redact_record(record: dict[str, Any], keep: Collection[str] = (),
                  max_chars: int = MAX_CHARS) -> dict[str, Any]:
    """``record`` (a row about to be stored: strings, numbers, nested dicts and lists) with
    every string redacted by :func:`redact`, each also cleared of every secret found in any
    of them (:func:`secrets_in`), so a value quoted bare in a derived text goes too. Entries
    whose key is in ``keep`` (at any depth: identifiers such as tenant and subject names, row
    ids) are left as they are. Tuples come back as lists.

    >>> redact_record({"query": "密码是hunter2", "plan": {"queries": [{"text": "hunter2"}]}})
    {'query': '密码是[REDACTED:secret]', 'plan': {'queries': [{'text': '[REDACTED:secret]'}]}}
    """
    texts: dict[str, str] = {}  # each distinct string once (a category repeats per candidate)
    _walk(record, keep, lambda s: texts.setdefault(s, s))
    found = [pair for text in texts for pair in secrets_in(text)]
    also = tuple(dict.fromkeys(found))
    clean = {text: redact(text, max_chars, also) for text in texts}
    return _walk(record, keep, clean.__getitem__)
