"""How a LangGraph item (namespace tuple, key, value dict) sits in a memdb memory; pure
functions, no I/O (the store in :mod:`memdb.integrations.langgraph` runs them).

* URI: ``mem://{subject}/{category}/ns/{label}/{label}/.../={key}``, every label and the key
  percent-encoded (``/``, ``=``, ``%`` and everything but letters, digits and ``-_.~``), so a
  namespace prefix is a URI prefix (``Filter(uri_prefix=...)``) and the URI names one item.
* value: the memory's ``metadata``, exactly; its text (the ``index`` fields, default the
  whole value) is the memory's ``content``, followed by the item's path in brackets so two
  items with equal values stay two memories (memdb bumps identical content, not copies it).
* ``filter``: equality conditions go to memdb's metadata filter (JSON containment, inside
  the SQL scan); every condition (``$eq``, ``$ne``, ``$gt``...) is then checked exactly here,
  as LangGraph's InMemoryStore does.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import quote, unquote

from ..errors import InvalidInput
from ..uris import encode_subject

__all__ = ["root", "item_uri", "prefix_uri", "parse_uri", "content_for", "norm_key",
           "sql_filter", "matches", "TTL_TAG", "ttl_tag", "ttl_of", "MAX_TEXT_CHARS"]

TAG = "langgraph"
TTL_TAG = "langgraph:ttl="  # + minutes: the item's TTL, renewed on reads
MAX_TEXT_CHARS = 60_000  # content is at most 65,536 characters; the value itself is whole
_OPS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def _seg(text: str) -> str:
    return quote(text, safe="").replace("~", "%7E")


def root(subject: str, category: str) -> str:
    return f"mem://{encode_subject(subject)}/{category}/ns/"


def prefix_uri(base: str, namespace: tuple[str, ...]) -> str:
    """The URI prefix of every item in ``namespace`` or below it."""
    return base + "".join(_seg(label) + "/" for label in namespace)


def item_uri(base: str, namespace: tuple[str, ...], key: str) -> str:
    return prefix_uri(base, namespace) + "=" + _seg(key)


def parse_uri(base: str, uri: str) -> tuple[tuple[str, ...], str]:
    """(namespace, key) of an item URI made by :func:`item_uri`."""
    *labels, last = uri[len(base):].split("/")
    return tuple(unquote(x) for x in labels), unquote(last[1:])


def namespace_of(base: str, prefix: str) -> tuple[str, ...]:
    """The namespace of a URI prefix (an item URI without its ``=key``)."""
    return tuple(unquote(x) for x in prefix[len(base):].split("/") if x)


def norm_key(uri: str) -> str:
    """The item's memdb slot: a second concurrent first put of one key supersedes the other
    instead of leaving two current rows (hex, so memdb's key normalization keeps it)."""
    return TAG + ":" + hashlib.sha256(uri.encode("utf-8")).hexdigest()


def ttl_tag(minutes: float) -> str:
    return f"{TTL_TAG}{float(minutes)!r}"


def ttl_of(tags: tuple[str, ...] | list[str]) -> float | None:
    for tag in tags:
        if tag.startswith(TTL_TAG):
            return float(tag[len(TTL_TAG):])
    return None


def _render(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _text(value: dict[str, Any], fields: list[str] | None) -> str:
    from langgraph.store.base import get_text_at_path  # the framework's own path syntax

    if fields is None or fields == ["$"]:
        return "\n".join(f"{k}: {_render(v)}" for k, v in value.items())
    parts: list[str] = []
    for path in fields:
        parts.extend(_render(t) for t in get_text_at_path(value, path) if t is not None)
    return "\n".join(p for p in parts if p.strip())


def content_for(value: dict[str, Any], namespace: tuple[str, ...], key: str,
                fields: list[str] | None | bool) -> str:
    """What memdb indexes (BM25, exact) and embeds for this item: its text, then its path."""
    text = "" if fields is False else _text(value, None if fields is True else fields)
    path = "[" + "/".join((*namespace, key)) + "]"
    return f"{text[:MAX_TEXT_CHARS]}\n{path}" if text.strip() else path


def sql_filter(flt: dict[str, Any] | None) -> dict[str, Any] | None:
    """The part of a LangGraph filter memdb's metadata containment can check in SQL: the
    plain and ``$eq`` conditions on scalar values (necessary for a match, never sufficient
    for lists and objects, which :func:`matches` checks exactly)."""
    if not flt:
        return None
    if not isinstance(flt, dict):
        raise InvalidInput("filter must be a dict of field: value or field: {operator: value}")
    out: dict[str, Any] = {}
    for field, cond in flt.items():
        if isinstance(cond, dict) and any(str(k).startswith("$") for k in cond):
            unknown = [k for k in cond if k not in _OPS]
            if unknown:
                raise InvalidInput(f"unsupported filter operator(s) {unknown} for {field!r}; "
                                   f"use {', '.join(_OPS)}")
            if "$eq" in cond and not isinstance(cond["$eq"], (dict, list)):
                out[field] = cond["$eq"]
        elif not isinstance(cond, (dict, list, tuple)):
            out[field] = cond
    return out or None


def _compare(item: Any, cond: Any) -> bool:
    if isinstance(cond, dict):
        if any(str(k).startswith("$") for k in cond):
            return all(_operator(item, op, arg) for op, arg in cond.items())
        return isinstance(item, dict) and all(_compare(item.get(k), v) for k, v in cond.items())
    if isinstance(cond, (list, tuple)):
        return (isinstance(item, (list, tuple)) and len(item) == len(cond)
                and all(_compare(i, c) for i, c in zip(item, cond, strict=True)))
    return item == cond


def _operator(value: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return value == arg
    if op == "$ne":
        return value != arg
    try:
        a, b = float(value), float(arg)
    except (TypeError, ValueError):
        return False  # a missing or non-numeric field never compares
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def matches(value: dict[str, Any], flt: dict[str, Any] | None) -> bool:
    """Whether an item's value passes a LangGraph filter (every condition holds)."""
    return not flt or all(_compare(value.get(k), c) for k, c in flt.items())
