"""One document-ingest request does bounded work: over HTTP (POST /v1/documents) and MCP
(add_document at /mcp) a request whose documents make more chunks than the server's
``max_ingest_chunks`` is refused up front (413 / a TooLarge tool error) with a message naming
the limit and the ways around it, before anything is embedded or stored; one under the limit is
ingested. Real uvicorn on a loopback port, the data path an application login, English and
Chinese documents."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager

import anyio
import psycopg
import pytest

from tests.app_login import app_login
from tests.http_server import door_settings, make_keys, running_door, served_door
from tests.test_ingest import HashEmbedder

pytest.importorskip("fastapi")

LIMIT = 8
# each well over LIMIT chunks of the default 256 tokens
EN_BIG = "# Runbook\n\n" + "\n\n".join(
    f"Step {i}: restart the billing worker number {i} and check its queue depth again."
    for i in range(200))
ZH_BIG = "# 运维手册\n\n" + "\n\n".join(
    f"第{i}步：重启第{i}个计费进程，然后再次检查它的队列长度是否正常。" for i in range(120))
EN_SMALL = "# Deploys\n\nDeploys happen on Fridays after the standup."
ZH_SMALL = "# 发布\n\n每周五站会之后发布计费服务。"


@pytest.fixture(scope="module")
def hashing():
    return HashEmbedder()


@pytest.fixture(scope="module")
def keys(module_db, hashing):
    return make_keys(module_db, hashing)


@pytest.fixture(scope="module")
def door(module_db, hashing, keys):
    with served_door(module_db, hashing, max_ingest_chunks=LIMIT) as running:
        yield running


def _stored(dsn: str, tenant: str) -> tuple[int, int]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT (SELECT count(*) FROM memdb.documents WHERE tenant = %(t)s),"
            " (SELECT count(*) FROM memdb.memories WHERE tenant = %(t)s)",
            {"t": tenant}).fetchone()


def _doc(doc_id: str, text: str) -> dict[str, str]:
    return {"id": doc_id, "text": text}


def test_the_default_limit_is_64_chunks():
    from memdb.http import ServerSettings

    assert ServerSettings().max_ingest_chunks == 64


@pytest.mark.parametrize("text", [EN_BIG, ZH_BIG], ids=["en", "zh"])
def test_a_document_over_the_limit_is_413_and_nothing_is_embedded_or_stored(
        door, keys, module_db, hashing, text):
    before, embedded = _stored(module_db, "globex"), len(hashing.texts)
    with door.client(keys["globex"]) as c:
        # wait: in the request (by default a text this big would be queued as a job)
        r = c.post("/v1/documents", json={"documents": [_doc("kb:big.md", text)],
                                          "wait": True})
    assert r.status_code == 413, r.text
    error = r.json()["error"]
    assert error["type"] == "TooLarge"
    message = error["message"]
    assert f"limit of {LIMIT} chunks" in message
    assert "memdb documents ingest" in message and "--max-ingest-chunks" in message
    assert len(hashing.texts) == embedded  # refused before any embedding
    assert _stored(module_db, "globex") == before


def test_a_text_too_big_for_the_limit_is_refused_before_it_is_chunked(door, keys, module_db,
                                                                      hashing):
    """Over max_ingest_chunks x chunk_tokens x 16 bytes: refused without chunking (a dry run
    too), so a big body costs no tokenizer time either."""
    huge = "# 日志\n\n" + "计费服务重启完成，队列正常。" * 1300  # ~55 KB, under the 64 KB body cap
    embedded = len(hashing.texts)
    with door.client(keys["globex"]) as c:
        for dry_run in (False, True):
            r = c.post("/v1/documents", json={"documents": [_doc("kb:日志.md", huge)],
                                              "dry_run": dry_run, "wait": True})
            assert r.status_code == 413, r.text
            message = r.json()["error"]["message"]
            assert "bytes" in message and f"limit of {LIMIT} chunks" in message
            assert "memdb documents ingest" in message
    assert len(hashing.texts) == embedded
    assert _stored(module_db, "globex") == (0, 0)


def test_the_limit_is_per_request_not_per_document(door, keys, module_db, hashing):
    half = "\n\n".join(EN_BIG.split("\n\n")[:80])
    zh_half = "\n\n".join(ZH_BIG.split("\n\n")[:50])
    with door.client(keys["globex"]) as c:
        for doc in (_doc("kb:half.md", half), _doc("kb:一半.md", zh_half)):
            one = c.post("/v1/documents", json={"documents": [doc], "dry_run": True})
            assert one.status_code == 201 and 0 < one.json()["chunks"] <= LIMIT, one.text
        embedded = len(hashing.texts)
        both = c.post("/v1/documents", json={"documents": [
            _doc("kb:half.md", half), _doc("kb:一半.md", zh_half)]})
    assert both.status_code == 413, both.text
    assert len(hashing.texts) == embedded
    assert _stored(module_db, "globex") == (0, 0)


def test_documents_under_the_limit_are_ingested(door, keys, module_db):
    with door.client(keys["acme"]) as c:
        r = c.post("/v1/documents", json={"documents": [
            _doc("kb:deploys.md", EN_SMALL), _doc("kb:发布.md", ZH_SMALL)]})
        assert r.status_code == 201, r.text
        assert r.json()["counts"] == {"created": 2}
        assert 2 <= r.json()["chunks"] <= LIMIT
        # a dry run embeds nothing: it reports the chunks even over the limit
        dry = c.post("/v1/documents", json={"documents": [_doc("kb:big.md", EN_BIG)],
                                            "dry_run": True})
        assert dry.status_code == 201 and dry.json()["chunks"] > LIMIT, dry.text
    documents, memories = _stored(module_db, "acme")
    assert documents == 2 and memories >= 2


@asynccontextmanager
async def _mcp_session(url: str, key: str):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    httpx2 = pytest.importorskip("httpx2")
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"},
                                  timeout=60) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


def test_mcp_add_document_has_the_same_limit(module_db, hashing, keys):
    pytest.importorskip("mcp")
    with app_login(module_db) as app_dsn:
        settings = door_settings(app_dsn, module_db, hashing, max_ingest_chunks=LIMIT, mcp=True)
        with running_door(settings) as running:
            async def scenario() -> tuple[dict, dict, dict, int]:
                async with _mcp_session(running.url + "/mcp", keys["alice"]) as s:
                    embedded = len(hashing.texts)
                    big_en = await s.call_tool("add_document", {
                        "document_id": "mcp:big.md", "text": EN_BIG})
                    big_zh = await s.call_tool("add_document", {
                        "document_id": "mcp:大.md", "text": ZH_BIG})
                    refused_embedded = len(hashing.texts) - embedded
                    small = await s.call_tool("add_document", {
                        "document_id": "mcp:发布.md", "text": ZH_SMALL})
                return (json.loads(big_en.content[0].text), json.loads(big_zh.content[0].text),
                        json.loads(small.content[0].text), refused_embedded)

            big_en, big_zh, small, refused_embedded = anyio.run(scenario)
    # a text over 16,000 characters is queued as a job (nothing embedded in the call); a
    # smaller one over the chunk limit is refused
    assert (big_en["kind"], big_en["state"]) == ("documents.ingest", "queued"), big_en
    for big in (big_zh,):
        assert big["error"]["type"] == "TooLarge", big
        assert f"limit of {LIMIT} chunks" in big["error"]["message"]
        assert "memdb documents ingest" in big["error"]["message"]
    assert refused_embedded == 0
    assert small["counts"] == {"created": 1}
    with psycopg.connect(module_db) as conn:
        uris = {r[0] for r in conn.execute(
            "SELECT uri FROM memdb.documents WHERE subject = 'alice'").fetchall()}
    assert uris == {"mcp:发布.md"}
