"""Recordings' headers built by the tests (no audio frames, nothing downloaded): an MP4 audio
file (M4A) and an Ogg Vorbis file whose headers state a duration, sample rate and channel count,
and an MP3 of silent-looking frames. Enough for sniffing, probing (mutagen) and uploading to a
transcription endpoint; not playable."""

from __future__ import annotations

import struct


def _box(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", 8 + len(payload)) + kind + payload


def _full(kind: bytes, payload: bytes) -> bytes:
    return _box(kind, bytes(4) + payload)  # version 0, no flags


def m4a(seconds: float, rate: int = 16000, tag: bytes = b"") -> bytes:
    """ftyp 'M4A ' and a moov with one sound track of ``seconds`` (``tag`` varies the bytes)."""
    n = int(seconds * rate)
    mvhd = _full(b"mvhd", struct.pack(">IIII", 0, 0, rate, n) + bytes(80))
    tkhd = _full(b"tkhd", struct.pack(">IIIII", 0, 0, 1, 0, n) + bytes(60))
    mdhd = _full(b"mdhd", struct.pack(">IIIIHH", 0, 0, rate, n, 0x55C4, 0))
    hdlr = _full(b"hdlr", bytes(4) + b"soun" + bytes(12) + b"sound\x00")
    mp4a = _box(b"mp4a", bytes(6) + struct.pack(">H", 1) + bytes(8)
                + struct.pack(">HHHHI", 1, 16, 0, 0, rate << 16) + _box(b"btrt", bytes(12)))
    stbl = _box(b"stbl", _full(b"stsd", struct.pack(">I", 1) + mp4a))
    mdia = _box(b"mdia", mdhd + hdlr + _box(b"minf", stbl))
    moov = _box(b"moov", mvhd + _box(b"trak", tkhd + mdia))
    return _box(b"ftyp", b"M4A " + bytes(4) + b"M4A isom") + moov + _box(b"free", tag)


def _page(packet: bytes, granule: int, seq: int, flags: int) -> bytes:
    lacing = [255] * (len(packet) // 255) + [len(packet) % 255]
    return (b"OggS" + struct.pack("<BBqIIIB", 0, flags, granule, 0x4D454D44, seq, 0,
                                  len(lacing)) + bytes(lacing) + packet)


def ogg(seconds: float, rate: int = 16000, tag: bytes = b"") -> bytes:
    """Ogg Vorbis: identification and comment headers, then a last page whose granule position
    is the sample count of ``seconds`` (``tag`` varies the bytes)."""
    ident = b"\x01vorbis" + struct.pack("<IBIiiiBB", 0, 1, rate, 0, 64000, 0, 0xB8, 1)
    vendor = b"memdb tests"
    comment = (b"\x03vorbis" + struct.pack("<I", len(vendor)) + vendor + struct.pack("<I", 0)
               + b"\x01")
    return (_page(ident, 0, 0, 0x02) + _page(comment, 0, 1, 0)
            + _page(bytes(16) + tag, int(seconds * rate), 2, 0x04))


def mp3(frames: int) -> bytes:
    """``frames`` MPEG-1 layer III frames (128 kb/s, 44.1 kHz: 26.12 ms each), zero-filled."""
    return (b"\xff\xfb\x90\x64" + bytes(413)) * frames
