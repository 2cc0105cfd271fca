"""An audio file, checked before anything is written: its format found from its content (never
its name: WAV, MP3, Ogg, M4A), its MIME type, and its duration, sample rate and channels where
the header gives them (``mutagen`` when installed, the ``audio`` extra; the standard library's
``wave`` for WAV otherwise). A recording longer than the limit is refused (TooLarge). No I/O
besides the bytes given."""

from __future__ import annotations

import io
import wave
from dataclasses import dataclass, field

from ...core.errors import MalformedFile, TooLarge

__all__ = ["AUDIO_MIMES", "Probed", "sniff_audio", "probe", "MAX_SECONDS"]

AUDIO_MIMES = {"WAV": "audio/wav", "MP3": "audio/mpeg", "OGG": "audio/ogg", "M4A": "audio/mp4"}
MAX_SECONDS = 3 * 3600  # a longer recording is refused (MEMDB_MAX_AUDIO_SECONDS)
_M4A_BRANDS = (b"M4A ", b"M4B ", b"F4A ", b"M4P ")


def sniff_audio(data: bytes) -> str | None:
    """The audio format of ``data`` by its first bytes (a key of AUDIO_MIMES), else None."""
    head = data[:16]
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "WAV"
    if head[:4] == b"OggS":
        return "OGG"
    if head[:3] == b"ID3":
        return "MP3"
    # an MPEG audio frame header: 11 sync bits, MPEG version not 'reserved', layer III
    if len(head) >= 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0 \
            and (head[1] >> 3) & 3 != 1 and (head[1] >> 1) & 3 == 1:
        return "MP3"
    if head[4:8] == b"ftyp" and head[8:12] in _M4A_BRANDS:
        return "M4A"
    return None


@dataclass
class Probed:
    """What the header of a recording says: format, MIME type, duration in seconds (None when
    the header does not say), sample rate, channels, and ``notes`` on what could not be read."""

    format: str
    mime: str
    duration_s: float | None = None
    sample_rate: int | None = None
    channels: int | None = None
    notes: list[str] = field(default_factory=list)

    def fields(self) -> dict[str, float | int]:
        """The header fields known, for the percept's JSON."""
        out: dict[str, float | int] = {}
        if self.duration_s is not None:
            out["duration_s"] = self.duration_s
        if self.sample_rate:
            out["sample_rate"] = self.sample_rate
        if self.channels:
            out["channels"] = self.channels
        return out


def probe(data: bytes, fmt: str, *, name: str = "the file",
          max_seconds: float = MAX_SECONDS) -> Probed:
    """The header of a recording of format ``fmt`` (from :func:`sniff_audio`): MalformedFile
    when it cannot be parsed, TooLarge when it lasts longer than ``max_seconds``."""
    out = Probed(fmt, AUDIO_MIMES[fmt])
    try:
        import mutagen
    except ImportError:
        mutagen = None
    if mutagen is not None:
        try:
            info = getattr(mutagen.File(io.BytesIO(data)), "info", None)
        except Exception as exc:  # mutagen raises its own error classes, and struct errors
            raise MalformedFile(f"{name}: a damaged {fmt} recording "
                                f"({type(exc).__name__})") from exc
        if info is None:
            raise MalformedFile(f"{name}: its {fmt} header cannot be read")
        length = getattr(info, "length", None)
        if isinstance(length, (int, float)) and length > 0:
            out.duration_s = round(float(length), 3)
        out.sample_rate = getattr(info, "sample_rate", None) or None
        out.channels = getattr(info, "channels", None) or None
    elif fmt == "WAV":
        try:
            with wave.open(io.BytesIO(data)) as w:
                rate, frames = w.getframerate(), w.getnframes()
                out.sample_rate, out.channels = rate, w.getnchannels()
        except (wave.Error, EOFError, ValueError) as exc:
            raise MalformedFile(f"{name}: a damaged WAV recording ({exc})") from exc
        if rate > 0:
            out.duration_s = round(frames / rate, 3)
    else:
        out.notes.append("duration unknown (install mutagen: pip install 'memdb[audio]')")
    if out.duration_s is not None and out.duration_s > max_seconds:
        raise TooLarge(f"{name}: {out.duration_s:.0f} s of audio is over the limit of "
                       f"{max_seconds:.0f} s (MEMDB_MAX_AUDIO_SECONDS); nothing was written")
    return out
