"""Recordings as perceptual memories (store.perceive, modality audio): sniffed by content,
their duration read from the header, very long ones refused with nothing written, transcribed
through an OpenAI-compatible /v1/audio/transcriptions endpoint, or kept 'not_transcribed' and
transcribed later by the 'transcribe' job. The transcription model is faked by the canned
server (tests/canned_openai.py: the real openai client uploads the file to it and gets canned
verbose_json back); the database and the embedder are real. English and Chinese."""

from __future__ import annotations

import io
import struct
import wave

import psycopg
import pytest

from memdb import MemoryStore
from memdb.core.errors import MalformedFile, TooLarge, UnsupportedFormat
from memdb.families.jobs import Worker
from memdb.write.perceive import Transcriber, TranscriptionFailed
from tests.audio_factory import m4a, mp3, ogg
from tests.canned_openai import TRANSCRIPTIONS, CannedOpenAI, Status, Transcription

EN = Transcription([(0.0, 2.4, "The quarterly budget review moved to Friday."),
                    (2.4, 5.1, "Bring the warehouse inventory report.")])
ZH = Transcription([(0.0, 3.2, "季度预算评审改到星期五。"), (3.2, 6.0, "请带上仓库库存报告。")],
                   language="chinese")


def wav(seconds: float, tone: int = 1, rate: int = 8000) -> bytes:
    """A mono 16-bit WAV of ``seconds`` (``tone`` varies the samples, hence the sha256)."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(struct.pack("<h", tone) * int(rate * seconds))
    return buf.getvalue()


def _count(dsn: str, sql: str, *args) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(sql, args).fetchone()[0]


def test_a_transcribed_recording_is_found_in_english_and_chinese_with_its_times(store,
                                                                                 fresh_db):
    with CannedOpenAI(transcripts=[EN, ZH]) as api:
        heard = Transcriber(api.base_url, model="whisper-canned", api_key="sk-audio")
        en = store.perceive(wav(5.1, 1), subject="alice", name="budget.wav",
                            transcribe=heard)
        zh = store.perceive(wav(6.0, 2), subject="alice", name="预算.wav", transcribe=heard)
        sent = [r for r in api.requests if r["path"] == TRANSCRIPTIONS]
    # the real client uploaded the file, asked for verbose_json with segment times
    assert len(sent) == 2 and sent[0]["authorization"] == "Bearer sk-audio"
    assert sent[0]["body"]["response_format"] == "verbose_json"
    assert sent[0]["body"]["model"] == "whisper-canned"
    assert sent[0]["body"]["file"]["sha256"] == en.sha256
    assert (en.modality, en.mime, en.state, en.duration_s) == ("audio", "audio/wav", "ok", 5.1)
    assert en.segments[1] == {"start": 2.4, "end": 5.1,
                              "text": "Bring the warehouse inventory report."}
    for query, want, stamp in (("quarterly budget review", en.id, "[0:00–0:02]"),
                               ("warehouse inventory", en.id, "[0:02–0:05]"),
                               ("季度预算评审", zh.id, "[0:00–0:03]"),
                               ("仓库库存报告", zh.id, "[0:03–0:06]")):
        for routes in (("bm25",), ("vector",)):
            hits = store.search(query, k=1, subject="alice", routes=routes)
            assert hits and hits[0].memory.id == want, (query, routes)
            assert hits[0].memory.modality == "audio"
        assert stamp in store.get(want).content  # the segment's time, for a citation
    row = store.percepts.get(zh.id)
    assert (row["modality"], row["state"], row["mime"]) == ("audio", "ok", "audio/wav")
    assert row["exif"]["duration_s"] == 6.0 and row["exif"]["language"] == "chinese"
    assert [s["start"] for s in row["exif"]["segments"]] == [0.0, 3.2]
    assert "星期五" in row["ocr_text"]
    # the same file again is the same memory, not a second call to the model
    again = store.perceive(wav(5.1, 1), subject="alice", transcribe=heard)
    assert (again.id, again.outcome, again.state) == (en.id, "duplicate", "ok")
    assert _count(fresh_db, "SELECT count(*) FROM memdb.percepts") == 2


@pytest.mark.parametrize(("fmt", "make", "mime", "seconds"), [
    ("mp3", lambda n: mp3(200 + n), "audio/mpeg", (5.213, 5.239)),
    ("ogg", lambda n: ogg(6.25, tag=bytes([n])), "audio/ogg", (6.25, 6.25)),
    ("m4a", lambda n: m4a(7.5, tag=bytes([n])), "audio/mp4", (7.5, 7.5)),
])
def test_mp3_ogg_and_m4a_recordings_are_transcribed_and_found(store, fmt, make, mime, seconds):
    """Each format by its content (named .bin), its duration from its header, its transcript
    found in English and Chinese."""
    with CannedOpenAI(transcripts=[EN, ZH]) as api:
        heard = Transcriber(api.base_url, model="whisper-canned", api_key="sk-audio")
        got = [store.perceive(make(n), subject=fmt, name=f"meeting-{n}.bin", transcribe=heard)
               for n in (0, 1)]
        sent = [r for r in api.requests if r["path"] == TRANSCRIPTIONS]
    assert [r["body"]["file"]["sha256"] for r in sent] == [g.sha256 for g in got]
    assert [(g.modality, g.mime, g.state) for g in got] == [("audio", mime, "ok")] * 2
    assert tuple(g.duration_s for g in got) == seconds
    for query, want in (("quarterly budget review", got[0].id), ("仓库库存报告", got[1].id)):
        for routes in (("bm25",), ("vector",)):
            hits = store.search(query, k=1, subject=fmt, routes=routes)
            assert hits and hits[0].memory.id == want, (fmt, query, routes)
            assert hits[0].memory.modality == "audio"


def test_a_failing_endpoint_writes_nothing(store, fresh_db):
    with CannedOpenAI(transcripts=[Status(500)]) as api:
        heard = Transcriber(api.base_url, model="m", max_retries=0)
        with pytest.raises(TranscriptionFailed):
            store.perceive(wav(1.0, 3), subject="alice", transcribe=heard)
    assert _count(fresh_db, "SELECT count(*) FROM memdb.memories") == 0


def _worker(store: MemoryStore) -> Worker:
    def factory(tenant: str) -> MemoryStore:
        return MemoryStore(store.db.dsn, tenant=tenant, embedder=store.embedder, pool_size=2)
    return Worker(store.db.dsn, tenants=[store.tenant], store_factory=factory, backoff=0.1)


def test_without_an_endpoint_it_is_kept_not_transcribed_then_the_job_transcribes_it(
        store, fresh_db, monkeypatch):
    monkeypatch.delenv("MEMDB_TRANSCRIBE_MODEL", raising=False)
    zh = store.perceive(wav(6.0, 4), subject="bob", name="会议录音.wav", keep_bytes=0)
    en = store.perceive(wav(5.1, 5), subject="bob", name="standup.wav", keep_bytes=0)
    assert (zh.state, zh.text, zh.duration_s, zh.bytes_kept) == ("not_transcribed", "", 6.0,
                                                                 True)
    hit = store.search("会议录音", k=1, subject="bob", routes=("bm25",))[0].memory
    assert hit.id == zh.id and hit.modality == "audio"
    assert hit.metadata["transcription"] == "not_transcribed"
    assert "not transcribed" in hit.content and "0:06 long" in hit.content
    assert store.percepts.get(zh.id)["state"] == "not_transcribed"
    assert set(store.percepts.pending()) == {str(zh.id), str(en.id)}
    # no endpoint on the worker: the job fails for good, the recording stays as it was
    jobs = store.percepts.transcribe_pending()
    assert len(jobs) == 2 and {j.kind for j in jobs} == {"transcribe"}
    with _worker(store) as worker:
        worker.run_pending()
    assert store.jobs.get(jobs[0].id).state == "dead"
    assert "MEMDB_TRANSCRIBE_MODEL" in store.jobs.get(jobs[0].id).last_error
    assert len(store.percepts.pending()) == 2
    with CannedOpenAI(transcripts=[ZH, EN]) as api:
        monkeypatch.setenv("MEMDB_TRANSCRIBE_MODEL", "whisper-canned")
        monkeypatch.setenv("MEMDB_TRANSCRIBE_BASE_URL", api.base_url)
        for job in jobs:
            store.jobs.retry(job.id)
        with _worker(store) as worker:
            assert worker.run_pending() == 2
        assert {store.jobs.get(j.id).state for j in jobs} == {"done"}
        # idempotent: enqueued again (the same jobs) or run directly, nothing is sent again
        assert [j.id for j in store.percepts.transcribe_pending()] == []
        assert store.percepts.transcribe(zh.id)["outcome"] == "already_transcribed"
        assert len([r for r in api.requests if r["path"] == TRANSCRIPTIONS]) == 2
    assert store.percepts.pending() == []
    for query, want in (("季度预算评审", zh.id), ("quarterly budget review", en.id)):
        got = store.search(query, k=1, subject="bob", routes=("bm25",))[0].memory
        assert got.id == want and got.metadata["transcription"] == "ok"
        assert "not transcribed" not in got.content and "[0:00–0:0" in got.content
    row = store.percepts.get(zh.id)
    assert row["state"] == "ok" and "仓库" in row["ocr_text"] and row["exif"]["segments"]
    assert row["exif"]["duration_s"] == 6.0 and "bytes_until_transcribed" not in row["exif"]
    # the bytes were kept only until transcribed (keep_bytes=0)
    assert not row["has_data"]
    assert store.get(zh.id).version == 2  # updated in place, one history row


def test_formats_by_content_and_hostile_recordings_refused(store, fresh_db, tmp_path):
    lying = tmp_path / "song.png"  # an MP3 whose name says PNG
    lying.write_bytes(mp3(200))
    song = store.perceive(lying, subject="carol", transcribe=False)
    assert (song.modality, song.mime, song.duration_s) == ("audio", "audio/mpeg", 5.213)
    # a WAV whose header claims 74 hours, in a few kilobytes: refused by its duration
    claims = bytearray(wav(0.1, 6))
    at = claims.find(b"data")
    claims[at + 4:at + 8] = struct.pack("<I", 0xFFFFFF00)
    with pytest.raises(TooLarge, match="over the limit of 10800 s"):
        store.perceive(bytes(claims), subject="carol", transcribe=False)
    with pytest.raises(TooLarge, match="over the limit of 2 s"):
        store.perceive(wav(3.0, 7), subject="carol", transcribe=False, max_seconds=2)
    with pytest.raises(MalformedFile):
        store.perceive(b"OggS" + b"\x00" * 100, subject="carol", transcribe=False)
    with pytest.raises(UnsupportedFormat):
        store.perceive(b"fLaC" + b"\x00" * 100, subject="carol", transcribe=False)
    assert _count(fresh_db, "SELECT count(*) FROM memdb.memories") == 1
    assert _count(fresh_db, "SELECT count(*) FROM memdb.percepts") == 1


def test_cli_add_file_keeps_a_recording(fresh_db, tmp_path, monkeypatch):
    from tests.cli_helpers import ok_json, run

    monkeypatch.delenv("MEMDB_TRANSCRIBE_MODEL", raising=False)
    path = tmp_path / "晨会录音.wav"
    path.write_bytes(wav(2.5, 8))
    text = run(fresh_db, "add", "--file", str(path), "--subject", "li")
    assert text.exit_code == 0 and "audio/wav 2.5s not_transcribed" in text.stdout
    got = ok_json(fresh_db, "add", "--file", str(path), "--subject", "li")
    assert (got["outcome"], got["modality"], got["state"]) == ("duplicate", "audio",
                                                               "not_transcribed")
    hits = ok_json(fresh_db, "search", "晨会录音", "--subject", "li")
    assert hits["hits"][0]["memory"]["modality"] == "audio"
