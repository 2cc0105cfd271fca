"""``store.add_file``: one entry for any file memdb reads, by its content. An image (PNG, JPEG,
GIF, WebP, TIFF) or a recording (WAV, MP3, Ogg, M4A) becomes a perceptual memory
(``store.perceive``); a document (PDF, Word, PowerPoint, Excel, EPUB, CSV, JSON, XML,
Markdown, HTML, text) is ingested (``store.documents.ingest``) and its chunks cite it as
ingestion does; anything else is refused with UnsupportedFormat, nothing written. The doors
``memdb add --file``, ``POST /v1/files`` and the MCP tool ``remember_file`` call it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import InvalidInput, MalformedFile, TooLarge, UnsupportedFormat
from ..write.ingest import DOCUMENT_FORMATS, FileBytes, IngestReport, describe, document_format
from ..write.perceive import MAX_FILE_BYTES, Perceived, is_audio, is_image

__all__ = ["AddedFile", "add_file", "SUPPORTED"]

SUPPORTED = ("images (PNG, JPEG, GIF, WebP, TIFF), recordings (WAV, MP3, Ogg, M4A) and "
             "documents (" + ", ".join(DOCUMENT_FORMATS) + ")")

# a name that claims an image or a recording whose content is neither is refused, not read
# as text
_MEDIA_SUFFIXES = frozenset((".png", ".jpg", ".jpeg", ".gif", ".webp", ".tif", ".tiff",
                             ".heic", ".bmp", ".wav", ".mp3", ".ogg", ".oga", ".m4a", ".flac"))


@dataclass(frozen=True, slots=True)
class AddedFile:
    """What ``store.add_file`` did: ``kind`` is ``image`` or ``audio`` (``perceived`` is the
    perceptual memory) or ``document`` (``report`` is the ingest report, its one file's
    ``document_id``, ``chunks`` and ``format``)."""

    kind: str
    perceived: Perceived | None = None
    report: IngestReport | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.perceived is not None:
            return {"kind": self.kind, **self.perceived.to_dict()}
        assert self.report is not None
        return {"kind": self.kind, **self.report.to_dict()}


def _head(source: Any, limit: int) -> tuple[bytes, str]:
    """The bytes (a path's read whole, under ``limit``) and the file's name."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source), "upload"
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        try:
            if not path.is_file():
                raise InvalidInput(f"{path.name or path}: not a file")
            if path.stat().st_size > limit:
                raise TooLarge(f"{path.name}: {path.stat().st_size} bytes, over the limit "
                               f"of {limit}")
            with path.open("rb") as fh:
                return fh.read(limit + 1), path.name
        except OSError as exc:
            raise InvalidInput(f"cannot read {path.name or path}: {exc.strerror}") from None
    raise InvalidInput(f"add_file takes a path or bytes, got {type(source).__name__}")


def add_file(store: Any, source: Any, *, subject: str | None = None, name: str | None = None,
             tags: Any = None, reason: str | None = None, max_bytes: int | None = None,
             **perceive_options: Any) -> AddedFile:
    """Remember the file (a path, or its bytes; see the module docstring). ``name``: the
    file's name (an upload's: its suffix tells text formats apart; a document uploaded as
    bytes gets the id ``upload://<sha256>/<name>``); ``perceive_options`` go to
    ``store.perceive`` (ocr, caption, keep_bytes, transcribe...). Errors (nothing written):
    UnsupportedFormat, MalformedFile (a document that cannot be read), TooLarge, InvalidInput.
    """
    limit = MAX_FILE_BYTES if max_bytes is None else max_bytes
    data, own_name = _head(source, limit)
    if len(data) > limit:
        raise TooLarge(f"the file is over the limit of {limit} bytes")
    label = name or own_name
    if is_image(data) or is_audio(data):
        got = store.perceive(source if not isinstance(source, memoryview) else data,
                             subject=subject, name=name, tags=tags, reason=reason,
                             max_bytes=limit, **perceive_options)
        return AddedFile(got.modality, perceived=got)
    suffix = label[label.rfind("."):].lower() if "." in label else ""
    if suffix in _MEDIA_SUFFIXES:
        raise UnsupportedFormat(f"{label}: named {suffix} but its content is "
                                f"{describe(data)}, not an image or recording memdb reads")
    fmt = document_format(data, label)
    if fmt is None:
        raise UnsupportedFormat(f"{label}: not a file memdb reads; it reads {SUPPORTED}")
    if isinstance(source, (str, os.PathLike)):
        item: Any = source
    else:
        digest = hashlib.sha256(data).hexdigest()
        item = FileBytes(f"upload://{digest}/{os.path.basename(label)[:200]}", data, label)
    report = store.documents.ingest([item], subject=subject, tags=tags, max_bytes=limit)
    failed = [f for f in report.files if f.error]
    if failed:
        raise MalformedFile(f"{label}: {failed[0].error}")
    return AddedFile("document", report=report)
