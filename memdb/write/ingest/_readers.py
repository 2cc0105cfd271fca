"""Reading one source into text: format by file suffix (the content decides first:
:mod:`._sniff`), encoding detection, and the per-file problems (binary, empty, undecodable,
missing extra) as :class:`FileProblem`.

Markdown and plain text need nothing beyond the standard library; HTML is converted to
Markdown by ``html2text`` and PDF text is extracted by ``pypdf`` (a scanned page, without a
text layer, is read by OCR: :mod:`._scanned`) — both in the ``docs`` extra
(``pip install "memdb[docs]"``), as is ``charset-normalizer`` for encodings other than UTF-8,
UTF-16 (with BOM) and GB18030/GBK, which are recognised without it. Word, PowerPoint, Excel,
CSV, JSON, XML and EPUB are converted to Markdown by :mod:`._office` and :mod:`._structured`
(the ``files`` extra).
"""

from __future__ import annotations

import codecs
import errno
import html
import io
import os
import re
import stat
from dataclasses import dataclass, field
from typing import Any

from ...core.errors import MissingDependency
from ._scanned import PageReader

__all__ = ["CONVERTED", "Extracted", "FileProblem", "FORMATS", "format_for", "decode",
           "extract", "finish", "html_to_markdown", "not_regular", "read_regular"]

FORMATS = {
    ".md": "markdown", ".markdown": "markdown", ".mdx": "markdown", ".mdown": "markdown",
    ".txt": "text", ".text": "text", ".rst": "text", ".log": "text",
    ".html": "html", ".htm": "html", ".xhtml": "html",
    ".pdf": "pdf",
    ".docx": "docx", ".docm": "docx", ".pptx": "pptx", ".pptm": "pptx",
    ".xlsx": "xlsx", ".xlsm": "xlsx", ".csv": "csv", ".tsv": "csv", ".epub": "epub",
    ".json": "json", ".jsonl": "json", ".ndjson": "json", ".xml": "xml",
}
CONVERTED = ("docx", "pptx", "xlsx", "csv", "epub", "json", "xml")
"""Formats converted to Markdown (stored as format ``markdown``, the source format in the
document's metadata as ``source_format``)."""
_EXTRA = 'pip install "memdb[docs]"'
_CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")
_H1 = re.compile(r"^ {0,3}#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


class FileProblem(Exception):
    """Why one source cannot be ingested; ``kind`` is a stable keyword for reports."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class Extracted:
    """A source's text (newlines normalised to ``\\n``), as chunk offsets will index it."""

    text: str
    format: str
    title: str | None
    encoding: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISDIR, "a folder"))


def not_regular(path: object, mode: int) -> FileProblem:
    """The problem of a path that is not a regular file (kind ``not_regular``)."""
    what = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return FileProblem("not_regular", f"{path} is {what}, not a regular file: skipped")


def read_regular(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """At most ``max_bytes + 1`` bytes of a regular file. Opened non-blocking and checked on
    the open descriptor, so a FIFO (or a file swapped for one after discovery) is reported
    instead of blocking the reader forever."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except IsADirectoryError:
        raise FileProblem("not_regular", f"{path} is a folder, not a regular file") from None
    except OSError as exc:
        kind = {errno.ELOOP: "symlink_loop",  # ENXIO: a socket cannot be opened as a file
                errno.ENXIO: "not_regular"}.get(exc.errno or 0, "unreadable")
        raise FileProblem(kind, f"cannot read {path}: {exc.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise not_regular(path, mode)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=True) as fh:
            fd = -1
            return fh.read(max_bytes + 1)
    except OSError as exc:
        raise FileProblem("unreadable", f"cannot read {path}: {exc.strerror}") from None
    finally:
        if fd >= 0:
            os.close(fd)


def format_for(name: str) -> str | None:
    """The format a file name's suffix says (None: not a supported suffix)."""
    dot = name.rfind(".")
    return FORMATS.get(name[dot:].lower()) if dot >= 0 else None


def _looks_binary(data: bytes) -> bool:
    head = data[:8192]
    if b"\x00" in head:
        return True
    controls = sum(1 for b in head if b < 32 and b not in (9, 10, 12, 13, 27, 8))
    return controls > len(head) * 0.1


def decode(data: bytes) -> tuple[str, str]:
    """(text, encoding) of a text file's bytes, or FileProblem('binary' | 'encoding')."""
    for bom, name in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
                      (codecs.BOM_UTF16_BE, "utf-16"), (codecs.BOM_UTF32_LE, "utf-32")):
        if data.startswith(bom):
            try:
                return data.decode(name), name
            except UnicodeDecodeError as exc:
                raise FileProblem("encoding", f"invalid {name} text at byte {exc.start}") from None
    if _looks_binary(data):
        raise FileProblem("binary", "binary file (NUL or control bytes), not text")
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as exc:
        utf8_error = exc
    try:  # Chinese files from Windows tools: GBK, a subset of GB18030
        text = data.decode("gb18030")
        wide = [c for c in text if ord(c) > 127]
        if wide and sum(1 for c in wide if _CJK.match(c)) >= 0.8 * len(wide):
            return text, "gb18030"
    except UnicodeDecodeError:
        pass
    try:
        from charset_normalizer import from_bytes
    except ImportError:
        raise FileProblem(
            "encoding", f"not UTF-8 (invalid byte at {utf8_error.start}) nor GB18030 Chinese; "
            f"for other encodings install charset-normalizer ({_EXTRA})") from None
    best = from_bytes(data).best()
    if best is None:
        raise FileProblem("encoding", "cannot detect the text encoding")
    return str(best), best.encoding


