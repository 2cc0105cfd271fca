"""``Filter``: which memories a list or search may see. It becomes the JSON object that the SQL
function ``memdb.matches`` evaluates (keys documented in ``memdb.check_filter``), so Python and
psql users filter identically."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from . import validate as v
from .errors import InvalidInput
from .models import STATUSES, Category, Kind, Scope, SourceType

__all__ = ["Filter"]

_ENUMS = {"kind": Kind, "category": Category, "scope": Scope, "source_type": SourceType}
_NAMES = ("subject", "agent", "project_id", "session_id")


def _many(value: Any) -> tuple[Any, ...] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        return (value,)
    values = tuple(value)
    if not values:
        raise InvalidInput("an empty list matches nothing; leave the filter out instead")
    return values


def _prefix(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInput("uri_prefix must be a non-empty string, such as "
                           "'mem://alice/preferences/'")
    return v.optional_text(value, "uri_prefix", 2048) or ""


@dataclass(frozen=True)
class Filter:
    """All given conditions must hold; ``None`` means "any". Multi-valued fields take one
    value or a list (any of them). Subjects and ids match exactly, never by prefix;
    ``uri_prefix`` (one or a list) keeps memories whose URI starts with it, such as
    ``"mem://alice/preferences/"`` (plain text: ``%`` and ``_`` are not wildcards);
    ``status`` is ``"active"`` or ``"hypothesis"`` (a model inference kept at low confidence)."""

    subject: str | Iterable[str] | None = None
    agent: str | Iterable[str] | None = None
    scope: str | Iterable[str] | None = None
    project_id: str | Iterable[str] | None = None
    session_id: str | Iterable[str] | None = None
    kind: str | Iterable[str] | None = None
    category: str | Iterable[str] | None = None
    source_type: str | Iterable[str] | None = None
    tags: Iterable[str] | None = None
    tags_any: Iterable[str] | None = None
    uri_prefix: str | Iterable[str] | None = None
    status: str | Iterable[str] | None = None
    created_after: datetime | str | None = None
    created_before: datetime | str | None = None
    min_importance: float | None = None
    metadata: dict[str, Any] | None = None
    as_of: datetime | str | None = None
    include_expired: bool = False

    @classmethod
    def of(cls, value: Filter | dict[str, Any] | None = None, **kwargs: Any) -> Filter:
        """A Filter from a Filter, a dict of its fields, and/or keyword fields."""
        base: dict[str, Any] = {}
        if isinstance(value, Filter):
            base = {f.name: getattr(value, f.name) for f in fields(cls)}
        elif isinstance(value, dict):
            base = dict(value)
        elif value is not None:
            raise InvalidInput(f"filter must be a Filter or dict, got {type(value).__name__}")
        base.update({k: val for k, val in kwargs.items() if val is not None})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(base) - known)
        if unknown:
            raise InvalidInput(f"unknown filter field(s): {', '.join(unknown)}")
        return cls(**base)

    def to_json(self) -> dict[str, Any]:
        """The filter as memdb.matches() expects it; validates every value."""
        out: dict[str, Any] = {}
        for key, enum_type in _ENUMS.items():
            values = _many(getattr(self, key))
            if values is not None:
                out[key] = [v.choice(x, enum_type, key).value for x in values]
        for key in _NAMES:
            values = _many(getattr(self, key))
            if values is not None:
                out[key] = [v.name(x, key) for x in values]
        for key in ("tags", "tags_any"):
            value = getattr(self, key)
            if value is not None:
                out[key] = v.tags(value)
        statuses = _many(self.status)
        if statuses is not None:
            if not all(isinstance(s, str) and s in STATUSES for s in statuses):
                raise InvalidInput(f"status must be one of {', '.join(STATUSES)} (or a list)")
            out["status"] = list(statuses)
        prefixes = _many(self.uri_prefix)
        if prefixes is not None:
            out["uri_prefix"] = [_prefix(x) for x in prefixes]
        for key in ("created_after", "created_before", "as_of"):
            stamp = v.timestamp(getattr(self, key), key)
            if stamp is not None:
                out[key] = stamp.isoformat()
        if self.min_importance is not None:
            out["min_importance"] = v.unit(self.min_importance, "min_importance")
        if self.metadata is not None:
            out["metadata"] = v.metadata(self.metadata)
        if not isinstance(self.include_expired, bool):
            raise InvalidInput("include_expired must be true or false")
        if self.include_expired:
            out["include_expired"] = True
        return out
