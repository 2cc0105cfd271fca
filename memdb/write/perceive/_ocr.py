"""Text in an image: one small interface over the OCR engines memdb can use.

``rapidocr`` (the default): PP-OCR detection and recognition models (Chinese and English in
one model) run by onnxruntime, from the ``rapidocr-onnxruntime`` wheel (``pip install
'memdb[images]'``). ``tesseract``: Debian's ``tesseract-ocr`` with ``tesseract-ocr-chi-sim``,
run as a process. ``MEMDB_OCR`` picks one (``rapidocr``, ``tesseract`` or ``none``: no OCR).
docs/perceptual.md has the measurements behind the default.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import threading
from typing import Any, Protocol

from ...core.errors import InvalidInput, MissingDependency

__all__ = ["OcrEngine", "ocr_engine", "ENGINES", "tidy"]

ENGINES = ("rapidocr", "tesseract", "none")
_CJK = r"\u3000-\u303f\u3400-\u9fff\uff00-\uffef"
_CJK_GAP = re.compile(rf"(?<=[{_CJK}])[ \t]+(?=[{_CJK}])")


def tidy(text: str) -> str:
    """OCR output as memory text: no blank lines, no spaces between two CJK characters
    (tesseract puts one between every Chinese character)."""
    lines = (_CJK_GAP.sub("", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


class OcrEngine(Protocol):
    name: str

    def read(self, image: Any) -> str:
        """The text in ``image`` (a PIL image), lines top to bottom; '' when none."""


class _Rapid:
    name = "rapidocr"

    def __init__(self) -> None:
        try:
            from rapidocr_onnxruntime import RapidOCR
        except ImportError as exc:
            raise MissingDependency("OCR needs rapidocr-onnxruntime: "
                                    "pip install 'memdb[images]'") from exc
        # One thread (MEMDB_OCR_THREADS): on a shared 2-core machine more only contend. The
        # detector keeps the wheel's input size (the shorter side enlarged to 736 px): smaller
        # sizes are up to 24 times faster but run English words together ("Invoicetotal4280"),
        # which hides them from BM25 (docs/perceptual.md has the measurements)
        raw = os.environ.get("MEMDB_OCR_THREADS") or "1"
        if not raw.isdigit() or not 1 <= int(raw) <= 64:
            raise InvalidInput(f"MEMDB_OCR_THREADS must be a whole number from 1 to 64, "
                               f"got {raw!r}")
        self._engine = RapidOCR(intra_op_num_threads=int(raw), inter_op_num_threads=1)
        self._lock = threading.Lock()  # one onnxruntime session, used by one caller at a time

    def read(self, image: Any) -> str:
        import numpy as np

        pixels = np.asarray(image.convert("RGB"))[:, :, ::-1].copy()  # BGR, as OpenCV's
        with self._lock:
            result, _elapsed = self._engine(pixels)
        return tidy("\n".join(_lines(result or ())))


def _lines(boxes: Any) -> list[str]:
    """Detected boxes ([corners, text, score]) as lines of text in reading order: boxes whose
    vertical centres are within half a box height form one line, read left to right."""
    items = []
    for corners, text, _score in boxes:
        ys = [float(p[1]) for p in corners]
        items.append(((min(ys) + max(ys)) / 2, max(ys) - min(ys),
                      min(float(p[0]) for p in corners), str(text)))
    items.sort()
    lines: list[list[tuple[float, float, float, str]]] = []
    for item in items:
        if lines and abs(item[0] - lines[-1][0][0]) <= max(item[1], lines[-1][0][1]) / 2:
            lines[-1].append(item)
        else:
            lines.append([item])
    return [" ".join(t for *_, t in sorted(line, key=lambda i: i[2])) for line in lines]


class _Tesseract:
    name = "tesseract"

    def __init__(self) -> None:
        self._exe = shutil.which("tesseract")
        if self._exe is None:
            raise MissingDependency("OCR with tesseract needs apt-get install tesseract-ocr "
                                    "tesseract-ocr-chi-sim")

    def read(self, image: Any) -> str:
        import io

        buf = io.BytesIO()
        image.convert("RGB").save(buf, "PNG")
        done = subprocess.run([self._exe, "stdin", "stdout", "-l", "chi_sim+eng"],
                              input=buf.getvalue(), capture_output=True, timeout=120,
                              check=False)
        if done.returncode != 0:
            raise InvalidInput("tesseract could not read the image")
        return tidy(done.stdout.decode("utf-8", "replace"))


@functools.cache
def _made(name: str) -> OcrEngine:
    return _Rapid() if name == "rapidocr" else _Tesseract()


def ocr_engine(name: str | None = None) -> OcrEngine | None:
    """The engine ``name`` (default ``$MEMDB_OCR``, else rapidocr), made once per process;
    None for ``none``. MissingDependency when it is not installed."""
    name = (name or os.environ.get("MEMDB_OCR") or "rapidocr").strip().lower()
    if name not in ENGINES:
        raise InvalidInput(f"unknown OCR engine {name!r} (one of {', '.join(ENGINES)})")
    return None if name == "none" else _made(name)