def _normalise(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")


def _html(data: bytes) -> Extracted:
    text, encoding = decode(data)
    match = re.search(r"<title[^>]*>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
    title = html.unescape(" ".join(match.group(1).split())) if match else None
    return Extracted(_to_markdown(text), "html", title or None, encoding)


def _to_markdown(text: str) -> str:
    try:
        import html2text
    except ImportError:
        raise MissingDependency(f"reading HTML needs html2text: {_EXTRA}") from None
    converter = html2text.HTML2Text()
    converter.body_width = 0
    converter.ignore_images = True
    converter.ignore_links = True
    converter.ignore_emphasis = True
    return _normalise(converter.handle(text)).strip("\n") + "\n"


def html_to_markdown(data: bytes) -> str:
    """HTML (or XHTML) bytes as Markdown, by html2text."""
    return _to_markdown(decode(data)[0])


def _pdf(data: bytes) -> Extracted:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError:
        raise MissingDependency(f"reading PDF needs pypdf: {_EXTRA}") from None
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise FileProblem("unreadable", "encrypted PDF")
        pages, starts, pos = [], [], 0
        scans = PageReader()
        for number, page in enumerate(reader.pages, 1):
            page_text = _normalise(page.extract_text() or "").strip()
            if not page_text:  # a scanned page: no text layer, its images read by OCR
                page_text = _normalise(scans.text(page, number)).strip()
            starts.append(pos)
            pages.append(page_text)
            pos += len(page_text) + 2
        title = (reader.metadata or {}).get("/Title") if reader.metadata else None
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise FileProblem("unreadable", f"broken PDF: {exc}") from None
    return Extracted("\n\n".join(pages), "pdf", str(title).strip() or None if title else None,
                     None, {"page_starts": starts, "pages": len(pages), **scans.metadata()})


def extract(data: bytes, fmt: str, name: str) -> Extracted:
    """The text of a source's bytes in format ``fmt`` (markdown | text | html | pdf; the
    :data:`CONVERTED` formats: :func:`._formats.extract`)."""
    if fmt == "pdf":
        result = _pdf(data)
    elif fmt == "html":
        result = _html(data)
    else:
        text, encoding = decode(data)
        text = _normalise(text)
        title = None
        if fmt == "markdown":
            h1 = _H1.search(text)
            title = h1.group(1).strip() if h1 else None
        result = Extracted(text, fmt, title, encoding)
    return finish(result, name)


def finish(result: Extracted, name: str) -> Extracted:
    """``result``, refused when it has no text, titled by the file's stem when untitled."""
    if not result.text.strip():
        raise FileProblem("empty", "no text in the file")
    if result.title is None:
        stem = name.rsplit("/", 1)[-1]
        stem = stem.rsplit(".", 1)[0] if "." in stem else stem
        result = Extracted(result.text, result.format, stem or None, result.encoding,
                           result.metadata)
    return result
