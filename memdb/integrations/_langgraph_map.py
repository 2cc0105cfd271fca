"""How a LangGraph item (namespace tuple, key, value dict) sits in a memdb memory; pure
functions, no I/O (the store in :mod:`memdb.integrations.langgraph` runs them).

* URI: ``mem://{subject}/{category}/ns/{label}/{label}/.../={key}``, every label and the key
  percent-encoded (``/``, ``=``, ``%`` and everything but letters, digits and ``-_.~``), so a
  namespace prefix is a URI prefix (``Filter(uri_prefix=...)``) and the URI names one item.
* value: the memory's ``metadata``; PostgreSQL's JSONB keeps an object's keys in its own order
  (shorter keys first), so where the value's order differs, the order is kept beside it under
  :data:`ORDER_KEY` (:func:`pack`) and restored on every read (:func:`unpack`); its text (the
  ``index`` fields, default the whole value) is the memory's ``content``, followed by the
  item's path in brackets so two items with equal values stay two memories (memdb bumps
  identical content, not copies it).
* ``filter``: equality conditions go to memdb's metadata filter (JSON containment, inside
  the SQL scan); every condition (``$eq``, ``$ne``, ``$gt``...) is then checked exactly here,
  as LangGraph's InMemoryStore does: a comparison (``$gt``...) with a field that is missing or
  not a number raises :class:`FilterTypeError`, as ``float()`` does there.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import quote, unquote

from ..core.errors import InvalidInput
from ..core.uris import encode_subject

__all__ = ["root", "item_uri", "prefix_uri", "parse_uri", "content_for", "norm_key",
           "sql_filter", "matches", "per_field", "field_texts", "compares", "FilterTypeError",
           "pack", "unpack", "ORDER_KEY", "TTL_TAG", "ttl_tag", "ttl_of", "MAX_TEXT_CHARS"]

TAG = "langgraph"
TTL_TAG = "langgraph:ttl="  # + minutes: the item's TTL, renewed on reads
MAX_TEXT_CHARS = 60_000  # content is at most 65,536 characters; the value itself is whole
_OPS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
ORDER_KEY = "langgraph:order"  # in metadata: [[path, [keys in the value's order]], ...]


class FilterTypeError(InvalidInput, TypeError):
    """A filter's comparison (``$gt``, ``$gte``, ``$lt``, ``$lte``) met a field that is missing
    or not a number in some item of the searched namespaces: LangGraph's InMemoryStore raises
    there too (``float()`` of it), so a filter never silently means two things."""


def _jsonb_order(keys: list[str]) -> list[str]:
    """The order PostgreSQL's jsonb keeps an object's keys in: shorter first (in bytes), then
    bytewise."""
    return sorted(keys, key=lambda k: (len(k.encode("utf-8")), k.encode("utf-8")))


def pack(value: dict[str, Any]) -> dict[str, Any]:
    """The metadata that stores ``value``: the value itself, plus :data:`ORDER_KEY` listing the
    keys of every object whose order jsonb would not keep (none: the value as it is)."""
    if ORDER_KEY in value:
        raise InvalidInput(f"{ORDER_KEY!r} is reserved by memdb's LangGraph store (it keeps "
                           "the order of a value's keys); use another key")
    order: list[list[Any]] = []
    stack: list[tuple[Any, list[Any]]] = [(value, [])]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            keys = list(node)
            if len(keys) > 1 and keys != _jsonb_order(keys):
                order.append([path, keys])
            stack.extend((node[k], [*path, k]) for k in reversed(keys))
        elif isinstance(node, list):
            stack.extend((x, [*path, i]) for i, x in reversed(list(enumerate(node))))
    return {**value, ORDER_KEY: order} if order else dict(value)


def unpack(metadata: dict[str, Any]) -> dict[str, Any]:
    """The value :func:`pack` stored: its objects' keys back in the order they were given."""
    order = metadata.get(ORDER_KEY)
    if order is None:
        return metadata
    value = {k: x for k, x in metadata.items() if k != ORDER_KEY}
    for path, keys in order:  # outer objects first: each is rebuilt, then reached by key
        if not path:
            value = {k: value[k] for k in keys}
            continue
        parent: Any = value
        for step in path[:-1]:
            parent = parent[step]
        node = parent[path[-1]]
        parent[path[-1]] = {k: node[k] for k in keys}
    return value


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


