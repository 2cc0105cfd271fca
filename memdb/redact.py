"""Redaction of what a trace keeps of a query: secrets and contact details never reach the
traces table, and the text is cut to :data:`MAX_CHARS`.

>>> redact("call me at 13812345678 or a@b.io, key sk-abcdefghijklmnopqrstuv")
'call me at [REDACTED:phone] or [REDACTED:email], key [REDACTED:secret]'
"""

from __future__ import annotations

import re

__all__ = ["redact", "MAX_CHARS"]

MAX_CHARS = 500

# (label, pattern), applied in order: specific secrets before generic numbers.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("secret", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?"
                          r"(-----END [A-Z ]*PRIVATE KEY-----|$)", re.DOTALL)),
    ("secret", re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{12,}")),
    ("secret", re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{16,}|\bsk-ant-[A-Za-z0-9_-]{16,}")),
    ("secret", re.compile(r"\b(AKIA|ASIA)[A-Z0-9]{16}\b")),
    ("secret", re.compile(r"\b(ghp|gho|ghu|ghs|ghr|github_pat|glpat|xox[abpors])[-_]"
                          r"[A-Za-z0-9_-]{16,}")),
    ("secret", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("secret", re.compile(r"(?i)((?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|"
                          r"密码|口令|密钥|令牌)\s*(?:[:=：是为]|is)\s*)\S+")),
    ("secret", re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s:/@]+:[^\s@/]+@")),
    ("email", re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")),
    ("id_number", re.compile(r"(?<!\d)\d{17}[\dXx](?!\d)")),
    ("phone", re.compile(r"(?<![\d\w])(?:\+?86[ -]?)?1[3-9]\d[ -]?\d{4}[ -]?\d{4}(?!\d)")),
    ("phone", re.compile(r"(?<![\d\w])\+?\d{1,3}?[ .-]?\(?\d{2,4}\)?[ .-]\d{3,4}[ .-]"
                         r"\d{3,4}(?!\d)")),
    ("card", re.compile(r"(?<!\d)(?:\d[ -]?){13,19}(?!\d)")),
    ("secret", re.compile(r"\b[A-Fa-f0-9]{32,}\b|\b[A-Za-z0-9+/_-]{40,}={0,2}")),
)


def redact(text: str, max_chars: int = MAX_CHARS) -> str:
    """``text`` with secrets, e-mail addresses, phone, card and ID numbers replaced by
    ``[REDACTED:<kind>]``, then truncated to ``max_chars`` (marked with an ellipsis)."""
    out = text
    for label, pattern in _PATTERNS:
        if label == "secret" and pattern.groups and "password" in pattern.pattern:
            out = pattern.sub(lambda m: m.group(1) + "[REDACTED:secret]", out)
        else:
            out = pattern.sub(f"[REDACTED:{label}]", out)
    return out if len(out) <= max_chars else out[: max_chars - 1] + "…"
