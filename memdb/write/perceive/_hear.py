"""A recording as a perceptual memory (modality ``audio``): written with its transcript when a
transcription endpoint is configured, else with its metadata and the state
``not_transcribed``, its bytes kept (up to the file limit) so that :func:`transcribe_later`
can transcribe it when an endpoint is configured (the ``transcribe`` job, docs/perceptual.md).

Where things are kept: the memory's content is the transcript, one line per segment cited by
its time (``[0:04–0:09] ...``), or a sentence saying the recording is not transcribed; its
metadata has the modality, MIME type, sha256, file name, duration and ``transcription``
(``ok`` or ``not_transcribed``). The ``memdb.percepts`` row has the state, the transcript
(``ocr_text``: the text found in the file) and, in its JSON fields (``exif``), the header's
duration, sample rate and channels and the transcript's timed segments and language.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from ...core import sql
from ...core.errors import InvalidInput, NotFound
from ..inputs import as_input
from ._audio import Probed
from ._transcribe import Transcriber, Transcript, stamp

__all__ = ["write_audio", "transcribe_memory", "NOT_TRANSCRIBED", "TRANSCRIBE_JOB"]

NOT_TRANSCRIBED = "not_transcribed"
TRANSCRIBE_JOB = "transcribe"  # the job kind of memdb.families.jobs.transcribe


def _placeholder(label: str, probed: Probed) -> str:
    length = "" if probed.duration_s is None else f", {stamp(probed.duration_s)} long"
    return (f"An audio recording ({label}, {probed.mime}{length}), not transcribed yet: "
            f"no transcription endpoint was configured.")


def _fields(probed: Probed, transcript: Transcript | None, keep_until_transcribed: bool
            ) -> dict[str, Any]:
    out: dict[str, Any] = dict(probed.fields())
    if transcript is not None:
        out["segments"] = [s.to_dict() for s in transcript.segments]
        if transcript.language:
            out["language"] = transcript.language
        if "duration_s" not in out and transcript.duration_s:
            out["duration_s"] = transcript.duration_s
    if keep_until_transcribed:
        out["bytes_until_transcribed"] = True
    return out


def write_audio(core: Any, data: bytes, digest: bytes, *, who: str, label: str,
                ref: str | None, probed: Probed, transcript: Transcript | None, keep: int,
                metadata: dict[str, Any] | None, tags: Any, importance: float | None,
                reason: str | None) -> tuple[UUID, str, bool]:
    """Write the memory and its percept in one transaction: (memory id, outcome, bytes kept).
    Without a transcript the bytes are kept whatever ``keep`` says (they are needed to
    transcribe later) and dropped after transcription when over ``keep``."""
    state = "ok" if transcript is not None else NOT_TRANSCRIBED
    fields = _fields(probed, transcript, transcript is None and len(data) > keep)
    content = transcript.content() if transcript is not None else _placeholder(label, probed)
    meta = {**(metadata or {}), "modality": "audio", "mime": probed.mime,
            "sha256": digest.hex(), "file": label, "transcription": state,
            **({"duration_s": fields["duration_s"]} if "duration_s" in fields else {})}
    item = as_input({
        "content": content, "subject": who, "kind": "perceptual", "source_type": "document",
        "source_id": (ref or f"sha256:{digest.hex()}")[:1024], "metadata": meta, "tags": tags,
        "importance": importance, "search_context": f"audio recording 录音 {label}"}).to_item()
    core.check_keyword_index([(item["content"], item.get("search_context"))])
    vectors = core.embed_to_store([f"{item['search_context']}\n{content}"])
    kept = transcript is None or len(data) <= keep
    with core.transaction() as conn:
        core.begin(conn, reason or f"perceived {label}")
        written = conn.execute(sql.query("write_memories"), {
            "items": Jsonb([{**item, "tenant": core.tenant}]),
            "embeddings": [None if vectors is None else vectors[0]],
            "space_id": core.space_id(), "options": Jsonb({})}).fetchone()
        conn.execute(sql.query("insert_percept"), {
            "tenant": core.tenant, "subject": who, "modality": "audio", "state": state,
            "sha256": digest, "mime": probed.mime, "size_bytes": len(data), "width": None,
            "height": None, "ref": ref, "data": data if kept else None, "thumbnail": None,
            "ocr_text": None if transcript is None else transcript.text, "caption": None,
            "exif": Jsonb(fields), "taken_at": None, "latitude": None, "longitude": None,
            "memory_id": written["id"]})
    return written["id"], written["outcome"], kept


def transcribe_memory(store: Any, memory_id: UUID, transcriber: Transcriber | None
                      ) -> dict[str, Any]:
    """Transcribe a recording kept ``not_transcribed`` and update its memory (content,
    metadata, embedding; a history row) and percept (state ok, transcript, segments; bytes
    dropped when they were kept only for this). Idempotent: a recording already transcribed
    is left as it is (``outcome`` ``already_transcribed``). NotFound when the memory is no
    recording or its bytes are gone; InvalidInput when no endpoint is configured."""
    core = store.core
    with core.read() as conn:
        row = conn.execute(sql.query("percept_for_transcription"),
                           {"tenant": core.tenant, "id": memory_id}).fetchone()
    if row is None or row["modality"] != "audio":
        raise NotFound(f"no recording {memory_id}")
    if row["state"] != NOT_TRANSCRIBED:
        return {"memory_id": str(memory_id), "outcome": "already_transcribed"}
    if transcriber is None:
        raise InvalidInput("no transcription endpoint is configured (set "
                           "MEMDB_TRANSCRIBE_MODEL, and MEMDB_TRANSCRIBE_BASE_URL if needed)")
    data = row["data"]
    if data is None and row["ref"]:
        try:
            with open(row["ref"], "rb") as fh:
                data = fh.read()
        except OSError:
            data = None
    if data is None:
        raise NotFound(f"the bytes of recording {memory_id} were not kept and its file is gone")
    memory = store.get(memory_id)
    label = str((memory.metadata or {}).get("file") or "recording")
    transcript = transcriber.transcribe(bytes(data), label, row["mime"])
    fields = dict(row["exif"] or {})
    drop = bool(fields.pop("bytes_until_transcribed", False))
    heard = _fields(Probed("", row["mime"]), transcript, False)
    if "duration_s" in fields:  # the header's duration wins over the model's
        heard.pop("duration_s", None)
    fields.update(heard)
    meta = {**(memory.metadata or {}), "transcription": "ok"}
    if "duration_s" in fields:
        meta["duration_s"] = fields["duration_s"]
    store.update(memory_id, content=transcript.content(), metadata=meta, bypass_gate=True,
                 reason=f"transcribed {label}")
    with core.transaction() as conn:
        core.begin(conn, f"transcribed {label}")
        conn.execute(sql.query("mark_transcribed"), {
            "tenant": core.tenant, "id": memory_id, "text": transcript.text,
            "exif": Jsonb(fields), "drop_data": drop})
    return {"memory_id": str(memory_id), "outcome": "transcribed",
            "segments": len(transcript.segments), "language": transcript.language}
