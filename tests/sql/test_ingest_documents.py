"""memdb.ingest_documents and memdb.known_chunks_batch called directly in SQL (no Python DAL):
a batch written by one call ends in the same state as the same documents written one call
each (documents, chunk maps, memories and their owners and provenance), with BM25
statistics that match the memories; all or nothing when one document is bad; and the
known-chunks probe stays an index probe under row-level security.

Every test uses the ``raw`` fixture: a plain autocommit connection (the admin) to a fresh
migrated database of its own.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import psycopg
import pytest
from psycopg.types.json import Jsonb

DIMS = 8

INGEST = ("SELECT ord, document_id, version, chunks, created, reused, removed "
          "FROM memdb.ingest_documents(%s, %s, %s, %s, %s)")
INGEST_ONE = ("SELECT document_id, version, chunks, created, reused, removed "
              "FROM memdb.ingest_document(%s, %s, %s, %s, %s)")


def vec(text: str) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
    return v / np.linalg.norm(v)


def document(uri: str, texts: list[str], *, category: str = "general") -> tuple[dict, list]:
    """(document, chunks) as memdb's ingest sends them: text = the chunks joined by blank
    lines, each chunk's offsets into it."""
    content = "\n\n".join(texts)
    chunks, at = [], 0
    for t in texts:
        chunks.append({"content": t, "search_context": uri, "heading_path": [uri],
                       "char_start": at, "char_end": at + len(t), "tokens": len(t.split())})
        at += len(t) + 2
    doc = {"uri": uri, "title": uri, "format": "text", "size": len(content.encode()),
           "content_hash": hashlib.sha256(content.encode()).hexdigest(), "content": content,
           "chunking": {}, "metadata": {}, "subject": "kb", "scope": "user",
           "category": category, "tags": ["kb"], "importance": 0.5}
    return doc, chunks


def space(raw: psycopg.Connection) -> int:
    return raw.execute("SELECT memdb.ensure_embedding_space('fixed-8d', %s)",
                       (DIMS,)).fetchone()[0]


def ingest_batch(raw, tenant: str, docs: list[tuple[dict, list]], sid: int) -> list[tuple]:
    vectors = [vec(c["content"]) for _, chunks in docs for c in chunks]
    return raw.execute(INGEST, (tenant, Jsonb([d for d, _ in docs]),
                                Jsonb([c for _, c in docs]), vectors, sid)).fetchall()


def ingest_singles(raw, tenant: str, docs: list[tuple[dict, list]], sid: int) -> list[tuple]:
    out = []
    for n, (d, chunks) in enumerate(docs, start=1):
        row = raw.execute(INGEST_ONE, (tenant, Jsonb(d), Jsonb(chunks),
                                       [vec(c["content"]) for c in chunks], sid)).fetchone()
        out.append((n, *row))
    return out


def state(raw: psycopg.Connection, tenant: str) -> dict:
    """A tenant's documents, chunk maps and chunk memories with ids replaced by URIs."""
    docs = raw.execute("SELECT uri, version, chunk_count FROM memdb.documents "
                       "WHERE tenant = %s ORDER BY uri", (tenant,)).fetchall()
    chunks = raw.execute("""
        SELECT d.uri, c.position, m.content, o.uri AS owner,
               split_part(m.source_id, '#', 2) AS owner_position,
               m.metadata - 'document_id' AS provenance, m.embedding IS NOT NULL AS has_vector
        FROM memdb.document_chunks c
        JOIN memdb.documents d ON d.id = c.document_id
        JOIN memdb.memories m ON m.id = c.memory_id
        LEFT JOIN memdb.documents o ON o.id = m.document_id
        WHERE d.tenant = %s ORDER BY d.uri, c.position""", (tenant,)).fetchall()
    memories = raw.execute("SELECT content, source_type FROM memdb.memories "
                           "WHERE tenant = %s ORDER BY content", (tenant,)).fetchall()
    return {"documents": docs, "chunks": [json.dumps(r, default=str) for r in chunks],
            "memories": memories}


