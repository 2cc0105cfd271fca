"""An image file, checked and decoded: its format found from its content (never its name),
its dimensions checked before a pixel is decoded (decompression bombs), its EXIF time and
place, and a JPEG thumbnail. No I/O besides the bytes given."""

from __future__ import annotations

import io
import math
import warnings
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from ...core.errors import MalformedFile, MissingDependency, TooLarge, UnsupportedFormat

__all__ = ["IMAGE_MIMES", "Decoded", "sniff", "decode", "MAX_PIXELS", "THUMBNAIL_PX"]

# format found by its first bytes -> MIME type
IMAGE_MIMES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif",
               "WEBP": "image/webp", "TIFF": "image/tiff"}
MAX_PIXELS = 40_000_000  # width x height refused above this (a 40-megapixel photo passes)
THUMBNAIL_PX = 256  # the thumbnail's longer side
_TEXT_MAX = 200  # an EXIF string kept (make, model, software) is cut to this


def sniff(data: bytes) -> str | None:
    """The image format of ``data`` by its magic bytes (a key of IMAGE_MIMES), else None."""
    head = data[:16]
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "PNG"
    if head.startswith(b"\xff\xd8\xff"):
        return "JPEG"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "GIF"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WEBP"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "TIFF"
    return None


def _looks_like(data: bytes) -> str:
    head = data[:8]
    if head.startswith(b"%PDF"):
        return "a PDF document"
    if head.startswith(b"PK\x03\x04"):
        return "a zip archive (an office document?)"
    if head[4:8] == b"ftyp" or head.startswith((b"ID3", b"OggS", b"fLaC")) \
            or (head[:4] == b"RIFF" and data[8:12] == b"WAVE"):
        return "audio or video"
    try:
        data[:512].decode("utf-8")
        return "text"
    except UnicodeDecodeError:
        return "unknown binary data"


@dataclass
class Decoded:
    """A decoded image: ``image`` (a PIL image, EXIF orientation applied, RGB), its format,
    MIME type and stored dimensions, the EXIF fields kept, the time and place taken, a JPEG
    thumbnail, and ``notes`` on what was tolerated (malformed EXIF)."""

    image: Any
    format: str
    mime: str
    width: int
    height: int
    exif: dict[str, Any] = field(default_factory=dict)
    taken_at: datetime | None = None
    latitude: float | None = None
    longitude: float | None = None
    thumbnail: bytes = b""
    notes: list[str] = field(default_factory=list)


def decode(data: bytes, *, name: str = "the file", max_pixels: int = MAX_PIXELS) -> Decoded:
    """``data`` decoded as an image: UnsupportedFormat when its content is no image format
    memdb reads (whatever its name says), TooLarge when its dimensions exceed ``max_pixels``
    (checked from the header, before decoding), MalformedFile when it cannot be decoded."""
    try:
        from PIL import Image, ImageOps
    except ImportError as exc:  # pragma: no cover - Pillow comes with the images extra
        raise MissingDependency("images need Pillow: pip install 'memdb[images]'") from exc
    fmt = sniff(data)
    if fmt is None:
        raise UnsupportedFormat(f"{name} is not an image memdb reads (PNG, JPEG, GIF, WebP, "
                                f"TIFF): its content is {_looks_like(data)}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data), formats=[fmt])
            width, height = img.size
            if width <= 0 or height <= 0:
                raise MalformedFile(f"{name}: an image with no pixels ({width}x{height})")
            if width * height > max_pixels:
                raise TooLarge(f"{name}: {width}x{height} pixels is over the limit of "
                               f"{max_pixels} (a decompression bomb?); nothing was decoded")
            img.seek(0)
            img.load()
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise TooLarge(f"{name}: too many pixels to decode (a decompression bomb?)") from exc
    except (MalformedFile, TooLarge):
        raise
    except Exception as exc:  # PIL raises OSError, SyntaxError, ValueError... on bad data
        raise MalformedFile(f"{name}: a damaged {fmt} image ({type(exc).__name__})") from exc
    out = Decoded(image=img, format=fmt, mime=IMAGE_MIMES[fmt], width=width, height=height)
    _read_exif(img, out)
    try:
        upright = ImageOps.exif_transpose(img)
    except Exception:  # a bad orientation tag: keep the pixels as stored
        upright = img
        out.notes.append("EXIF orientation ignored (malformed)")
    out.image = upright.convert("RGB")
    thumb = out.image.copy()
    thumb.thumbnail((THUMBNAIL_PX, THUMBNAIL_PX))
    buf = io.BytesIO()
    thumb.save(buf, "JPEG", quality=80)
    out.thumbnail = buf.getvalue()
    return out


def _read_exif(img: Any, out: Decoded) -> None:
    """The EXIF fields memdb keeps; a malformed block or value is skipped with a note."""
    try:
        exif = img.getexif()
        ifd = exif.get_ifd(0x8769)
        gps = exif.get_ifd(0x8825)
    except Exception as exc:
        out.notes.append(f"EXIF ignored (malformed: {type(exc).__name__})")
        return
    for tag, key in ((0x010F, "make"), (0x0110, "model"), (0x0131, "software")):
        value = exif.get(tag)
        if isinstance(value, str) and value.strip():
            out.exif[key] = value.strip("\x00 ")[:_TEXT_MAX]
    raw = ifd.get(0x9003) or exif.get(0x0132)  # DateTimeOriginal, else DateTime
    if raw is not None:
        when = _exif_time(raw, ifd.get(0x9011))
        if when is None:
            out.notes.append("EXIF time ignored (malformed)")
        else:
            out.taken_at = when
            out.exif["taken_at"] = when.isoformat()
    if gps:
        place = _gps(gps)
        if place is None:
            out.notes.append("EXIF GPS position ignored (malformed)")
        else:
            out.latitude, out.longitude = place
            out.exif["latitude"], out.exif["longitude"] = place


def _exif_time(raw: Any, offset: Any) -> datetime | None:
    """'YYYY:MM:DD HH:MM:SS' (+ OffsetTimeOriginal '+08:00'); UTC when no offset is given."""
    if not isinstance(raw, str):
        return None
    try:
        when = datetime.strptime(raw.strip("\x00 ")[:19], "%Y:%m:%d %H:%M:%S")
    except ValueError:
        return None
    tz: timezone = UTC
    if isinstance(offset, str) and len(offset.strip("\x00 ")) == 6:
        text = offset.strip("\x00 ")
        try:
            sign = -1 if text[0] == "-" else 1
            tz = timezone(sign * timedelta(hours=int(text[1:3]), minutes=int(text[4:6])))
        except (ValueError, IndexError):
            tz = UTC
    if not 1900 <= when.year <= 2200:
        return None
    return when.replace(tzinfo=tz)


def _gps(gps: Any) -> tuple[float, float] | None:
    try:
        lat = _degrees(gps[2]) * (-1 if str(gps.get(1, "N")).upper().startswith("S") else 1)
        lon = _degrees(gps[4]) * (-1 if str(gps.get(3, "E")).upper().startswith("W") else 1)
    except (KeyError, TypeError, ValueError, ZeroDivisionError, IndexError):
        return None
    if not (math.isfinite(lat) and math.isfinite(lon)) or abs(lat) > 90 or abs(lon) > 180:
        return None
    return round(lat, 6), round(lon, 6)


def _degrees(dms: Any) -> float:
    d, m, s = (float(x) for x in dms)
    return d + m / 60 + s / 3600
