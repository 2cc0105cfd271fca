"""CSV, JSON, XML and EPUB as Markdown whose headings keep their structure:

- CSV (``.csv``, ``.tsv``; the delimiter sniffed): sections of rows under ``## rows 1–20``
  headings, the header row repeated in each (:mod:`._tabular`).
- JSON (``.json``; JSON Lines too): an object's keys become headings (``users``, then
  ``users[3]`` for the items of a list of nested objects), scalars ``key: value`` lines; a
  list of flat objects (records) is a table, in sections headed ``users[0–19]``.
- XML (``.xml``, parsed by defusedxml: entity declarations and external references are
  refused as ``unsafe``): an element with children becomes a heading (its tag, plus its
  ``id``/``name``/``title`` attribute), a leaf a ``tag: text`` line.
- EPUB: the chapters in reading order (the spine of the package document), each converted
  from XHTML by html2text; a chapter without a heading of its own gets one.
"""

from __future__ import annotations

import csv
import io
import json
import posixpath
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

from ...core.errors import MissingDependency
from ._markdown import heading, plain
from ._readers import Extracted, FileProblem, decode, html_to_markdown
from ._sniff import open_zip
from ._tabular import row_sections

__all__ = ["csv_file", "json_file", "xml_file", "epub"]

_FILES_EXTRA = 'pip install "memdb[files]"'
_LABEL_ATTRS = ("id", "name", "title", "key")


# -- CSV ------------------------------------------------------------------------------------
def csv_file(data: bytes, name: str) -> Extracted:
    text, encoding = decode(data)
    sample = text[:8192]
    if name.lower().endswith(".tsv"):
        delimiter = "\t"
    else:
        try:
            delimiter = csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
        except csv.Error:
            delimiter = ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        sections, _ = row_sections(enumerate(reader, 1),
                                   lambda r0, r1, c0, c1: f"rows {r0}–{r1}", what="CSV file")
    except csv.Error as exc:
        raise FileProblem("malformed", f"malformed CSV: {exc}") from None
    return Extracted("\n\n".join(sections) + "\n", "csv", None, encoding,
                     {"source_format": "csv", "delimiter": delimiter})


# -- JSON -----------------------------------------------------------------------------------
def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return " ".join(value.split())
    return json.dumps(value, ensure_ascii=False)


def _flat(value: Any) -> bool:
    return not isinstance(value, (dict, list)) or (
        isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value))


def _line(key: str, value: Any) -> str:
    if isinstance(value, list):
        return f"{key}: " + ", ".join(_scalar(v) for v in value)
    return f"{key}: {_scalar(value)}"


def _json_blocks(value: Any, name: str, level: int) -> Iterator[str]:
    if isinstance(value, dict):
        lines = [_line(str(k), v) for k, v in value.items() if _flat(v)]
        if lines:
            yield plain("\n".join(lines))
        for k, v in value.items():
            if not _flat(v):
                yield heading(level, str(k))
                yield from _json_blocks(v, str(k), level + 1)
    elif isinstance(value, list):
        if _flat(value):
            yield plain(_line(name or "items", value))
            return
        if all(isinstance(v, dict) and all(_flat(x) for x in v.values()) for v in value):
            yield from _records(value, name or "items", level)  # records: a table
            return
        for i, item in enumerate(value):
            yield heading(level, f"{name}[{i}]")
            yield from _json_blocks(item, f"{name}[{i}]", level + 1)
    else:
        yield plain(_scalar(value))


def _records(items: list[dict[str, Any]], name: str, level: int) -> Iterator[str]:
    """A list of flat objects as table sections of at most 20 items, headed by the items'
    indexes (``services[20–39]``), their keys as the header row."""
    keys = list(dict.fromkeys(str(k) for item in items for k in item))

    def text(v: Any) -> str:
        if v is None:
            return ""
        if isinstance(v, list):
            return ", ".join(_scalar(x) for x in v)
        return v if isinstance(v, str) else _scalar(v)

    rows = [(0, keys), *((i + 1, [text(item.get(k)) for k in keys])
                         for i, item in enumerate(items))]
    sections, _ = row_sections(rows, lambda r0, r1, c0, c1: f"{name}[{max(r0, 1) - 1}–{r1 - 1}]",
                               level=level, what="JSON array")
    yield from sections


