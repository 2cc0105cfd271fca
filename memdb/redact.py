"""Redaction of what a trace keeps of a query: secrets and contact details never reach the
traces table, and the text is cut to :data:`MAX_CHARS`.

>>> redact("call me at 13812345678 or a@b.io, key sk-abcdefghijklmnopqrstuv")
'call me at [REDACTED:phone] or [REDACTED:email], key [REDACTED:secret]'
>>> redact("手机号13812345678，密码hunter2")
'手机号[REDACTED:phone]，密码[REDACTED:secret]'

Boundaries are ASCII: a secret or number ends where an ASCII letter or digit does not follow,
whatever surrounds it. (``\\b`` and ``\\w`` count Chinese characters as word characters, so
"手机号13812345678" had no boundary before the number and was kept verbatim.)
"""

from __future__ import annotations

import re

__all__ = ["redact", "secrets_in", "MAX_CHARS"]

MAX_CHARS = 500

_S = r"(?<![A-Za-z0-9])"  # starts a token: no ASCII letter or digit right before
_E = r"(?![A-Za-z0-9])"  # ends a token
_KEYWORD = (r"(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|"
            r"密码|口令|密钥|令牌)")
_CJK_KEYWORD = r"(?:密码|口令|密钥|令牌)"

# (label, pattern, keep): applied in order, specific secrets before generic numbers; with
# ``keep`` the pattern's first group (a "password:" cue) stays and only the value goes.
_PATTERNS: tuple[tuple[str, re.Pattern[str], bool], ...] = (
    ("secret", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?"
                          r"(-----END [A-Z ]*PRIVATE KEY-----|$)", re.DOTALL), False),
    ("secret", re.compile(_S + r"(?i:bearer|basic)\s+[A-Za-z0-9._~+/=-]{12,}"), False),
    ("secret", re.compile(r"(?<![A-Za-z0-9_-])(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}"), False),
    ("secret", re.compile(_S + r"(?:AKIA|ASIA)[A-Z0-9]{16}" + _E), False),
    ("secret", re.compile(_S + r"(?:ghp|gho|ghu|ghs|ghr|github_pat|glpat|xox[abpors])[-_]"
                          r"[A-Za-z0-9_-]{16,}"), False),
    ("secret", re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\."
                          r"[A-Za-z0-9_-]{8,}"), False),
    # "password: x", "密码是 x"; a Chinese cue also takes an ASCII value right after it
    # ("密码hunter2"), but not Chinese text ("密码学" is cryptography)
    ("secret", re.compile(r"(?i)(" + _KEYWORD + r"\s*(?:[:=：是为]|is)\s*)\S+"), True),
    ("secret", re.compile(r"(" + _CJK_KEYWORD + r"\s*)[A-Za-z0-9][!-~]*"), True),
    ("secret", re.compile(r"(?i)(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://[^\s:/@]+:[^\s@/]+@"),
     False),
    ("email", re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"), False),
    ("id_number", re.compile(r"(?<![0-9])[0-9]{17}[0-9Xx](?![0-9])"), False),
    ("phone", re.compile(_S + r"(?:\+?86[ -]?)?1[3-9][0-9][ -]?[0-9]{4}[ -]?[0-9]{4}"
                         r"(?![0-9])"), False),
    ("phone", re.compile(_S + r"0[1-9][0-9]{1,2}-[0-9]{7,8}(?![0-9])"), False),  # 010-12345678
    ("phone", re.compile(_S + r"\+?[0-9]{1,3}?[ .-]?\(?[0-9]{2,4}\)?[ .-][0-9]{3,4}[ .-]"
                         r"[0-9]{3,4}(?![0-9])"), False),
    ("card", re.compile(r"(?<![0-9])(?:[0-9][ -]?){13,19}(?![0-9])"), False),
    ("secret", re.compile(r"(?<![A-Za-z0-9_])[A-Fa-f0-9]{32,}(?![A-Za-z0-9_])"
                          r"|(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{40,}={0,2}"), False),
)


def _redact(text: str, found: list[tuple[str, str]] | None = None) -> str:
    out = text
    for label, pattern, keep in _PATTERNS:
        mark = f"[REDACTED:{label}]"

        def sub(m: re.Match[str], mark: str = mark, label: str = label, keep: bool = keep) -> str:
            cue = m.group(1) if keep else ""
            if found is not None:
                found.append((label, m.group(0)[len(cue):]))
            return cue + mark

        out = pattern.sub(sub, out)
    return out


def secrets_in(text: str) -> list[tuple[str, str]]:
    """The (kind, text) pairs :func:`redact` removes from ``text``: pass them as ``also=`` to
    redact text derived from it (a recall plan's sub-queries, which may quote a secret
    without the cue that marked it, as "hunter2" from "密码hunter2")."""
    found: list[tuple[str, str]] = []
    _redact(text, found)
    return [(label, value) for label, value in found if "[REDACTED:" not in value]


def redact(text: str, max_chars: int = MAX_CHARS,
           also: list[tuple[str, str]] | tuple[tuple[str, str], ...] = ()) -> str:
    """``text`` with secrets, e-mail addresses, phone, card and ID numbers replaced by
    ``[REDACTED:<kind>]``, then truncated to ``max_chars`` (marked with an ellipsis). Chinese,
    English and mixed text alike. ``also``: (kind, text) pairs found elsewhere
    (:func:`secrets_in`), removed wherever they occur (ignoring case)."""
    out = text
    for label, value in sorted(also, key=lambda pair: -len(pair[1])):
        if value.strip():
            out = re.sub(re.escape(value), f"[REDACTED:{label}]", out, flags=re.IGNORECASE)
    out = _redact(out)
    return out if len(out) <= max_chars else out[: max_chars - 1] + "…"
