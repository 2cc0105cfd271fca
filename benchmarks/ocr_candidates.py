"""OCR candidates on generated images: character error rate per language and time per image.

    python benchmarks/ocr_candidates.py > benchmarks/baselines/ocr_candidates.json

The images are tests/image_factory.samples(): English and Chinese lines in three sizes and
fonts, and one noisy photo-like JPEG per language. CER = edit distance / reference length,
white space ignored. Time: wall clock of one read, after one warm-up read (model loading).
"""

from __future__ import annotations

import io
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from PIL import Image  # noqa: E402

from memdb.write.perceive._ocr import ocr_engine  # noqa: E402
from tests.image_factory import samples  # noqa: E402


def cer(ref: str, got: str) -> float:
    a, b = "".join(ref.split()).lower(), "".join(got.split()).lower()
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1] / max(1, len(a))


def main() -> None:
    data = samples()
    report = {}
    for name in ("rapidocr", "tesseract"):
        engine = ocr_engine(name)
        engine.read(Image.open(io.BytesIO(data[0].image)))
        rows = []
        for s in data:
            img = Image.open(io.BytesIO(s.image))
            start = time.perf_counter()
            text = engine.read(img)
            rows.append({"image": s.name, "lang": s.lang, "seconds": time.perf_counter() - start,
                         "cer": cer(s.text, text), "text": text})
        summary = {}
        for lang in ("en", "zh"):
            mine = [r for r in rows if r["lang"] == lang]
            summary[lang] = {"cer": round(statistics.mean(r["cer"] for r in mine), 4),
                             "noisy_cer": round(next(r["cer"] for r in mine
                                                     if r["image"].endswith("noisy")), 4),
                             "median_s": round(statistics.median(r["seconds"] for r in mine), 3)}
        report[name] = {"summary": summary, "images": rows}
    json.dump(report, sys.stdout, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
