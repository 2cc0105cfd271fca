"""Perceptual memory: an image becomes a memory whose content is the text found in it (OCR,
Chinese and English) and a caption (when a vision model is configured), searched like any
other memory, with the file it came from described in ``memdb.percepts``.

``perceive(core, source, ...)`` is ``store.perceive``: the file is read (a path, or bytes),
refused before anything is written when it is hostile or unreadable (its format is found by
its content, not its name; its dimensions are checked before decoding; see
:mod:`memdb.write.perceive._image`), decoded, read by OCR and captioned, then written in one
transaction: the memory (kind ``perceptual``, ``metadata.modality`` ``image``; its time is
the EXIF time taken when there is one) and its ``memdb.percepts`` row (modality, sha256, MIME
type, size, dimensions, reference, the bytes when at most ``keep_bytes``, a thumbnail, the
OCR text and caption apart, EXIF time and place). The same file (same sha256) perceived again
for the same subject is the memory already made from it (outcome ``duplicate``; no OCR).
A recording (WAV, MP3, Ogg, M4A; :mod:`memdb.write.perceive._audio`) becomes a memory of modality
``audio`` whose content is its transcript with segment times (an OpenAI-compatible
transcription endpoint, :mod:`memdb.write.perceive._transcribe`), or, without an endpoint, a
memory in the state ``not_transcribed`` transcribed later by the ``transcribe`` job
(``store.percepts.transcribe_pending()``; :mod:`memdb.write.perceive._hear`).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from ...core import bridge, sql
from ...core import validate as v
from ...core.errors import InvalidInput, NotFound, TooLarge
from ...core.family import Family
from ...core.llm import ChatLLM
from ...core.validate import MAX_CONTENT_CHARS
from ..inputs import as_input
from ._audio import MAX_SECONDS, probe, sniff_audio
from ._caption import caption as _caption
from ._caption import vision_from_env
from ._hear import NOT_TRANSCRIBED, TRANSCRIBE_JOB, transcribe_memory, write_audio
from ._image import MAX_PIXELS, decode, sniff
from ._ocr import OcrEngine, ocr_engine
from ._transcribe import Transcriber, TranscriptionFailed, transcriber_from_env

__all__ = ["perceive", "Perceived", "Percepts", "MAX_FILE_BYTES", "KEEP_BYTES", "MAX_PIXELS",
           "is_image", "is_audio", "MAX_SECONDS", "Transcriber", "TranscriptionFailed",
           "transcriber_from_env", "TRANSCRIBE_JOB", "NOT_TRANSCRIBED", "OcrEngine",
           "ocr_engine"]

MAX_FILE_BYTES = 25 * 1024 * 1024  # a file over this is refused before it is read whole
KEEP_BYTES = 1024 * 1024  # default: the file's bytes are kept in the database up to this
_NAME_CHARS = 200


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a number of seconds, got {raw!r}") from None
    if not value > 0:
        raise InvalidInput(f"{name} must be more than 0")
    return value


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number of bytes, got {raw!r}") from None
    if value < 0:
        raise InvalidInput(f"{name} must be 0 or more")
    return value


@dataclass(frozen=True, slots=True)
class Perceived:
    """What perceiving one file did: the memory (``id``, ``outcome``: created, duplicate...),
    what was found (``text`` by OCR or transcription, ``caption``), the file's description,
    and ``notes`` (what was tolerated or skipped: malformed EXIF, no caption and why). For a
    recording: ``duration_s``, ``state`` (``ok``, or ``not_transcribed``) and ``segments``
    (``{start, end, text}``, seconds)."""

    id: UUID
    outcome: str
    modality: str
    mime: str
    sha256: str
    size_bytes: int
    width: int | None
    height: int | None
    text: str
    caption: str | None
    taken_at: datetime | None
    latitude: float | None
    longitude: float | None
    bytes_kept: bool
    notes: tuple[str, ...] = ()
    duration_s: float | None = None
    state: str = "ok"
    segments: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.__slots__}  # type: ignore[attr-defined]
        out["id"] = str(self.id)
        out["taken_at"] = None if self.taken_at is None else self.taken_at.isoformat()
        out["notes"] = list(self.notes)
        out["segments"] = list(self.segments)
        return out


def is_image(data: bytes) -> bool:
    """Whether ``data`` starts like an image memdb reads (PNG, JPEG, GIF, WebP, TIFF)."""
    return sniff(data) is not None


def is_audio(data: bytes) -> bool:
    """Whether ``data`` starts like a recording memdb reads (WAV, MP3, Ogg, M4A)."""
    return sniff(data) is None and sniff_audio(data) is not None


def _read(source: Any, max_bytes: int) -> tuple[bytes, str, str | None]:
    """(bytes, a display name, the reference kept) of a path or of bytes."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if len(data) > max_bytes:
            raise TooLarge(f"the file is {len(data)} bytes, over the limit of {max_bytes}")
        return data, "the upload", None
    if isinstance(source, (str, Path)):
        path = Path(source)
        try:
            size = path.stat().st_size
            if not path.is_file():
                raise InvalidInput(f"{path.name or path}: not a file")
            if size > max_bytes:
                raise TooLarge(f"{path.name}: {size} bytes, over the limit of {max_bytes}")
            with path.open("rb") as fh:
                data = fh.read(max_bytes + 1)
        except OSError as exc:
            raise InvalidInput(f"cannot read {path.name or path}: {exc.strerror}") from None
        if len(data) > max_bytes:  # it grew while being read
            raise TooLarge(f"{path.name}: over the limit of {max_bytes} bytes")
        return data, path.name[:_NAME_CHARS], str(path.resolve())
    raise InvalidInput(f"perceive takes a path or bytes, got {type(source).__name__}")


