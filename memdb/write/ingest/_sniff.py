"""What a file is, by its content: magic bytes (``%PDF-``, a zip's ``PK``, OLE2) and, for a
zip, its member names (``word/document.xml`` → docx, ``ppt/presentation.xml`` → pptx,
``xl/workbook.xml`` → xlsx, an EPUB's ``mimetype``). The content wins over the suffix: a
``report.txt`` that is a Word file is read as Word; a ``report.docx`` that is not one is
refused (``format_mismatch``), never read half-way as the wrong thing.

A zip is checked before any library opens it (:func:`open_zip`): a malformed archive is
``malformed``; more than :data:`MAX_MEMBERS` members, more than :data:`MAX_UNPACKED` bytes
uncompressed in all, or a member that expands more than :data:`MAX_RATIO` times is
``unsafe`` (a zip bomb). Python's zipfile never inflates a member past the size its
directory declares, so the declared sizes checked here bound what any reader can unpack.
"""

from __future__ import annotations

import io
import os
import stat
import zipfile

from ._readers import FileProblem, format_for

__all__ = ["BINARY_FORMATS", "MAX_MEMBERS", "MAX_RATIO", "MAX_UNPACKED", "describe",
           "detect", "open_zip", "sniff", "sniff_file"]

MAX_MEMBERS = 10_000
MAX_UNPACKED = 256 * 1024 * 1024
MAX_RATIO = 200  # deflate reaches ~1000; real Office XML stays well under 100
_RATIO_FLOOR = 1024 * 1024  # small members may compress better than MAX_RATIO harmlessly

BINARY_FORMATS = ("pdf", "docx", "pptx", "xlsx", "epub")
_LABELS = {"pdf": "PDF", "docx": "Word document", "pptx": "PowerPoint presentation",
           "xlsx": "Excel workbook", "epub": "EPUB book"}
_OOXML = (("word/document.xml", "docx"), ("ppt/presentation.xml", "pptx"),
          ("xl/workbook.xml", "xlsx"))
_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ZIP = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")
_SIGNATURES = ((b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"),
               (b"GIF8", "a GIF image"), (b"\x1f\x8b", "gzip data"), (_OLE2, "an OLE2 file"),
               (b"\x7fELF", "an executable"), (b"PK", "a zip archive"), (b"%PDF-", "a PDF"))


def _pdf(head: bytes) -> bool:
    # at the start (after whitespace): a text that merely mentions "%PDF-" stays text; a
    # .pdf with junk before its header is still read as the PDF its suffix says
    return head[:1024].lstrip(b" \t\r\n\x0c\x00").startswith(b"%PDF-")


def _zip_format(names: set[str], mimetype: bytes) -> str:
    if mimetype.strip() == b"application/epub+zip" or (
            not mimetype and "META-INF/container.xml" in names):
        return "epub"
    for member, fmt in _OOXML:
        if member in names:
            return fmt
    return "zip"


def _zip(source: io.BufferedIOBase | io.BytesIO) -> str:
    try:
        with zipfile.ZipFile(source) as zf:
            names = set(zf.namelist())
            mimetype = b""
            if "mimetype" in names and zf.getinfo("mimetype").file_size <= 256:
                mimetype = zf.read("mimetype")
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError,
            NotImplementedError, ValueError) as exc:
        raise FileProblem("malformed", f"malformed zip archive: {exc}") from None
    return _zip_format(names, mimetype)


def sniff(data: bytes) -> str | None:
    """The format the bytes are: ``pdf``, ``docx``, ``pptx``, ``xlsx``, ``epub``, ``zip``
    (another archive), ``ole2`` (legacy Office), or None (no binary signature: text or
    unknown). A zip whose directory cannot be read raises ``FileProblem('malformed')``."""
    if data[:4] in _ZIP:
        return _zip(io.BytesIO(data))
    if data[:8] == _OLE2:
        return "ole2"
    if _pdf(data):
        return "pdf"
    return None


def describe(data: bytes) -> str:
    """A few words on what the bytes look like, for error messages."""
    for magic, what in _SIGNATURES:
        if data.startswith(magic):
            return what
    head = data[:4096]
    if not head:
        return "empty"
    if b"\x00" in head:
        return "binary data"
    return "text"


def detect(data: bytes, name: str) -> str:
    """The format to read ``data`` (the file ``name``) as: its content's when it has a
    binary signature, else its suffix's (``text`` for an unknown suffix). Raises
    ``FileProblem`` for a malformed zip, an archive or legacy Office file memdb does not
    read (``unsupported``), or a suffix that claims a binary format the content is not
    (``format_mismatch``)."""
    claimed = format_for(name)
    found = sniff(data)
    if found in BINARY_FORMATS:
        return found  # type: ignore[return-value]
    if found == "ole2":
        raise FileProblem("unsupported", "a legacy Office file (Word, Excel or PowerPoint "
                          "97-2003, OLE2): save it as .docx, .xlsx or .pptx")
    if found == "zip":
        raise FileProblem("unsupported", "a zip archive that is not a Word, PowerPoint, "
                          "Excel or EPUB document")
    if claimed in BINARY_FORMATS:
        suffix = name[name.rfind("."):]
        raise FileProblem("format_mismatch", f"named {suffix} but its content is "
                          f"{describe(data)}, not a {_LABELS[claimed]}: refused")
    return claimed or "text"


def sniff_file(path: str) -> str | None:
    """:func:`sniff` on a regular file, reading only its head and, for a zip, its
    directory (opened non-blocking and checked: never waits on a FIFO). None when the
    file cannot be read or is a malformed zip: the caller skips it."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=True) as fh:
            fd = -1
            head = fh.read(1024)
            if head[:4] in _ZIP:
                fh.seek(0)
                return _zip(fh)  # type: ignore[arg-type]
            return sniff(head)
    except (OSError, FileProblem):
        return None
    finally:
        if fd >= 0:
            os.close(fd)


def open_zip(data: bytes, what: str) -> zipfile.ZipFile:
    """The archive, after checking that it is no zip bomb (see the module docstring)."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as exc:
        raise FileProblem("malformed", f"malformed {what} (zip archive): {exc}") from None
    if len(infos) > MAX_MEMBERS:
        raise FileProblem("unsafe", f"{what} has {len(infos)} zip members, over the limit of "
                          f"{MAX_MEMBERS}: refused as a possible zip bomb")
    total = sum(i.file_size for i in infos)
    if total > MAX_UNPACKED:
        raise FileProblem("unsafe", f"{what} would unpack to {total} bytes, over the limit of "
                          f"{MAX_UNPACKED}: refused as a possible zip bomb")
    for info in infos:
        if info.file_size > _RATIO_FLOOR and info.file_size > MAX_RATIO * max(
                info.compress_size, 1):
            raise FileProblem("unsafe", f"{what} member {info.filename} expands "
                              f"{info.file_size // max(info.compress_size, 1)} times "
                              f"(limit {MAX_RATIO}): refused as a possible zip bomb")
    return zf
