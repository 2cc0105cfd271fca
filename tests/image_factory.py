"""Images with known text, drawn with Pillow, for the perceptual-memory tests and the OCR
measurement (benchmarks/ocr_candidates.py). Nothing is downloaded: fonts are the system's
(DejaVu for Latin, WenQuanYi Zen Hei for Chinese, from fonts-wqy-zenhei)."""

from __future__ import annotations

import io
import random
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter, ImageFont

CJK_FONT = "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc"
LATIN_FONTS = ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
               "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf",
               "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf")


def font_path(lang: str, n: int = 0) -> str:
    if lang == "zh":
        if not Path(CJK_FONT).exists():
            raise RuntimeError("no CJK font: apt-get install fonts-wqy-zenhei")
        return CJK_FONT
    return LATIN_FONTS[n % len(LATIN_FONTS)]


def text_image(text: str, *, lang: str = "en", size: int = 32, font: int = 0,
               noisy: bool = False, fmt: str = "PNG", exif: bytes | None = None,
               seed: int = 7) -> bytes:
    """``text`` (one line per ``\\n``) drawn in black on white, encoded as ``fmt``. ``noisy``
    makes it photo-like: a grey gradient, speckle noise, a slight rotation and blur, JPEG."""
    face = ImageFont.truetype(font_path(lang, font), size)
    lines = text.split("\n")
    probe = ImageDraw.Draw(Image.new("L", (1, 1)))
    widths = [probe.textbbox((0, 0), line, font=face)[2] for line in lines]
    width, height = max(widths) + 2 * size, int(len(lines) * size * 1.5) + 2 * size
    img = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(img)
    for n, line in enumerate(lines):
        draw.text((size, size + int(n * size * 1.5)), line, fill="black", font=face)
    if noisy:
        rng = random.Random(seed)
        shade = Image.linear_gradient("L").resize((width, height)).point(lambda v: 150 + v // 3)
        img = Image.composite(img, Image.merge("RGB", [shade] * 3), img.convert("L"))
        px = img.load()
        for _ in range(width * height // 12):
            x, y = rng.randrange(width), rng.randrange(height)
            v = rng.randrange(90, 256)
            px[x, y] = (v, v, v)
        img = img.rotate(1.5, expand=True, fillcolor="white").filter(ImageFilter.GaussianBlur(0.7))
        fmt = "JPEG"
    out = io.BytesIO()
    kwargs = {"exif": exif} if exif is not None else {}
    img.save(out, fmt, **kwargs)
    return out.getvalue()


def exif_bytes(when: str | None = "2024:05:08 14:30:00", gps: tuple[float, float] | None
               = (31.2304, 121.4737)) -> bytes:
    """An EXIF block with DateTimeOriginal ``when`` and a GPS position (lat, lon)."""
    exif = Image.Exif()
    if when is not None:
        exif[0x8769] = {0x9003: when}  # Exif IFD: DateTimeOriginal
    if gps is not None:
        def dms(value: float) -> tuple[float, float, float]:
            value = abs(value)
            deg = int(value)
            minutes = int((value - deg) * 60)
            return (deg, minutes, round((value - deg - minutes / 60) * 3600, 2))
        exif[0x8825] = {1: "N" if gps[0] >= 0 else "S", 2: dms(gps[0]),
                        3: "E" if gps[1] >= 0 else "W", 4: dms(gps[1])}
    return exif.tobytes()


@dataclass(frozen=True)
class Sample:
    name: str
    lang: str
    text: str
    image: bytes


EN_TEXTS = ("The invoice total is 4280 dollars", "Meeting moved to Thursday at 3pm",
            "Gate B12 boards at 18:45")
ZH_TEXTS = ("发票总额为四千二百八十元", "会议改到星期四下午三点", "登机口在十二号门")


def samples() -> list[Sample]:
    """The measurement set: each text in several sizes and fonts, and one noisy photo-like
    image per language."""
    out: list[Sample] = []
    for lang, texts in (("en", EN_TEXTS), ("zh", ZH_TEXTS)):
        for n, text in enumerate(texts):
            for size in (18, 28, 44):
                out.append(Sample(f"{lang}-{n}-{size}px", lang, text,
                                  text_image(text, lang=lang, size=size, font=n)))
        out.append(Sample(f"{lang}-noisy", lang, texts[0],
                          text_image(texts[0], lang=lang, size=30, noisy=True)))
    return out