def _content(text: str, caption: str | None, name: str) -> str:
    parts = [p for p in (text.strip(), (caption or "").strip()) if p]
    content = "\n\n".join(parts) if parts else f"An image ({name}) with no text found in it."
    return content[:MAX_CONTENT_CHARS]


def perceive(core: Any, source: Any, *, subject: str | None = None, name: str | None = None,
             ref: str | None = None, ocr: str | None = None, caption: bool | ChatLLM = True,
             keep_bytes: int | None = None, max_bytes: int | None = None,
             max_pixels: int = MAX_PIXELS, tags: Any = None,
             metadata: dict[str, Any] | None = None, importance: float | None = None,
             reason: str | None = None, transcribe: bool | Transcriber = True,
             max_seconds: float | None = None) -> Perceived:
    """Remember an image or a recording (a path, or its bytes): see the module docstring.

    ``name``: how to call it (default: the file's name); ``ref``: the reference kept (default:
    the file's absolute path; none for bytes); ``ocr``: the engine (``rapidocr``,
    ``tesseract``, ``none``; default ``$MEMDB_OCR`` else rapidocr); ``caption``: True asks the
    vision model ``$MEMDB_VISION_MODEL`` configures (if any), False none, or a
    :class:`~memdb.core.llm.ChatLLM` to use; ``keep_bytes``: keep the file's bytes in the database
    when it is at most this size (default ``$MEMDB_KEEP_BYTES``, else 1 MiB; 0: never);
    ``max_bytes``: refuse a larger file (default ``$MEMDB_MAX_FILE_BYTES``, else 25 MiB);
    ``max_pixels``: refuse an image with more pixels, before decoding it.
    For a recording: ``transcribe``: True uses the endpoint ``$MEMDB_TRANSCRIBE_MODEL``
    configures (if any), False none (state ``not_transcribed``), or a :class:`Transcriber`;
    ``max_seconds``: refuse a longer recording (default ``$MEMDB_MAX_AUDIO_SECONDS``, else
    3 hours). A failing endpoint raises TranscriptionFailed, nothing written.
    Errors (nothing written): UnsupportedFormat, MalformedFile, TooLarge, InvalidInput.
    """
    limit = _env_int("MEMDB_MAX_FILE_BYTES", MAX_FILE_BYTES) if max_bytes is None else max_bytes
    keep = _env_int("MEMDB_KEEP_BYTES", KEEP_BYTES) if keep_bytes is None else keep_bytes
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise InvalidInput("max_bytes must be a positive whole number")
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
        raise InvalidInput("keep_bytes must be 0 or more")
    if ref is not None and (not isinstance(ref, str) or len(ref) > 4096):
        raise InvalidInput("ref must be a path or URI of at most 4096 characters")
    data, default_name, default_ref = _read(source, limit)
    label = (name or default_name)[:_NAME_CHARS]
    ref = ref if ref is not None else default_ref
    digest = hashlib.sha256(data).digest()
    who = subject or core.subject or "default"
    as_input({"content": "x", "subject": who, "tags": tags, "metadata": metadata,
              "importance": importance}).to_item()  # bad fields fail before any work
    with core.read() as conn:
        row = conn.execute(sql.query("percept_by_sha256"),
                           {"tenant": core.tenant, "subject": who, "sha256": digest}).fetchone()
    if row is not None:
        return _existing(core, row["memory_id"], digest)
    audio = None if sniff(data) else sniff_audio(data)
    if audio is not None:
        seconds = (_env_number("MEMDB_MAX_AUDIO_SECONDS", MAX_SECONDS) if max_seconds is None
                   else max_seconds)
        probed = probe(data, audio, name=label, max_seconds=seconds)
        heard = transcribe if isinstance(transcribe, Transcriber) else (
            transcriber_from_env() if transcribe else None)
        said = None if heard is None else heard.transcribe(data, label, probed.mime)
        mid, outcome, kept = write_audio(
            core, data, digest, who=who, label=label, ref=ref, probed=probed,
            transcript=said, keep=keep, metadata=metadata, tags=tags, importance=importance,
            reason=reason)
        return Perceived(id=mid, outcome=outcome, modality="audio", mime=probed.mime,
                         sha256=digest.hex(), size_bytes=len(data), width=None, height=None,
                         text="" if said is None else said.text, caption=None, taken_at=None,
                         latitude=None, longitude=None, bytes_kept=kept,
                         notes=tuple(probed.notes), duration_s=probed.duration_s or (
                             None if said is None else said.duration_s),
                         state="ok" if said else NOT_TRANSCRIBED,
                         segments=() if said is None else tuple(
                             s.to_dict() for s in said.segments))
    img = bridge.blocking(decode, data, name=label, max_pixels=max_pixels)
    engine = ocr_engine(ocr)
    text = "" if engine is None else bridge.blocking(engine.read, img.image)
    notes = list(img.notes)
    llm = caption if isinstance(caption, ChatLLM) else (vision_from_env() if caption else None)
    said = None
    if llm is not None:
        said, why_not = _caption(llm, img.image)
        if why_not:
            notes.append(why_not)
    content = _content(text, said, label)
    meta = {**(metadata or {}), "modality": "image", "mime": img.mime,
            "sha256": digest.hex(), "file": label, "width": img.width, "height": img.height}
    item = as_input({
        "content": content, "subject": who, "kind": "perceptual", "source_type": "document",
        "source_id": (ref or f"sha256:{digest.hex()}")[:1024], "metadata": meta, "tags": tags,
        "importance": importance, "created_at": img.taken_at,
        "search_context": f"image 图片 {label}"}).to_item()
    core.check_keyword_index([(item["content"], item.get("search_context"))])
    vectors = core.embed_to_store([f"{item['search_context']}\n{content}"])
    percept = {"tenant": core.tenant, "subject": who, "modality": "image", "state": "ok",
               "sha256": digest, "mime": img.mime, "size_bytes": len(data),
               "width": img.width, "height": img.height, "ref": ref,
               "data": data if len(data) <= keep else None, "thumbnail": img.thumbnail,
               "ocr_text": text or None, "caption": said, "exif": Jsonb(img.exif),
               "taken_at": img.taken_at, "latitude": img.latitude, "longitude": img.longitude}
    with core.transaction() as conn:
        core.begin(conn, reason or f"perceived {label}")
        written = conn.execute(sql.query("write_memories"), {
            "items": Jsonb([{**item, "tenant": core.tenant}]),
            "embeddings": [None if vectors is None else vectors[0]],
            "space_id": core.space_id(), "options": Jsonb({})}).fetchone()
        conn.execute(sql.query("insert_percept"), {**percept, "memory_id": written["id"]})
    return Perceived(id=written["id"], outcome=written["outcome"], modality="image",
                     mime=img.mime, sha256=digest.hex(), size_bytes=len(data),
                     width=img.width, height=img.height, text=text, caption=said,
                     taken_at=img.taken_at, latitude=img.latitude, longitude=img.longitude,
                     bytes_kept=percept["data"] is not None, notes=tuple(notes))


