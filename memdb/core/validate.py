"""Input checks for the public API: each bad value becomes an InvalidInput naming the field,
before anything reaches the database."""

from __future__ import annotations

import enum
import json
import math
import struct
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar
from uuid import UUID

from .errors import InvalidInput

MAX_CONTENT_CHARS = 65_536  # also a CHECK constraint on memdb.memories.content
MAX_NAME_CHARS = 256  # tenant, subject, agent, ids, tags
MAX_METADATA_BYTES = 65_536
MAX_METADATA_DEPTH = 100  # nested dicts/lists, the top-level object included
MAX_REASON_CHARS = 1_000  # a history row's reason: why, in a sentence, not a document
MAX_OFFSET = 2**31 - 1  # list offsets are PostgreSQL integers
# Names memdb uses itself, refused as a tenant, subject or agent from every door (all of them
# validate those names through name() below): "*" is the subject of a tenant-wide retrieval
# trace (memdb.retrieval.recall) and the all-tenants key of run_maintenance's lock. A store
# confined to
# subject "*" would read, and its erasure delete, every tenant-wide trace of its tenant.
RESERVED_NAMES = frozenset({"*"})
SCOPE_FIELDS = frozenset({"tenant", "subject", "agent"})

E = TypeVar("E", bound=enum.Enum)


def _utf8(value: str, field: str) -> None:
    if "\x00" in value:
        raise InvalidInput(f"{field} contains a NUL byte")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{field} is not valid Unicode (lone surrogate?)") from exc


def content(value: object, field: str = "content") -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidInput(f"{field} is empty")
    if len(value) > MAX_CONTENT_CHARS:
        raise InvalidInput(f"{field} is {len(value)} characters; the limit is {MAX_CONTENT_CHARS}")
    _utf8(value, field)
    return value


def optional_text(value: object, field: str, limit: int = MAX_CONTENT_CHARS) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string, got {type(value).__name__}")
    if len(value) > limit:
        raise InvalidInput(f"{field} is longer than {limit} characters")
    _utf8(value, field)
    return value


def name(value: object, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field} must be a non-empty string")
    result = optional_text(value, field, MAX_NAME_CHARS)
    assert result is not None
    if field in SCOPE_FIELDS and result in RESERVED_NAMES:
        raise InvalidInput(f"{field} name {result!r} is reserved by memdb (it marks tenant-wide "
                           f"retrieval traces); choose another {field} name")
    return result


def optional_name(value: object, field: str) -> str | None:
    return None if value is None else name(value, field)


def choice(value: object, enum_type: type[E], field: str) -> E:
    try:
        return enum_type(value)
    except ValueError:
        allowed = ", ".join(m.value for m in enum_type)
        raise InvalidInput(f"unknown {field} {value!r} (expected one of: {allowed})") from None


