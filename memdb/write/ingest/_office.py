"""Word, PowerPoint and Excel files as Markdown whose headings keep their structure, so a
chunk's heading path (and so its citation) says where it is:

- ``.docx`` (python-docx): paragraphs and tables in body order; ``Title`` and ``Heading n``
  styles (or an outline level) become headings, list styles ``-`` items.
- ``.pptx`` (python-pptx): one ``## Slide n: title`` section per slide, its shapes' text in
  reading order (top to bottom, left to right; groups and tables included), then its notes.
- ``.xlsx`` (openpyxl, read-only and streamed, cached values not formulas): per sheet,
  sections of rows under ``## Sheet!A1:C21`` headings (:mod:`._tabular`).

Every archive is checked by :func:`._sniff.open_zip` before its library opens it. The
libraries are the ``files`` extra (``pip install "memdb[files]"``).
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any

from ...core.errors import MissingDependency
from ._markdown import cell, heading, plain, sheet_ref, table
from ._readers import Extracted, FileProblem
from ._sniff import open_zip
from ._tabular import MAX_CELLS, row_sections

__all__ = ["docx", "pptx", "xlsx", "FILES_EXTRA"]

FILES_EXTRA = 'pip install "memdb[files]"'
_HEADING_STYLE = re.compile(r"(?i)^heading\s*([1-9])$")
_LIST_STYLE = re.compile(r"(?i)^list")
# what a broken archive member makes these libraries raise (lxml's XMLSyntaxError is a
# SyntaxError; a missing part a KeyError)
_BROKEN = (KeyError, ValueError, TypeError, AttributeError, IndexError, SyntaxError,
           OSError, EOFError, AssertionError, ZeroDivisionError)


def _need(module: str, package: str, what: str) -> Any:
    try:
        return __import__(module, fromlist=["_"])
    except ImportError:
        raise MissingDependency(f"reading {what} needs {package}: {FILES_EXTRA}") from None


def _broken(what: str, exc: BaseException) -> FileProblem:
    return FileProblem("malformed", f"broken {what}: {type(exc).__name__}: {exc}")


def _title(core: Any) -> str | None:
    title = getattr(core, "title", None)
    return title.strip() or None if isinstance(title, str) else None


# -- Word -----------------------------------------------------------------------------------
def _paragraph(p: Any, styles: dict[str, str]) -> str:
    text = p.text.strip()
    if not text:
        return ""
    # the style's name from its id, looked up once per document (python-docx's own lookup
    # walks every style of the document for each paragraph)
    name = styles.get(p._p.style or "", "")
    if name == "Title":
        return heading(1, text)
    match = _HEADING_STYLE.match(name)
    level = int(match.group(1)) if match else None
    if level is None:
        outline = p._p.find(".//{*}outlineLvl")  # a custom style marked as an outline level
        if outline is not None:
            raw = outline.get("{http://schemas.openxmlformats.org/wordprocessingml/2006/main}val")
            level = int(raw) + 1 if raw and raw.isdigit() and int(raw) < 9 else None
    if level is not None:
        return heading(level, text)
    if _LIST_STYLE.match(name):
        return "- " + plain(text)
    return plain(text)


def _docx_table(t: Any) -> str:
    rows = []
    for row in t.rows:
        seen: list[Any] = []
        cells = []
        for c in row.cells:  # a merged cell is repeated across its span: keep it once
            if any(c._tc is s for s in seen):
                continue
            seen.append(c._tc)
            cells.append(cell(c.text))
        rows.append(cells)
    return table(rows) if rows else ""


def docx(data: bytes) -> Extracted:
    docx_mod = _need("docx", "python-docx", "Word files")
    open_zip(data, "Word document")
    try:
        document = docx_mod.Document(io.BytesIO(data))
        styles = {s.style_id: s.name or "" for s in document.styles}
        parts = []
        for item in document.iter_inner_content():
            text = _docx_table(item) if hasattr(item, "rows") else _paragraph(item, styles)
            if text:
                parts.append(text)
        title = _title(document.core_properties)
    except _BROKEN as exc:
        raise _broken("Word document", exc) from None
    return Extracted("\n\n".join(parts) + "\n", "docx", title, None,
                     {"source_format": "docx"})


# -- PowerPoint -----------------------------------------------------------------------------
def _position(shape: Any, index: int) -> tuple[int, int, int]:
    """Where a shape is on its slide (top, left), from its own transform; a placeholder that
    inherits its place from the layout counts as first (python-pptx's inherited lookup costs
    a search of the layout per shape)."""
    xfrm = getattr(shape._element, "xfrm", None)
    off = getattr(xfrm, "off", None) if xfrm is not None else None
    if off is None:
        return (-1, -1, index)
    return (int(off.y), int(off.x), index)


def _shapes(shapes: Any) -> Iterator[Any]:
    listed = list(shapes)
    ordered = [listed[i] for *_, i in sorted(_position(s, i) for i, s in enumerate(listed))]
    for shape in ordered:
        if getattr(shape, "shape_type", None) == 6 and hasattr(shape, "shapes"):  # a group
            yield from _shapes(shape.shapes)
        else:
            yield shape


def _shape_text(shape: Any) -> str:
    if getattr(shape, "has_table", False) and shape.has_table:
        return table([[cell(c.text) for c in row.cells] for row in shape.table.rows])
    if not getattr(shape, "has_text_frame", False) or not shape.has_text_frame:
        return ""
    lines = []
    for p in shape.text_frame.paragraphs:
        text = plain(" ".join(p.text.split()))
        if text:
            lines.append(("  " * p.level + "- " + text) if p.level else text)
    return "\n".join(lines)


def pptx(data: bytes) -> Extracted:
    pptx_mod = _need("pptx", "python-pptx", "PowerPoint files")
    open_zip(data, "PowerPoint presentation")
    try:
        presentation = pptx_mod.Presentation(io.BytesIO(data))
        parts, titles = [], []
        for number, slide in enumerate(presentation.slides, 1):
            title_shape = slide.shapes.title
            title = " ".join(title_shape.text.split()) if title_shape is not None else ""
            titles.append(title)
            parts.append(heading(2, f"Slide {number}: {title}" if title else f"Slide {number}"))
            for shape in _shapes(slide.shapes):
                if title_shape is not None and shape.shape_id == title_shape.shape_id:
                    continue
                text = _shape_text(shape)
                if text:
                    parts.append(text)
            if slide.has_notes_slide:
                notes = slide.notes_slide.notes_text_frame
                if notes is not None and notes.text.strip():
                    parts.append("Notes: " + plain(notes.text.strip()))
        title = _title(presentation.core_properties) or next((t for t in titles if t), None)
    except _BROKEN as exc:
        raise _broken("PowerPoint file", exc) from None
    return Extracted("\n\n".join(parts) + "\n", "pptx", title, None,
                     {"source_format": "pptx", "slides": len(titles)})


# -- Excel ----------------------------------------------------------------------------------
def xlsx(data: bytes, max_cells: int | None = None) -> Extracted:
    """A workbook's sheets; at most ``max_cells`` (default :data:`MAX_CELLS`) cells scanned
    in all, else ``too_large``."""
    openpyxl = _need("openpyxl", "openpyxl", "Excel files")
    open_zip(data, "Excel workbook")
    sheets: list[str] = []
    parts: list[str] = []
    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        try:
            budget = MAX_CELLS if max_cells is None else max_cells
            for sheet in book.worksheets:
                if not hasattr(sheet, "iter_rows"):
                    continue  # a chart sheet
                sheets.append(sheet.title)
                if hasattr(sheet, "reset_dimensions"):
                    sheet.reset_dimensions()  # never trust (nor pad to) a declared size
                name = sheet.title
                rows = enumerate(sheet.iter_rows(values_only=True), 1)
                sections, scanned = row_sections(
                    rows, lambda r0, r1, c0, c1, name=name: sheet_ref(name, r0, r1, c0, c1),
                    max_cells=budget, what=f"workbook (up to sheet {name})")
                budget -= scanned  # the limit is for the whole workbook
                parts += sections
            title = _title(book.properties)
        finally:
            book.close()
    except FileProblem:
        raise
    except _BROKEN as exc:
        raise _broken("Excel workbook", exc) from None
    return Extracted("\n\n".join(parts) + "\n", "xlsx", title, None,
                     {"source_format": "xlsx", "sheets": sheets})
