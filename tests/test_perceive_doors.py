"""Perceptual memory at the doors: HTTP (POST /v1/files, raw body and multipart, 413 over the
upload limit, 400 for a file that is no image, the file's description and thumbnail), MCP
(the remember_file tool over the HTTP door's /mcp) and the CLI (memdb add --file); each image,
English or Chinese, is then found by search, which says it is an image."""

from __future__ import annotations

import base64
import json

import anyio
import psycopg
import pytest
from click.testing import CliRunner

from memdb.cli import cli
from tests.cli_helpers import ok_json, run
from tests.http_server import make_keys, served_door
from tests.image_factory import text_image

pytest.importorskip("fastapi")
LIMIT = 300_000  # max_file_bytes of the door under test


@pytest.fixture(scope="module")
def keys(module_db, embedder):
    return make_keys(module_db, embedder)


@pytest.fixture(scope="module")
def door(module_db, embedder, keys):
    with served_door(module_db, embedder, max_file_bytes=LIMIT, mcp=True, ui=True) as running:
        yield running


def _rows(dsn: str, tenant: str) -> int:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT count(*) FROM memdb.percepts WHERE tenant = %s",
                            (tenant,)).fetchone()[0]


def test_http_upload_raw_and_multipart_then_search(door, keys, module_db):
    zh = text_image("会议改到星期四下午三点", lang="zh", size=28)
    en = text_image("Gate B12 boards at 18:45", size=36, fmt="JPEG")
    with door.client(keys["acme"]) as c:
        r = c.post("/v1/files", content=zh, params={"subject": "ops", "name": "会议.png"},
                   headers={"content-type": "application/octet-stream"})
        assert r.status_code == 201, r.text
        got_zh = r.json()
        assert got_zh["mime"] == "image/png" and "星期四" in got_zh["text"]
        r = c.post("/v1/files", params={"subject": "ops"},
                   files={"file": ("gate.png", en, "image/png")})  # the name lies: a JPEG
        assert r.status_code == 201, r.text
        got_en = r.json()
        assert got_en["mime"] == "image/jpeg" and "B12" in got_en["text"]
        for query, want in (("星期四开会", got_zh["id"]), ("which gate boards", got_en["id"])):
            r = c.post("/v1/search", json={"query": query, "k": 1, "subject": "ops"})
            hit = r.json()["hits"][0]["memory"]
            assert (hit["id"], hit["kind"], hit["modality"]) == (want, "perceptual", "image")
        described = c.get(f"/v1/files/{got_en['id']}").json()
        assert (described["mime"], described["has_data"]) == ("image/jpeg", True)
        assert c.get(f"/v1/memories/{got_en['id']}").json()["metadata"]["file"] == "gate.png"
        thumb = c.get(f"/v1/files/{got_zh['id']}/thumbnail")
        assert thumb.headers["content-type"] == "image/jpeg"
        assert thumb.content.startswith(b"\xff\xd8")
        assert c.get(f"/v1/files/{got_zh['id']}/content").content == zh
    with door.client(keys["globex"]) as c:  # another tenant sees none of it
        assert c.get(f"/v1/files/{got_zh['id']}").status_code == 404
        assert c.get(f"/v1/files/{got_zh['id']}/thumbnail").status_code == 404
    # the memory browser shows the image's thumbnail (inline) and the text found in it
    with door.client(follow_redirects=True) as c:
        c.post("/ui/login", data={"key": keys["acme"]})
        page = c.get(f"/ui/memories/{got_zh['id']}").text
        assert '<img src="data:image/jpeg;base64,' in page
        assert "Text found in it (OCR)" in page and "星期四" in page


def test_http_refuses_oversized_and_non_image_uploads(door, keys, module_db):
    before = _rows(module_db, "globex")
    with door.client(keys["globex"]) as c:
        r = c.post("/v1/files", content=b"\x89PNG\r\n\x1a\n" + b"\0" * (LIMIT + 10))
        assert r.status_code == 413, r.text
        r = c.post("/v1/files", content="只是一段文字，不是图片".encode(),
                   params={"name": "照片.png"})  # a text named as an image: refused
        assert r.status_code == 400 and r.json()["error"]["type"] == "UnsupportedFormat"
        assert "its content is text" in r.json()["error"]["message"]
        # a small file is not refused by the upload limit's middleware for other routes
        assert c.post("/v1/search", json={"query": "x" * 10}).status_code == 200
    assert _rows(module_db, "globex") == before


def test_mcp_remember_file_takes_an_image_then_search(door, keys):
    from tests.test_http_mcp import mcp_session

    image = base64.b64encode(text_image("Invoice total 4280 dollars", size=36)).decode()

    async def scenario():
        async with mcp_session(door.url + "/mcp", keys["acme"]) as s:
            tools = [t.name for t in (await s.list_tools()).tools]
            made = await s.call_tool("remember_file", {"file_base64": image,
                                                       "subject": "finance",
                                                       "name": "invoice.png"})
            bad = await s.call_tool("remember_file", {"file_base64": "not base64!!",
                                                      "subject": "finance"})
            found = await s.call_tool("search", {"query": "invoice total",
                                                 "subject": "finance"})
            return tools, made, bad, found

    tools, made, bad, found = anyio.run(scenario)
    assert "remember_file" in tools
    made = json.loads(made.content[0].text)
    assert made["kind"] == "image"
    memory_id = made["id"]
    assert bad.is_error and "base64" in bad.content[0].text
    first = json.loads(found.content[0].text)["results"][0]
    assert (first["id"], first["modality"]) == (memory_id, "image")


def test_cli_perceive_then_search(fresh_db, tmp_path):
    path = tmp_path / "登机牌.webp"
    path.write_bytes(text_image("登机口在十二号门", lang="zh", size=28, fmt="WEBP"))
    got = ok_json(fresh_db, "add", "--file", str(path), "--subject", "li", "--no-caption")
    assert got["mime"] == "image/webp" and "十二号门" in got["text"]
    hits = ok_json(fresh_db, "search", "登机口", "--subject", "li")
    assert hits["hits"][0]["memory"]["id"] == got["id"]
    assert hits["hits"][0]["memory"]["modality"] == "image"
    text = run(fresh_db, "add", "--file", str(path), "--subject", "li")
    assert text.exit_code == 0 and "duplicate" in text.stdout
    bad = tmp_path / "notes.png"
    bad.write_text("plain notes", encoding="utf-8")
    refused = run(fresh_db, "add", "--file", str(bad))
    assert refused.exit_code == 1 and "notes.png" in refused.output


@pytest.mark.parametrize(("args", "error"), [
    (["记住这个", "--file", "x.png"], "CONTENT or --file, not both"),
    (["--file", "x.png", "--scope", "project"], "--file does not take --scope"),
    (["remember this", "--no-caption"], "--no-caption only go with --file"),
    ([], "Missing argument 'CONTENT' (or --file PATH)")])
def test_cli_add_takes_content_or_a_file(args, error):
    """Refused before anything connects (a DSN nobody answers): a usage error, exit 2."""
    got = CliRunner().invoke(cli, ["--dsn", "postgresql://nobody@127.0.0.1:1/none", "add",
                                   *args])
    assert got.exit_code == 2 and error in got.stderr, got.output