def _label(text: str) -> str:
    """A label or key in the content's path: ``%`` and ``/`` escaped, so ``("a",)`` + ``"b/c"``
    and ``("a", "b")`` + ``"c"`` are different paths (and different contents)."""
    return text.replace("%", "%25").replace("/", "%2F")


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


def per_field(fields: list[str] | None | bool) -> bool:
    """Whether these index fields get a vector per extracted text (:func:`field_texts`): an
    explicit list of paths other than the whole value (``["$"]``, memdb's one vector)."""
    return isinstance(fields, list) and fields != ["$"]


def field_texts(value: dict[str, Any], fields: list[str]) -> list[tuple[str, int, str]]:
    """(path, ordinal, text) for each text the paths extract, as LangGraph's stores embed them
    one by one (a path reaching several texts, ``a[*]``, gives one row each); blank texts are
    left out (nothing to embed)."""
    from langgraph.store.base import get_text_at_path

    out: list[tuple[str, int, str]] = []
    for path in dict.fromkeys(fields):
        texts = [t for t in get_text_at_path(value, path) if t is not None]
        out.extend((path, i, text[:MAX_TEXT_CHARS]) for i, text in enumerate(texts)
                   if text.strip())
    return out


def content_for(value: dict[str, Any], namespace: tuple[str, ...], key: str,
                fields: list[str] | None | bool) -> str:
    """What memdb indexes (BM25, exact) and embeds for this item: its text, then its path."""
    text = "" if fields is False else _text(value, None if fields is True else fields)
    path = "[" + "/".join(_label(x) for x in (*namespace, key)) + "]"
    return f"{text[:MAX_TEXT_CHARS]}\n{path}" if text.strip() else path


def sql_filter(flt: dict[str, Any] | None) -> dict[str, Any] | None:
    """The part of a LangGraph filter memdb's metadata containment can check in SQL: the
    plain and ``$eq`` conditions on strings (necessary for a match; numbers, booleans and
    null stay out, since Python's ``==`` that LangGraph uses has ``True == 1`` and a missing
    field equal to ``None``; :func:`matches` checks every condition exactly)."""
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
            if isinstance(cond.get("$eq"), str):
                out[field] = cond["$eq"]
        elif isinstance(cond, str):
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
    except (TypeError, ValueError, OverflowError) as exc:
        raise FilterTypeError(f"filter {op} compares numbers: {value!r} and {arg!r} are not "
                              "both numbers (an item lacks the field or holds something else; "
                              "narrow the namespace or filter on an equality first)") from exc
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def matches(value: dict[str, Any], flt: dict[str, Any] | None) -> bool:
    """Whether an item's value passes a LangGraph filter (every condition holds, checked in
    the filter's order and stopping at the first that fails, as InMemoryStore does)."""
    return not flt or all(_compare(value.get(k), c) for k, c in flt.items())


def compares(flt: dict[str, Any] | None) -> bool:
    """Whether a filter holds a comparison that can raise (:class:`FilterTypeError`): then
    every item under the prefix is checked, not only the page returned."""
    def walk(cond: Any) -> bool:
        if isinstance(cond, dict):
            return any(str(k) in ("$gt", "$gte", "$lt", "$lte") or walk(c)
                       for k, c in cond.items())
        if isinstance(cond, (list, tuple)):
            return any(walk(c) for c in cond)
        return False
    return bool(flt) and walk(flt)