def json_file(data: bytes) -> Extracted:
    text, encoding = decode(data)
    try:
        try:
            value = json.loads(text)
            blocks = list(_json_blocks(value, "", 1))
            kind = "json"
        except json.JSONDecodeError as exc:
            lines = [(n, line) for n, line in enumerate(text.split("\n"), 1) if line.strip()]
            try:  # JSON Lines: one value per line
                records = [(n, json.loads(line)) for n, line in lines]
            except json.JSONDecodeError:
                raise FileProblem("malformed", f"invalid JSON: {exc}") from None
            blocks = []
            for n, record in records:
                blocks.append(heading(1, f"line {n}"))
                blocks += _json_blocks(record, f"line {n}", 2)
            kind = "jsonl"
    except RecursionError:
        raise FileProblem("malformed", "JSON nested too deeply") from None
    title = None
    if kind == "json" and isinstance(value, dict):
        found = value.get("title") or value.get("name")
        title = " ".join(found.split())[:200] or None if isinstance(found, str) else None
    return Extracted("\n\n".join(b for b in blocks if b) + "\n", "json", title, encoding,
                     {"source_format": kind})


# -- XML ------------------------------------------------------------------------------------
def _parse_xml(data: bytes, what: str) -> Any:
    try:
        from defusedxml import DefusedXmlException
        from defusedxml.ElementTree import ParseError, fromstring
    except ImportError:
        raise MissingDependency(f"reading {what} needs defusedxml: {_FILES_EXTRA}") from None
    try:
        return fromstring(data)
    except DefusedXmlException as exc:
        raise FileProblem("unsafe", f"{what} declares entities or external references "
                          f"(refused, as an XML bomb could): {exc}") from None
    except (ParseError, ValueError) as exc:
        raise FileProblem("malformed", f"malformed {what}: {exc}") from None


def _local(tag: Any) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _label(elem: Any) -> str:
    tag = _local(elem.tag)
    for attr in _LABEL_ATTRS:
        for key, value in elem.attrib.items():
            if _local(key) == attr and value.strip():
                return f"{tag} {' '.join(value.split())}"
    return tag


def _xml_blocks(elem: Any, level: int) -> Iterator[str]:
    own = [" ".join((elem.text or "").split())]
    lines, nested = [], []
    for child in elem:
        if not isinstance(child.tag, str):  # a comment or processing instruction
            own.append(" ".join((child.tail or "").split()))
            continue
        if len(child):
            nested.append(child)
        else:
            text = " ".join((child.text or "").split())
            if text:
                lines.append(f"{_label(child)}: {text}")
        own.append(" ".join((child.tail or "").split()))
    yield heading(level, _label(elem))
    body = "\n".join([t for t in [" ".join(o for o in own if o)] if t] + lines)
    if body:
        yield plain(body)
    for child in nested:
        yield from _xml_blocks(child, level + 1)


def xml_file(data: bytes) -> Extracted:
    root = _parse_xml(data, "XML file")
    try:
        blocks = list(_xml_blocks(root, 1))
    except RecursionError:
        raise FileProblem("malformed", "XML nested too deeply") from None
    return Extracted("\n\n".join(blocks) + "\n", "xml", None, None, {"source_format": "xml"})


# -- EPUB -----------------------------------------------------------------------------------
def _member(zf: Any, name: str) -> bytes:
    try:
        return zf.read(name)
    except KeyError:
        raise FileProblem("malformed", f"EPUB has no {name}") from None


def epub(data: bytes) -> Extracted:
    zf = open_zip(data, "EPUB book")
    with zf:
        container = _parse_xml(_member(zf, "META-INF/container.xml"), "EPUB container")
        rootfile = next((e.get("full-path") for e in container.iter()
                         if _local(e.tag) == "rootfile" and e.get("full-path")), None)
        if not rootfile:
            raise FileProblem("malformed", "EPUB container names no package document")
        opf = _parse_xml(_member(zf, rootfile), "EPUB package document")
        base = posixpath.dirname(rootfile)
        manifest = {e.get("id"): e.get("href") for e in opf.iter()
                    if _local(e.tag) == "item" and e.get("id") and e.get("href")}
        titles = [" ".join((e.text or "").split()) for e in opf.iter() if _local(e.tag) == "title"]
        parts = []
        chapters = 0
        for ref in (e.get("idref") for e in opf.iter() if _local(e.tag) == "itemref"):
            href = manifest.get(ref)
            if not href:
                continue
            path = posixpath.normpath(posixpath.join(base, unquote(href.split("#")[0])))
            chapter = html_to_markdown(_member(zf, path)).strip()
            if not chapter:
                continue
            chapters += 1
            if not chapter.startswith("#"):
                name = posixpath.splitext(posixpath.basename(path))[0]
                chapter = heading(2, name) + "\n\n" + chapter
            parts.append(chapter)
    title = next((t for t in titles if t), None)
    return Extracted("\n\n".join(parts) + "\n", "epub", title, None,
                     {"source_format": "epub", "chapters": chapters})
