"""Safe-by-construction HTML: text is escaped unless it is :class:`Markup` (made only by
:func:`tag` and :func:`esc`), so a memory holding ``<script>`` is shown, never run."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["Markup", "esc", "tag", "text", "document"]

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


class Markup(str):
    """HTML already escaped or built here."""


def esc(value: Any) -> Markup:
    if isinstance(value, Markup):
        return value
    return Markup(html.escape("" if value is None else str(value), quote=True))


def _children(items: Iterable[Any]) -> str:
    out = []
    for item in items:
        if item is None or item is False:
            continue
        if isinstance(item, (list, tuple)):
            out.append(_children(item))
        else:
            out.append(esc(item))
    return "".join(out)


def tag(name: str, /, *children: Any, **attrs: Any) -> Markup:
    """``<name attrs>children</name>``; attribute names drop a trailing ``_`` (``class_``)
    and turn ``_`` into ``-``; None/False attributes are left out, True ones are bare."""
    parts = [name]
    for key, value in attrs.items():
        if value is None or value is False:
            continue
        key = key.rstrip("_").replace("_", "-")
        parts.append(key if value is True else f'{key}="{esc(value)}"')
    opening = "<" + " ".join(parts) + ">"
    if name in ("input", "br", "meta", "hr", "img"):
        return Markup(opening)
    return Markup(opening + _children(children) + f"</{name}>")


def text(value: Any, name: str = "span", /, **attrs: Any) -> Markup:
    """User text in an element carrying its language (zh for Chinese, Japanese or Korean
    script, else en) so that the browser picks fonts for it."""
    lang = "zh" if _CJK.search(str(value or "")) else "en"
    return tag(name, value, lang=lang, **attrs)


_STYLE = """
body{font-family:system-ui,"Noto Sans CJK SC","Noto Sans",sans-serif;margin:0;color:#222}
header{background:#243b53;color:#fff;padding:.5em 1em}header a{color:#fff;margin-right:1em}
main{padding:1em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25em .5em;
vertical-align:top;text-align:left}pre{background:#f4f4f4;padding:.5em;overflow:auto}
.muted{color:#777}.error{color:#a00}form.inline{display:inline}
table.details th{font-weight:normal;color:#486581}summary{cursor:pointer;color:#486581}
ol.timeline{border-left:3px solid #243b53;list-style:none;padding-left:1em}
"""


def document(title: str, body: Any, *, nav: Any = None) -> str:
    return "<!DOCTYPE html>" + tag(
        "html",
        tag("head", tag("meta", charset="utf-8"),
            tag("meta", name="viewport", content="width=device-width, initial-scale=1"),
            tag("title", f"{title} · memdb"), tag("style", Markup(_STYLE))),
        tag("body", tag("header", nav) if nav is not None else None,
            tag("main", tag("h1", text(title)), body)),
        lang="en")
