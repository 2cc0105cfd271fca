"""One file door for every format (store.add_file): a Word document and a WAV recording (its
transcript from the canned transcription server, tests/canned_openai.py) through the CLI
(memdb add --file), HTTP (POST /v1/files) and MCP (remember_file), then found by search in
English and Chinese; a file of no format memdb reads is refused at each door, nothing
written."""

from __future__ import annotations

import base64
import json

import anyio
import psycopg
import pytest

from tests.canned_openai import CannedOpenAI, Transcription
from tests.cli_helpers import ok_json, run
from tests.http_server import make_keys, served_door
from tests.office_files import EN as DOC_EN
from tests.office_files import ZH as DOC_ZH
from tests.office_files import docx
from tests.test_perceive_audio import wav

pytest.importorskip("fastapi")
pytest.importorskip("docx")

SAID_EN = Transcription([(0.0, 2.0, "The ferry to the island leaves at noon.")])
SAID_ZH = Transcription([(0.0, 2.0, "去海岛的渡轮中午出发。")], language="chinese")
JUNK = b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 4  # an executable: no format memdb reads


def _written(dsn: str, tenant: str | None = None) -> tuple[int, int]:
    """(memories, documents) of the tenant (all tenants when None)."""
    where = "" if tenant is None else " WHERE tenant = %s"
    args = () if tenant is None else (tenant,)
    with psycopg.connect(dsn) as conn:
        return (conn.execute("SELECT count(*) FROM memdb.memories" + where, args).fetchone()[0],
                conn.execute("SELECT count(*) FROM memdb.documents" + where, args).fetchone()[0])


@pytest.fixture
def transcribing(monkeypatch):
    with CannedOpenAI(transcripts=[SAID_EN, SAID_ZH]) as api:
        monkeypatch.setenv("MEMDB_TRANSCRIBE_MODEL", "whisper-canned")
        monkeypatch.setenv("MEMDB_TRANSCRIBE_BASE_URL", api.base_url)
        monkeypatch.setenv("MEMDB_TRANSCRIBE_API_KEY", "sk-canned")
        yield api


@pytest.fixture(scope="module")
def keys(module_db, embedder):
    return make_keys(module_db, embedder)


@pytest.fixture(scope="module")
def door(module_db, embedder, keys):
    with served_door(module_db, embedder, max_file_bytes=2_000_000, mcp=True) as running:
        yield running


def test_cli_add_file_takes_a_document_and_a_recording(fresh_db, tmp_path, transcribing):
    report = docx(tmp_path / "审计.docx")
    got = ok_json(fresh_db, "add", "--file", str(report), "--subject", "li")
    assert got["kind"] == "document" and got["files"][0]["format"] == "docx"
    assert got["files"][0]["chunks"] >= 1 and got["files"][0]["document_id"]
    heard = ok_json(fresh_db, "add", "--file", str(_wav(tmp_path, "ferry.wav", 1)),
                    "--subject", "li")
    assert (heard["kind"], heard["modality"], heard["state"]) == ("audio", "audio", "ok")
    assert "ferry" in heard["text"]
    heard_zh = ok_json(fresh_db, "add", "--file", str(_wav(tmp_path, "渡轮.wav", 2)),
                       "--subject", "li")
    assert "渡轮" in heard_zh["text"]
    for query, want in ((DOC_EN["docx"], "document"), (DOC_ZH["docx"], "document"),
                        ("when does the ferry leave", heard["id"]),
                        ("渡轮几点出发", heard_zh["id"])):
        top = ok_json(fresh_db, "search", query, "--subject", "li")["hits"][0]["memory"]
        if want == "document":
            assert top["source_type"] == "document" and top["kind"] == "semantic", top
        else:
            assert top["id"] == want
    before = _written(fresh_db)
    junk = tmp_path / "tool.bin"
    junk.write_bytes(JUNK)
    refused = run(fresh_db, "add", "--file", str(junk), "--subject", "li")
    assert refused.exit_code == 1 and "not a file memdb reads" in refused.output
    assert "Word" in refused.output and "WAV" in refused.output
    assert _written(fresh_db) == before


def _wav(tmp_path, name: str, tone: int):
    path = tmp_path / name
    path.write_bytes(wav(2.0, tone))
    return path


def test_http_files_takes_a_document_and_a_recording(door, keys, module_db, tmp_path,
                                                    transcribing):
    data = docx(tmp_path / "audit.docx").read_bytes()
    with door.client(keys["acme"]) as c:
        r = c.post("/v1/files", params={"subject": "ops"},
                   files={"file": ("audit.docx", data, "application/octet-stream")})
        assert r.status_code == 201, r.text
        got = r.json()
        assert got["kind"] == "document" and got["files"][0]["format"] == "docx"
        assert got["files"][0]["uri"].startswith("upload://")
        r = c.post("/v1/files", content=wav(2.0, 3), params={"subject": "ops"})
        assert r.status_code == 201, r.text
        heard = r.json()
        assert heard["kind"] == "audio" and "ferry" in heard["text"]
        for query in (DOC_EN["docx"], DOC_ZH["docx"]):
            r = c.post("/v1/search", json={"query": query, "k": 1, "subject": "ops"})
            top = r.json()["hits"][0]["memory"]
            assert top["source_type"] == "document", top
        r = c.post("/v1/search", json={"query": "ferry to the island", "k": 1,
                                       "subject": "ops"})
        assert r.json()["hits"][0]["memory"]["id"] == heard["id"]
    before = _written(module_db, "globex")
    with door.client(keys["globex"]) as c:
        r = c.post("/v1/files", content=JUNK, params={"name": "tool"})
        assert r.status_code == 400 and r.json()["error"]["type"] == "UnsupportedFormat"
        assert "Word" in r.json()["error"]["message"]
    assert _written(module_db, "globex") == before


def test_mcp_remember_file_takes_a_document_and_a_recording(door, keys, module_db, tmp_path,
                                                          transcribing):
    from tests.test_http_mcp import mcp_session

    document = base64.b64encode(docx(tmp_path / "审计.docx").read_bytes()).decode()
    recording = base64.b64encode(wav(2.0, 4)).decode()

    async def scenario():
        async with mcp_session(door.url + "/mcp", keys["acme"]) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            made = [await s.call_tool("remember_file", {
                "file_base64": b64, "subject": "mcp", "name": name})
                for b64, name in ((document, "审计.docx"), (recording, "ferry.wav"))]
            bad = await s.call_tool("remember_file", {
                "file_base64": base64.b64encode(JUNK).decode(), "subject": "mcp-junk"})
            found = [await s.call_tool("search", {"query": q, "subject": "mcp"})
                     for q in (DOC_ZH["docx"], "ferry to the island")]
            return tools, made, bad, found

    before = _written(module_db)
    tools, made, bad, found = anyio.run(scenario)
    assert "remember_file" in tools and "remember_image" not in tools
    description = tools["remember_file"].description
    assert all(word in description for word in ("image", "recording", "document"))
    doc, heard = (json.loads(m.content[0].text) for m in made)
    assert doc["kind"] == "document" and doc["files"][0]["chunks"] >= 1
    assert heard["kind"] == "audio" and "ferry" in heard["text"]
    assert bad.is_error and "not a file memdb reads" in bad.content[0].text
    zh_top, en_top = (json.loads(f.content[0].text)["results"][0] for f in found)
    assert DOC_ZH["docx"][:6] in zh_top["content"]
    assert en_top["id"] == heard["id"]
    memories, documents = _written(module_db)
    assert documents == before[1] + 1  # the refused file wrote nothing
