"""One entry point for every format: the converted ones (:data:`._readers.CONVERTED`) here,
the others by :func:`._readers.extract`."""

from __future__ import annotations

from . import _office, _structured
from ._readers import CONVERTED, Extracted, finish
from ._readers import extract as extract_text

__all__ = ["convert", "extract"]


def extract(data: bytes, fmt: str, name: str) -> Extracted:
    """The text of a source's bytes in format ``fmt`` (any format :func:`._sniff.detect`
    returns); a file with no text is ``FileProblem('empty')``."""
    if fmt in CONVERTED:
        return finish(convert(data, fmt, name), name)
    return extract_text(data, fmt, name)


def convert(data: bytes, fmt: str, name: str) -> Extracted:
    """Markdown (with the structure as headings) of a Word, PowerPoint, Excel, CSV, JSON,
    XML or EPUB file's bytes."""
    if fmt == "docx":
        return _office.docx(data)
    if fmt == "pptx":
        return _office.pptx(data)
    if fmt == "xlsx":
        return _office.xlsx(data)
    if fmt == "csv":
        return _structured.csv_file(data, name)
    if fmt == "json":
        return _structured.json_file(data)
    if fmt == "xml":
        return _structured.xml_file(data)
    if fmt == "epub":
        return _structured.epub(data)
    raise ValueError(f"not a converted format: {fmt}")
