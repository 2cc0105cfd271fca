"""Masking secrets in text that may reach a message, a ``repr()`` or a log record.

memdb never logs memory text or credentials; this module is the safety net for the places
where text from elsewhere (a libpq message, an HTTP error, a DSN) ends up in what a caller
sees. It masks:

* passwords in DSNs: ``postgresql://user:PW@host`` and ``password=PW`` (key/value form, also
  quoted), and ``?password=PW`` in URL queries;
* API keys: ``sk-...`` style tokens, memdb's own ``mdb_<id>_<secret>`` keys,
  ``api_key=...`` / ``"api_key": "..."`` pairs and
  ``Authorization: Bearer ...`` headers;
* any extra strings the caller knows to be secret (``secrets=``).

>>> redact("postgresql://memdb:s3cret@db:5432/x?sslmode=require")
'postgresql://memdb:***@db:5432/x?sslmode=require'
>>> redact("connect failed (password=hunter2 host=db)")
'connect failed (password=*** host=db)'
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["MASK", "redact", "redact_dsn"]

MASK = "***"

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # scheme://user:password@host  (the password may hold anything but '@' and '/')
    (re.compile(r"(?P<pre>\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^:/?#@\s]*:)[^@/\s]+(?=@)"),
     rf"\g<pre>{MASK}"),
    # password='quoted value' (libpq key/value form)
    (re.compile(r"(?P<pre>\bpassword\s*=\s*)'(?:[^'\\]|\\.)*'", re.IGNORECASE),
     rf"\g<pre>{MASK}"),
    # password=value / ?password=value / &password=value
    (re.compile(r"(?P<pre>\bpassword\s*=\s*)[^\s&'\"]+", re.IGNORECASE), rf"\g<pre>{MASK}"),
    # "api_key": "value", api_key=value, apikey: value, token=value
    (re.compile(r"(?P<pre>\b(?:api[_-]?key|access[_-]?token|secret|token)\b[\"']?\s*[:=]\s*"
                r"[\"']?)[^\s\"',&}]+", re.IGNORECASE), rf"\g<pre>{MASK}"),
    # Authorization: Bearer value
    (re.compile(r"(?P<pre>\bBearer\s+)[A-Za-z0-9._~+/=\-]+"), rf"\g<pre>{MASK}"),
    # memdb API keys (memdb.families.keys): mdb_<key_id>_<secret>; the key id may be shown
    (re.compile(r"\b(?P<pre>mdb_[a-z0-9]{8,32}_)[A-Za-z0-9_\-]{8,}"), rf"\g<pre>{MASK}"),
    # OpenAI-style keys: sk-..., sk-proj-..., at least 6 characters after the prefix
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}"), f"sk-{MASK}"),
)


def redact(text: object, secrets: Iterable[str | None] = ()) -> str:
    """``str(text)`` with DSN passwords, API keys and the given ``secrets`` masked."""
    out = str(text)
    for secret in secrets:
        if secret and len(secret) >= 3:
            out = out.replace(secret, MASK)
    for pattern, replacement in _PATTERNS:
        out = pattern.sub(replacement, out)
    return out


def redact_dsn(dsn: str | None) -> str:
    """A DSN safe to show: its password masked, in URL or key/value form."""
    if dsn is None:
        return "None"
    secret: list[str] = []
    try:
        from psycopg.conninfo import conninfo_to_dict

        password = conninfo_to_dict(dsn).get("password")
        if password:
            secret.append(str(password))
    except Exception:  # an unparsable DSN is still masked by the patterns
        pass
    return redact(dsn, secret)

