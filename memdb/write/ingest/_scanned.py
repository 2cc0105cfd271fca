"""The text of a scanned PDF page (one without a text layer): its embedded images read by the
OCR engine of :mod:`memdb.write.perceive` (RapidOCR by default, Chinese and English; ``MEMDB_OCR``
picks another or ``none``). A scanned page is one or more images drawn on the page; each is
checked by its declared dimensions before it is decoded (decompression bombs), and at most
:data:`MAX_OCR_PAGES` pages of one file are read (``MEMDB_OCR_MAX_PAGES``): OCR costs about a
second or two a page on one core.

The engine is made once, on the first page that needs it; when OCR is not installed or is
turned off, scanned pages stay without text and the file's metadata says so.
"""

from __future__ import annotations

import os
from typing import Any

from ...core.errors import InvalidInput, MissingDependency

__all__ = ["PageReader", "MAX_OCR_PAGES"]

MAX_OCR_PAGES = 200
_MAX_PIXELS = 40_000_000  # as memdb.write.perceive.MAX_PIXELS: an image above this is not decoded


def _limit() -> int:
    raw = os.environ.get("MEMDB_OCR_MAX_PAGES")
    if not raw:
        return MAX_OCR_PAGES
    if not raw.isdigit():
        raise InvalidInput(f"MEMDB_OCR_MAX_PAGES must be a whole number, got {raw!r}")
    return int(raw)


class PageReader:
    """Reads the scanned pages of one PDF; ``metadata()`` says which pages were read by OCR
    and which were not (and why)."""

    def __init__(self) -> None:
        self._engine: Any = None
        self._why_not: str | None = None
        self._limit = _limit()
        self.read: list[int] = []
        self.skipped: dict[int, str] = {}

    def _ocr(self) -> Any:
        if self._engine is None and self._why_not is None:
            from ..perceive import ocr_engine
            try:
                self._engine = ocr_engine()
            except MissingDependency as exc:
                self._why_not = str(exc)
            if self._engine is None and self._why_not is None:
                self._why_not = "OCR turned off (MEMDB_OCR=none)"
        return self._engine

    def text(self, page: Any, number: int) -> str:
        """The OCR text of page ``number`` (1-based), '' when it has no image or OCR is
        unavailable (noted in :meth:`metadata`)."""
        images = _images(page)
        if not images:
            return ""
        if len(self.read) >= self._limit:
            self.skipped[number] = f"over the limit of {self._limit} OCR pages"
            return ""
        if any(w * h > _MAX_PIXELS for w, h in images.values()):
            self.skipped[number] = "an image too large to decode"
            return ""
        engine = self._ocr()
        if engine is None:
            self.skipped[number] = self._why_not or "no OCR"
            return ""
        parts = []
        for found in page.images:
            try:
                parts.append(engine.read(found.image))
            except (OSError, ValueError, TypeError) as exc:  # an image pypdf cannot decode
                self.skipped[number] = f"an image that cannot be decoded ({type(exc).__name__})"
        self.read.append(number)
        return "\n".join(p for p in parts if p.strip())

    def metadata(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.read:
            out["ocr_pages"] = self.read
            out["ocr_engine"] = getattr(self._engine, "name", None)
        if self.skipped:
            out["ocr_skipped"] = {str(k): v for k, v in self.skipped.items()}
        return out


def _images(page: Any) -> dict[str, tuple[int, int]]:
    """The page's image XObjects by name, with their declared width and height."""
    try:
        xobjects = page["/Resources"]["/XObject"].get_object()
    except (KeyError, TypeError, AttributeError):
        return {}
    out = {}
    for name, ref in xobjects.items():
        obj = ref.get_object()
        if obj.get("/Subtype") == "/Image":
            try:
                out[str(name)] = (int(obj.get("/Width", 0)), int(obj.get("/Height", 0)))
            except (TypeError, ValueError):
                out[str(name)] = (0, 0)
    return out