def bm25(raw: psycopg.Connection, tenant: str) -> tuple:
    """(the tenant's BM25 statistics as the triggers keep them, the same recomputed)."""
    kept = (raw.execute("SELECT doc_count, total_len FROM memdb.bm25_stats WHERE tenant = %s",
                        (tenant,)).fetchone(),
            raw.execute("SELECT term, df FROM memdb.bm25_terms WHERE tenant = %s AND df <> 0 "
                        "ORDER BY term", (tenant,)).fetchall())
    stats = raw.execute("SELECT count(*), coalesce(sum(doc_len), 0) FROM memdb.memories "
                        "WHERE tenant = %s AND valid_to IS NULL", (tenant,)).fetchone()
    terms = raw.execute("""SELECT u.lexeme, count(*) FROM memdb.memories m,
                               unnest(m.tsv) u WHERE m.tenant = %s AND m.valid_to IS NULL
                           GROUP BY 1 ORDER BY 1""", (tenant,)).fetchall()
    return kept, (stats, terms)


def test_batch_equals_one_call_per_document(raw):
    """Three documents sharing text, plus a user's memory with one chunk's text: one batch
    call and three single calls give the same chunk maps, owners, memories and BM25
    statistics; so does a second round where a document drops text another one keeps, and
    takes text a third one drops. (Search contexts may differ: a memory an earlier document
    of the batch lets go of keeps its context when a later one takes it over, where one call
    per document would have rewritten it. BM25 statistics match the memories either way.)"""
    sid = space(raw)
    for tenant in ("batch", "single"):
        raw.execute("SELECT memdb.add_memories(%s)", (Jsonb([
            {"tenant": tenant, "subject": "kb", "content": "The office opens at nine."}]),))
    first = [
        document("kb:a", ["Alpha keys rotate every 90 days.", "Shared legal notice 2026.",
                          "Alpha deploys on Fridays."]),
        document("kb:b", ["Beta has no keys.", "Shared legal notice 2026.",
                          "The office opens at nine.", "发布流程：每周五发布。"]),
        document("kb:c", ["Gamma repeats itself.", "Gamma repeats itself.",
                          "密钥每九十天轮换一次。"], category="tools"),
    ]
    batch = ingest_batch(raw, "batch", first, sid)
    single = ingest_singles(raw, "single", first, sid)
    assert [r[0] for r in batch] == [1, 2, 3]
    assert [r[2:] for r in batch] == [r[2:] for r in single]
    # (version, chunks, created, reused, removed): the shared notice is a's, b reuses it and
    # the user's memory, c's repeat is stored once
    assert [r[2:] for r in batch] == [(1, 3, 3, 0, 0), (1, 4, 2, 2, 0), (1, 3, 2, 1, 0)]
    assert state(raw, "batch") == state(raw, "single")
    assert bm25(raw, "batch")[0] == bm25(raw, "single")[0]

    second = [
        document("kb:a", ["Alpha keys rotate every 30 days.", "Alpha deploys on Fridays."]),
        document("kb:b", ["Beta has no keys.", "Shared legal notice 2026.",
                          "Gamma repeats itself.", "发布流程：每周五发布。"]),
        document("kb:c", ["密钥每九十天轮换一次。", "Gamma now says something new."],
                 category="tools"),
    ]
    batch = ingest_batch(raw, "batch", second, sid)
    single = ingest_singles(raw, "single", second, sid)
    assert [r[2] for r in batch] == [2, 2, 2]
    assert state(raw, "batch") == state(raw, "single")
    owners = dict(raw.execute(
        "SELECT m.content, d.uri FROM memdb.memories m JOIN memdb.documents d "
        "ON d.id = m.document_id WHERE m.tenant = 'batch'").fetchall())
    assert owners["Shared legal notice 2026."] == "kb:b"  # a let go of it: b inherits
    assert owners["Gamma repeats itself."] == "kb:b"      # c let go of it: b inherits
    assert "Alpha keys rotate every 90 days." not in owners  # nobody uses it: deleted
    for tenant in ("batch", "single"):
        kept, recomputed = bm25(raw, tenant)
        assert kept == recomputed
    assert raw.execute("SELECT count(*) FROM memdb.memory_history h JOIN memdb.memories m "
                       "ON m.id = h.memory_id WHERE m.tenant = 'batch' AND h.op = 'insert'"
                       ).fetchone()[0] == raw.execute(
        "SELECT count(*) FROM memdb.memories WHERE tenant = 'batch'").fetchone()[0]