def unit(value: object, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(f"{field} must be a number in [0, 1]")
    if isinstance(value, int) and not 0 <= value <= 1:  # also an int too large for a float
        raise InvalidInput(f"{field} must be in [0, 1]")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise InvalidInput(f"{field} must be in [0, 1], got {value}")
    # compared and stored as real, whose parser refuses a literal that underflows float32
    # (1e-50): round to the nearest float32 here (1e-50 -> 0.0)
    return struct.unpack("f", struct.pack("f", value))[0]


def metadata(value: object, field: str = "metadata") -> dict[str, Any]:
    """A JSON object of at most MAX_METADATA_BYTES; errors name ``field``."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput(f"{field} must be a dict")
    _metadata_tree(value, field)
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInput(f"{field} is not JSON-serializable: {exc}") from exc
    _utf8(text, field)
    if len(text.encode("utf-8")) > MAX_METADATA_BYTES:
        raise InvalidInput(f"{field} is larger than {MAX_METADATA_BYTES} bytes as JSON")
    return value


def _metadata_tree(value: dict[str, Any], field: str = "metadata") -> None:
    """Refuse what JSON would not store as given: a NUL in any key or string (a literal
    backslash-u-0000 is fine), keys that are not strings, and nesting deeper than
    MAX_METADATA_DEPTH (json and psycopg recurse: a deeper tree raises RecursionError)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise InvalidInput(f"{field} contains a NUL character")
        elif isinstance(item, (dict, list, tuple)):
            if depth > MAX_METADATA_DEPTH:
                raise InvalidInput(f"{field} is nested deeper than {MAX_METADATA_DEPTH} levels")
            if isinstance(item, dict):
                if not all(isinstance(k, str) for k in item):
                    # json.dumps would turn 1 into "1" (and {1: .., "1": ..} into one key)
                    raise InvalidInput(f"{field} keys must be strings")
                stack.extend((k, depth) for k in item)
                stack.extend((v, depth + 1) for v in item.values())
            else:
                stack.extend((v, depth + 1) for v in item)


def tags(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, (list, tuple, set, frozenset)):
        raise InvalidInput("tags must be a list of strings")
    return sorted({name(t, "tag") for t in value})


def timestamp(value: object, field: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError as exc:
            raise InvalidInput(f"{field} is not an ISO 8601 timestamp: {value!r}") from exc
    if not isinstance(value, datetime):
        raise InvalidInput(f"{field} must be a datetime or ISO 8601 string")
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value


# An expiry must stay a timestamp Python can read back (year 9999); a memory meant to live
# longer than this simply has no expiry.
MAX_TTL = timedelta(days=1000 * 365)


def ttl(value: object) -> timedelta | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise InvalidInput("ttl must be finite")
        try:
            value = timedelta(seconds=value)
        except OverflowError:
            raise InvalidInput(f"ttl is too large: {value} seconds") from None
    if not isinstance(value, timedelta):
        raise InvalidInput("ttl must be seconds or a timedelta")
    if value <= timedelta(0):
        raise InvalidInput("ttl must be positive")
    if value > MAX_TTL:
        raise InvalidInput(f"ttl must be at most {MAX_TTL.days // 365} years (none: no expiry)")
    return value


# The longest span a count of days or hours may name (the same horizon as MAX_TTL): a longer one
# would overflow Python's timedelta or PostgreSQL's interval.
MAX_DAYS = 1000 * 365
MAX_HOURS = MAX_DAYS * 24


def number(value: object, field: str, minimum: float, maximum: float, *,
           above_minimum: bool = False) -> float:
    """A finite int or float from ``minimum`` to ``maximum`` (or, with ``above_minimum``,
    greater than ``minimum``): NaN, the infinities and huge values (1e308) are InvalidInput,
    never an OverflowError further down."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(f"{field} must be a number")
    try:
        result = float(value)
    except OverflowError:  # an int too large for a float
        raise InvalidInput(f"{field} must be at most {maximum:g}") from None
    if not math.isfinite(result):
        raise InvalidInput(f"{field} must be a finite number")
    low = "greater than" if above_minimum else "at least"
    if result < minimum or (above_minimum and result == minimum):
        raise InvalidInput(f"{field} must be {low} {minimum:g}")
    if result > maximum:
        raise InvalidInput(f"{field} must be at most {maximum:g}")
    return result


def days(value: object, field: str, *, positive: bool = False) -> float:
    """A number of days from 0 (or above 0 with ``positive``) to MAX_DAYS."""
    return number(value, field, 0, MAX_DAYS, above_minimum=positive)


def hours(value: object, field: str) -> float:
    """A positive number of hours, at most MAX_HOURS."""
    return number(value, field, 0, MAX_HOURS, above_minimum=True)


def positive_int(value: object, field: str, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise InvalidInput(f"{field} must be an integer from 1 to {maximum}, got {value!r}")
    return value


def offset(value: object, field: str = "offset") -> int:
    """A list offset: an integer from 0 to MAX_OFFSET."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_OFFSET:
        raise InvalidInput(f"{field} must be an integer from 0 to {MAX_OFFSET}, got {value!r}")
    return value


def uuid(value: object, what: str = "memory id") -> UUID:
    """``value`` as a UUID; InvalidInput naming ``what`` it should have been."""
    if isinstance(value, UUID):
        return value
    try:
        return UUID(str(value))
    except ValueError:
        raise InvalidInput(f"not a {what} (UUID): {str(value)[:80]!r}") from None


def reason(value: object) -> str | None:
    """Why a change was made, for its history rows: None or at most MAX_REASON_CHARS."""
    return optional_text(value, "reason", MAX_REASON_CHARS)