def _existing(core: Any, memory_id: UUID, digest: bytes) -> Perceived:
    row = _existing_row(core, memory_id)
    fields = row["exif"] or {}
    return Perceived(id=memory_id, outcome="duplicate", modality=row["modality"],
                     mime=row["mime"], sha256=digest.hex(), size_bytes=row["size_bytes"],
                     width=row["width"], height=row["height"], text=row["ocr_text"] or "",
                     caption=row["caption"], taken_at=row["taken_at"],
                     latitude=row["latitude"], longitude=row["longitude"],
                     bytes_kept=row["has_data"], state=row["state"],
                     duration_s=fields.get("duration_s") if row["modality"] == "audio" else None,
                     segments=tuple(fields.get("segments") or ()))


class Percepts(Family):
    """``store.percepts``: what a perceptual memory was made from (its ``memdb.percepts``
    row): its description, its thumbnail, its bytes when they were kept."""

    def get(self, memory_id: UUID | str) -> dict[str, Any]:
        """The file's description (modality, state, sha256, MIME type, size, dimensions,
        reference, OCR text, caption, EXIF, time and place taken; no bytes); NotFound when
        the memory has none."""
        with self._core.read() as conn:
            row = conn.execute(sql.query("get_percept"),
                               {"tenant": self._core.tenant, "id": v.uuid(memory_id)}).fetchone()
        if row is None:
            raise NotFound(f"no perceptual memory {memory_id}")
        return dict(row)

    def thumbnail(self, memory_id: UUID | str) -> bytes:
        """The JPEG thumbnail (at most 256 pixels a side); NotFound when there is none."""
        with self._core.read() as conn:
            row = conn.execute(sql.query("percept_thumbnail"),
                               {"tenant": self._core.tenant, "id": v.uuid(memory_id)}).fetchone()
        if row is None or row["thumbnail"] is None:
            raise NotFound(f"no thumbnail for {memory_id}")
        return bytes(row["thumbnail"])

    def data(self, memory_id: UUID | str) -> tuple[bytes, str]:
        """(the file's bytes, its MIME type); NotFound when they were not kept."""
        with self._core.read() as conn:
            row = conn.execute(sql.query("percept_data"),
                               {"tenant": self._core.tenant, "id": v.uuid(memory_id)}).fetchone()
        if row is None or row["data"] is None:
            raise NotFound(f"the bytes of {memory_id} were not kept")
        return bytes(row["data"]), row["mime"]

    def pending(self, *, limit: int = 100) -> list[str]:
        """The ids of current recordings not transcribed yet (state ``not_transcribed``),
        oldest first, at most ``limit``."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000:
            raise InvalidInput("limit must be a whole number from 1 to 10000")
        with self._core.read() as conn:
            rows = conn.execute(sql.query("pending_transcriptions"),
                                {"tenant": self._core.tenant, "limit": limit}).fetchall()
        return [str(r["memory_id"]) for r in rows]

    def transcribe(self, memory_id: UUID | str, *,
                   transcriber: Transcriber | None = None) -> dict[str, Any]:
        """Transcribe one recording kept ``not_transcribed`` now, through ``transcriber``
        (default: the endpoint ``$MEMDB_TRANSCRIBE_MODEL`` configures), and update its memory;
        a recording already transcribed is left as it is (outcome ``already_transcribed``).
        InvalidInput when no endpoint is configured; TranscriptionFailed when it fails."""
        return transcribe_memory(self._store, v.uuid(memory_id),
                                 transcriber or transcriber_from_env())

    def transcribe_pending(self, *, limit: int = 100) -> list[Any]:
        """Enqueue a ``transcribe`` job for each recording not transcribed yet (at most
        ``limit``; one job per recording: enqueuing again while one is queued adds none);
        a worker runs them (``memdb worker``, ``memdb serve``). Returns the jobs."""
        return [self._store.jobs.enqueue(TRANSCRIBE_JOB, {"memory_id": mid},
                                         idempotency_key=f"transcribe:{mid}")
                for mid in self.pending(limit=limit)]




def _existing_row(core: Any, memory_id: UUID) -> dict[str, Any]:
    with core.read() as conn:
        return conn.execute(sql.query("get_percept"),
                            {"tenant": core.tenant, "id": memory_id}).fetchone()