def test_one_bad_document_fails_the_whole_call_and_writes_nothing(raw):
    sid = space(raw)
    good = document("kb:good", ["A good chunk."])
    ingest_batch(raw, "t", [good], sid)
    before = state(raw, "t")
    bad_doc, bad_chunks = document("kb:bad", ["A bad chunk."])
    bad_chunks[0]["char_end"] = bad_chunks[0]["char_start"]  # an empty span: a CHECK fails
    changed = document("kb:good", ["A good chunk, changed."])
    with pytest.raises(psycopg.errors.CheckViolation):
        ingest_batch(raw, "t", [changed, (bad_doc, bad_chunks)], sid)
    assert state(raw, "t") == before


@pytest.mark.parametrize("shape", ["twice", "lengths", "not_arrays", "vectors"])
def test_bad_shapes_are_rejected_with_22023(raw, shape):
    sid = space(raw)
    d, c = document("kb:x", ["Some text."])
    docs, chunks = {"twice": ([d, d], [c, c]), "lengths": ([d], [c, c]),
                    "not_arrays": ([d], [c[0]]), "vectors": ([d], [c])}[shape]
    vectors = [vec("a"), vec("b")] if shape == "vectors" else None  # two for one chunk
    with pytest.raises(psycopg.Error) as info:
        raw.execute(INGEST, ("t", Jsonb(docs), Jsonb(chunks), vectors, sid))
    assert info.value.sqlstate == "22023"
    assert raw.execute("SELECT count(*) FROM memdb.documents").fetchone()[0] == 0


def test_empty_batch_returns_nothing(raw):
    assert raw.execute(INGEST, ("t", Jsonb([]), Jsonb([]), None, None)).fetchall() == []


def test_known_chunks_batch_scope_vectors_and_changed_context(raw):
    sid = space(raw)
    ingest_batch(raw, "t", [document("kb:a", ["Known text.", "Other text."])], sid)
    raw.execute("SELECT memdb.add_memories(%s)", (Jsonb([
        {"tenant": "t", "subject": "kb", "content": "No vector here."}]),))

    def known(docs: list[dict]) -> list[tuple[int, int]]:
        return [tuple(r) for r in raw.execute(
            "SELECT doc, chunk FROM memdb.known_chunks_batch('t', %s, %s)",
            (Jsonb(docs), sid)).fetchall()]

    scope = {"subject": "kb", "scope": "user", "project_id": None, "session_id": None}
    texts = ["  known TEXT. ", "No vector here.", "New text."]
    assert known([{**scope, "uri": "kb:b", "texts": texts, "contexts": [None] * 3},
                  {**scope, "uri": "kb:c", "texts": ["Other text."], "contexts": ["x"]},
                  {**scope, "subject": "someone-else", "uri": "kb:d", "texts": texts,
                   "contexts": [None] * 3}]) == [(1, 1), (2, 1)]
    # the document's own memory with another search context needs a new vector
    assert known([{**scope, "uri": "kb:a", "texts": ["Known text.", "Other text."],
                   "contexts": ["kb:a", "changed"]}]) == [(1, 1)]
    # the one-document form agrees
    assert [r[0] for r in raw.execute(
        "SELECT memdb.known_chunks('t', %s, %s, %s, %s)",
        (Jsonb({**scope, "uri": "kb:a"}), ["Known text.", "Other text."], ["kb:a", "changed"],
         sid)).fetchall()] == [1]


def test_known_chunks_batch_probes_by_index_under_row_level_security(raw):
    """As the application role (row-level security on), the probe of each chunk reads a
    few pages, not the tenant's memories: a condition calling a function that is not
    leakproof would only be a filter on a scan of them."""
    sid = space(raw)
    rows = [{"tenant": "t", "subject": "kb", "content": f"memory number {i}"}
            for i in range(1500)]
    raw.execute("SELECT count(*) FROM memdb.add_memories(%s, %s, %s)",
                (Jsonb(rows), [vec(r["content"]) for r in rows], sid))
    raw.execute("ANALYZE memdb.memories")
    texts = [f"memory number {i}" for i in range(0, 1500, 150)]
    docs = Jsonb([{"uri": "kb:x", "subject": "kb", "scope": "user", "texts": texts,
                   "contexts": [None] * len(texts)}])
    with raw.transaction():
        raw.execute("SELECT set_config('role', 'memdb_app', true), "
                    "set_config('memdb.tenant', 't', true)")
        plan = raw.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "
                           "SELECT * FROM memdb.known_chunks_batch('t', %s, %s)",
                           (docs, sid)).fetchone()[0][0]["Plan"]
        assert plan["Actual Rows"] == len(texts)
        assert plan["Shared Hit Blocks"] + plan["Shared Read Blocks"] < 40 * len(texts)
