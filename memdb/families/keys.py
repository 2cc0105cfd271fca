"""API keys of the HTTP door (``memdb serve``): created, listed and revoked by the admin login.

A key is ``mdb_<key_id>_<secret>``: ``key_id`` (12 lowercase letters and digits) is the visible
part that names the key in lists, revocations and logs; ``secret`` is 32 random bytes
(``secrets.token_urlsafe``). Only the sha256 of the whole key is stored (``memdb.api_keys``,
revision 0012), so the key is shown once, when it is created. Each key is bound to one tenant
and optionally one subject (the store the door opens for it; row-level security still decides
what that store sees), or is an admin key (``admin=True``: the all-tenant operations, no
tenant's memories).

The application login cannot read the table: the door checks a presented key through
``memdb.api_key_lookup(sha256)`` (SECURITY DEFINER), which answers with the binding, never a
hash. :func:`lookup` is that check (the doors run it under the async driver:
:class:`memdb._doors.KeyChecker`).

>>> with MemoryAdmin() as admin:                                  # doctest: +SKIP
...     created = create_key(admin, tenant="acme", subject="alice", name="alice's laptop")
...     created.key                                   # shown once: 'mdb_3k9x..._...'
...     [k.key_id for k in list_keys(admin)]
...     revoke_key(admin, created.info.key_id)
"""

from __future__ import annotations

import hashlib
import re
import secrets
import string
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from ..core import sql
from ..core import validate as v
from ..core.connection import Database
from ..core.errors import InvalidInput, NotFound
from .admin import MemoryAdmin

__all__ = ["KeyInfo", "CreatedKey", "Binding", "create_key", "list_keys", "revoke_key",
           "lookup", "hash_key", "parse_key", "KEY_PREFIX"]

KEY_PREFIX = "mdb_"
_ID_ALPHABET = string.ascii_lowercase + string.digits
_KEY_RE = re.compile(r"^mdb_([a-z0-9]{8,32})_([A-Za-z0-9_\-]{20,128})$")


@dataclass(frozen=True)
class KeyInfo:
    """One key as the admin sees it: never its secret nor its hash."""

    id: int
    key_id: str
    tenant: str | None
    subject: str | None
    is_admin: bool
    name: str
    created_by: str
    created_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None

    @property
    def prefix(self) -> str:
        """The visible beginning of the key: ``mdb_<key_id>_``."""
        return f"{KEY_PREFIX}{self.key_id}_"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["prefix"] = self.prefix
        for field in ("created_at", "revoked_at", "last_used_at"):
            out[field] = out[field].isoformat() if out[field] else None
        return out


@dataclass(frozen=True)
class CreatedKey:
    """A new key: ``key`` is the secret to hand over (shown once), ``info`` what is stored."""

    key: str
    info: KeyInfo

    def __repr__(self) -> str:  # never the secret
        return f"CreatedKey(key='{self.info.prefix}***', info={self.info!r})"


@dataclass(frozen=True)
class Binding:
    """What a live key selects: its tenant and subject, or the admin operations."""

    id: int
    key_id: str
    tenant: str | None
    subject: str | None
    is_admin: bool
    name: str


def hash_key(key: str) -> bytes:
    """sha256 of the whole key (what is stored and looked up)."""
    return hashlib.sha256(key.encode("utf-8")).digest()


def parse_key(key: object) -> str | None:
    """The key id of a well-formed key, else None (no database round trip for garbage)."""
    if not isinstance(key, str) or len(key) > 200:
        return None
    match = _KEY_RE.match(key)
    return match.group(1) if match else None


def _info(row: dict[str, Any]) -> KeyInfo:
    return KeyInfo(**{f: row[f] for f in KeyInfo.__dataclass_fields__})


def _admin_db(admin: MemoryAdmin | str | None) -> tuple[MemoryAdmin, bool]:
    if isinstance(admin, MemoryAdmin):
        return admin, False
    return MemoryAdmin(admin), True


def _run(admin: MemoryAdmin | str | None, query: str, params: dict[str, Any]) -> list[dict]:
    handle, owned = _admin_db(admin)
    try:
        handle._verify(require=True)  # an app login is refused (Forbidden), not just denied
        with handle.db.transaction() as conn:
            return conn.execute(sql.query(query), params).fetchall()
    finally:
        if owned:
            handle.close()


def create_key(admin: MemoryAdmin | str | None = None, *, tenant: str | None = None,
               subject: str | None = None, name: str | None = None,
               is_admin: bool = False) -> CreatedKey:
    """A new key for ``tenant`` (and ``subject``), or an admin key (``is_admin=True``, no
    tenant). ``admin``: a :class:`MemoryAdmin`, an admin DSN, or None ($MEMDB_ADMIN_DSN...)."""
    if is_admin:
        if tenant is not None or subject is not None:
            raise InvalidInput("an admin key has no tenant or subject")
    else:
        tenant = v.name(tenant, "tenant")
    subject = v.optional_name(subject, "subject")
    label = v.optional_text(name, "name", v.MAX_NAME_CHARS) or ""
    key_id = "".join(secrets.choice(_ID_ALPHABET) for _ in range(12))
    key = f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
    rows = _run(admin, "key_create", {"key_id": key_id, "sha256": hash_key(key),
                                      "tenant": tenant, "subject": subject,
                                      "is_admin": bool(is_admin), "name": label})
    return CreatedKey(key=key, info=_info(rows[0]))


def list_keys(admin: MemoryAdmin | str | None = None, *, tenant: str | None = None,
              include_revoked: bool = True) -> list[KeyInfo]:
    """Every key (or ``tenant``'s), oldest first; never a secret or a hash."""
    tenant = v.optional_name(tenant, "tenant")
    rows = _run(admin, "key_list", {"tenant": tenant, "include_revoked": bool(include_revoked)})
    return [_info(r) for r in rows]


def revoke_key(admin: MemoryAdmin | str | None = None, ref: str | int = "") -> KeyInfo:
    """Revoke a key by its key id, its prefix (``mdb_<key_id>_``), the whole key, or its numeric
    id; it stops authenticating at once. NotFound when no key matches."""
    text = str(ref).strip()
    key_id = parse_key(text)
    if key_id is None and text.startswith(KEY_PREFIX):
        text = text[len(KEY_PREFIX):].rstrip("_")
    text = key_id or text
    if not text or len(text) > 64:
        raise InvalidInput("give the key id, its prefix mdb_<key_id>_, or the numeric id")
    rows = _run(admin, "key_revoke", {"ref": text})
    if not rows:
        raise NotFound(f"no API key {text!r}")
    return _info(rows[0])


def lookup(db: Database, key: object) -> Binding | None:
    """The binding of a live key presented to the door, or None (malformed, unknown, revoked).
    ``db``: the data path's :class:`Database` (the application login is enough)."""
    if parse_key(key) is None:
        return None
    with db.statement() as conn:  # one statement: no BEGIN/COMMIT round trips
        row = conn.execute(sql.query("key_lookup"), {"sha256": hash_key(str(key))}).fetchone()
    if row is None:
        return None
    return Binding(**{f: row[f] for f in Binding.__dataclass_fields__})
