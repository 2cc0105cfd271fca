"""Ingestion end to end on the real embedded PostgreSQL: formats, idempotent re-ingest,
atomic replacement under a concurrent reader, prune, per-file errors, row-level security,
dedup of identical chunks, parent/child retrieval and citations.

Most tests use a deterministic hashing embedder (so they are fast and can count exactly
which chunks were embedded); the search-quality tests use the bundled model."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path

import numpy as np
import psycopg
import pytest

from memdb import Forbidden, InvalidInput, MemoryStore
from memdb.core.migrations import has_citus
from memdb.write.ingest import TextSource

EN_DOC = """# Deployment guide

How we ship the billing service.

## Rolling out

Deploys happen on Fridays after the standup. The release manager tags the build and the
pipeline promotes it to staging first.

```bash
# not a heading: a comment in a code block
make release TAG=v1.2.3
```

## Rotating keys

API keys are rotated every 90 days with `vault rotate billing`. Old keys stay valid for
one day so running jobs can finish.

| key | owner | rotation |
|-----|-------|----------|
| billing | ops | 90 days |
"""

ZH_DOC = """# 部署指南

## 发布流程

每周五站会之后发布计费服务。发布经理给构建打标签，流水线先把它推到预发布环境！确认无误后再上线生产环境。

## 密钥轮换

API 密钥每九十天轮换一次。旧密钥保留一天，让正在运行的任务可以结束？是的。
"""


class HashEmbedder:
    """Deterministic unit vectors from a text's hash; counts what it embeds."""

    model = "test-hash-384"
    dims = 384

    def __init__(self) -> None:
        self.calls = 0
        self.texts: list[str] = []
        self.fail_on: str | None = None
        self.failures_left = 0

    def _vec(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dims).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_passages(self, texts):
        self.calls += 1
        if self.failures_left > 0:
            self.failures_left -= 1
            raise ConnectionError("embedding service unavailable")
        if self.fail_on is not None and any(self.fail_on in t for t in texts):
            raise ConnectionError("the provider refuses this text")
        self.texts.extend(texts)
        return np.vstack([self._vec(t) for t in texts]) if texts else np.empty((0, self.dims))

    embed_queries = embed_passages


@pytest.fixture
def hstore(fresh_db):
    with MemoryStore(fresh_db, embedder=HashEmbedder()) as s:
        yield s


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "zh").mkdir(parents=True)
    (root / "deploy.md").write_text(EN_DOC, encoding="utf-8")
    (root / "zh" / "部署.md").write_text(ZH_DOC, encoding="utf-8")
    (root / "notes.txt").write_text("Plain notes.\n\nThe cafeteria closes at 3 pm.\n",
                                    encoding="utf-8")
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")  # unsupported: skipped
    (root / ".hidden.md").write_text("# secret\n\nhidden file", encoding="utf-8")
    return root


def _counts(raw: psycopg.Connection) -> tuple[int, int, int, int]:
    return raw.execute("""SELECT (SELECT count(*) FROM memdb.memories),
                                 (SELECT count(*) FROM memdb.memory_history),
                                 (SELECT count(*) FROM memdb.documents),
                                 (SELECT count(*) FROM memdb.document_chunks)""").fetchone()


def test_ingest_folder_writes_documents_and_chunk_memories(hstore, docs, raw):
    report = hstore.documents.ingest([docs])
    assert report.counts == {"created": 3}, report.to_dict()
    uris = {d.uri for d in hstore.documents.list()}
    assert uris == {f"file://{docs}/deploy.md", f"file://{docs}/zh/部署.md",
                    f"file://{docs}/notes.txt"}
    doc = next(d for d in hstore.documents.list() if d.uri.endswith("deploy.md"))
    assert (doc.title, doc.format, doc.version) == ("Deployment guide", "markdown", 1)
    assert doc.content_hash == hashlib.sha256(EN_DOC.encode()).hexdigest()
    assert doc.size == len(EN_DOC.encode())
    rows = raw.execute("""
        SELECT m.kind, m.category, m.source_type, m.source_id, m.content, m.metadata,
               c.position, c.char_start, c.char_end, c.heading_path, d.content AS text
        FROM memdb.document_chunks c
        JOIN memdb.memories m ON m.tenant = c.tenant AND m.id = c.memory_id
        JOIN memdb.documents d ON d.tenant = c.tenant AND d.id = c.document_id
        WHERE d.uri = %s ORDER BY c.position""", (doc.uri,)).fetchall()
    assert len(rows) == doc.chunk_count >= 3
    for kind, category, source_type, source_id, content, meta, pos, start, end, path, text \
            in rows:
        assert (kind, category, source_type) == ("semantic", "general", "document")
        assert source_id == f"{doc.id}#{pos}"
        assert text[start:end] == content  # offsets are exact provenance
        assert meta["document_uri"] == doc.uri and meta["char_start"] == start
        assert path[0] == "Deployment guide"
    assert [r[9] for r in rows][-1] == ["Deployment guide", "Rotating keys"]
    code = next(r for r in rows if "make release" in r[4])
    assert "```bash" in code[4] and code[4].count("```") == 2  # the fence stays whole


def test_reingest_unchanged_writes_nothing(hstore, docs, raw):
    hstore.documents.ingest([docs])
    before = _counts(raw)
    embedded = len(hstore.embedder.texts)
    report = hstore.documents.ingest([docs])
    assert report.counts == {"unchanged": 3}
    assert _counts(raw) == before
    assert len(hstore.embedder.texts) == embedded  # nothing embedded either
    assert raw.execute("SELECT max(version) FROM memdb.documents").fetchone()[0] == 1


def test_changed_file_replaces_its_chunks_and_reuses_unchanged_ones(hstore, docs, raw):
    hstore.documents.ingest([docs])
    path = docs / "deploy.md"
    old_ids = {r[0] for r in raw.execute(
        "SELECT memory_id FROM memdb.document_chunks c JOIN memdb.documents d "
        "ON d.tenant = c.tenant AND d.id = c.document_id WHERE d.uri = %s", (f"file://{path}",))}
    embedded = len(hstore.embedder.texts)
    path.write_text(EN_DOC.replace("every 90 days", "every 30 days"), encoding="utf-8")
    report = hstore.documents.ingest([docs])
    assert report.counts == {"updated": 1, "unchanged": 2}
    result = next(f for f in report.files if f.status == "updated")
    assert result.version == 2 and result.created == 1 and result.removed == 1
    assert len(hstore.embedder.texts) == embedded + 1  # only the changed chunk is embedded
    rows = raw.execute("""SELECT m.id, m.content FROM memdb.document_chunks c
                          JOIN memdb.memories m ON m.tenant = c.tenant AND m.id = c.memory_id
                          JOIN memdb.documents d ON d.tenant = c.tenant AND d.id = c.document_id
                          WHERE d.uri = %s""", (f"file://{path}",)).fetchall()
    assert not any("every 90 days" in c for _, c in rows)
    assert any("every 30 days" in c for _, c in rows)
    assert len(old_ids & {i for i, _ in rows}) == len(rows) - 1
    # the replaced memory is gone, not orphaned
    assert raw.execute("SELECT count(*) FROM memdb.memories WHERE content LIKE %s",
                       ("%every 90 days%",)).fetchone()[0] == 0
    assert raw.execute("SELECT count(*) FROM memdb.memories m WHERE m.source_type = 'document' "
                       "AND NOT EXISTS (SELECT 1 FROM memdb.document_chunks c "
                       "WHERE c.tenant = m.tenant AND c.memory_id = m.id)").fetchone()[0] == 0


def test_changed_options_rechunk(hstore, docs):
    hstore.documents.ingest([docs])
    report = hstore.documents.ingest([docs], chunk_tokens=32, overlap=8)
    assert report.counts == {"updated": 3}
    assert hstore.documents.ingest([docs], chunk_tokens=32, overlap=8).counts == {"unchanged": 3}


def test_prune_removes_deleted_files_with_their_chunks(hstore, docs, raw):
    hstore.documents.ingest([docs])
    (docs / "notes.txt").unlink()
    dry = hstore.documents.ingest([docs], prune=True, dry_run=True)
    assert [p.uri for p in dry.pruned] == [f"file://{docs}/notes.txt"]
    assert raw.execute("SELECT count(*) FROM memdb.documents").fetchone()[0] == 3
    report = hstore.documents.ingest([docs], prune=True)
    assert [p.uri for p in report.pruned] == [f"file://{docs}/notes.txt"]
    assert raw.execute("SELECT count(*) FROM memdb.memories WHERE content LIKE '%cafeteria%'"
                       ).fetchone()[0] == 0
    assert {d.uri for d in hstore.documents.list()} == {f"file://{docs}/deploy.md",
                                                   f"file://{docs}/zh/部署.md"}
    ops = raw.execute("SELECT op FROM memdb.memory_history h JOIN memdb.memories m "
                      "ON false UNION ALL SELECT op FROM memdb.memory_history "
                      "WHERE op = 'delete'").fetchall()
    assert ops  # the deletion is in the history


def test_prune_keeps_sibling_folders_and_needs_a_folder(hstore, tmp_path):
    a, b = tmp_path / "docs", tmp_path / "docs2"
    a.mkdir()
    b.mkdir()
    (a / "x.md").write_text("# X\n\nalpha", encoding="utf-8")
    (b / "y.md").write_text("# Y\n\nbeta", encoding="utf-8")
    hstore.documents.ingest([a, b])
    assert hstore.documents.ingest([a], prune=True).pruned == []  # docs2/ is not under docs/
    with pytest.raises(InvalidInput):
        hstore.documents.ingest([a / "x.md"], prune=True)


def test_remove_document(hstore, docs, raw):
    hstore.documents.ingest([docs])
    assert hstore.documents.remove(f"file://{docs}/notes.txt") == 1
    assert hstore.documents.remove(f"file://{docs}/notes.txt") == 0
    assert raw.execute("SELECT count(*) FROM memdb.memories WHERE content LIKE '%cafeteria%'"
                       ).fetchone()[0] == 0


def test_raw_text_with_document_id(hstore, raw):
    report = hstore.documents.ingest([TextSource("kb:faq-1", "# FAQ\n\n退货政策：七天无理由退货。",
                                                 metadata={"lang": "zh"})])
    assert report.counts == {"created": 1}
    doc = hstore.documents.list()[0]
    assert (doc.uri, doc.title, doc.metadata) == ("kb:faq-1", "kb:faq-1", {"lang": "zh"}) or \
        (doc.uri, doc.metadata) == ("kb:faq-1", {"lang": "zh"})
    assert hstore.documents.ingest([{"id": "kb:faq-1",
                                     "text": "# FAQ\n\n退货政策：七天无理由退货。",
                                     "metadata": {"lang": "zh"}}]).counts == {"unchanged": 1}
    assert hstore.documents.ingest([{"id": "kb:faq-1",
                                     "text": "# FAQ\n\n退货政策：十四天无理由退货。",
                                     "metadata": {"lang": "zh"}}]).counts == {"updated": 1}
    with pytest.raises(InvalidInput):
        TextSource("", "text")


def test_identical_chunks_are_stored_once_and_survive_removal_of_one_owner(hstore, raw):
    boiler = "## Legal\n\nCopyright 2026 Example Corp. All rights reserved. Internal use only."
    hstore.documents.ingest([
        TextSource("a", f"# A\n\nalpha text here.\n\n{boiler}"),
        TextSource("b", f"# B\n\nbeta text here.\n\n{boiler}\n\n## Other\n\nmore.\n\n{boiler}")])
    rows = raw.execute("SELECT count(*) FROM memdb.memories WHERE content = %s",
                       (boiler,)).fetchone()
    assert rows[0] == 1  # one memory, three chunk-map rows point at it
    assert raw.execute("SELECT count(*) FROM memdb.document_chunks c JOIN memdb.memories m "
                       "ON m.tenant = c.tenant AND m.id = c.memory_id WHERE m.content = %s",
                       (boiler,)).fetchone()[0] == 3
    owner = raw.execute("SELECT d.uri FROM memdb.memories m JOIN memdb.documents d "
                        "ON d.tenant = m.tenant AND d.id = m.document_id WHERE m.content = %s",
                        (boiler,)).fetchone()[0]
    hstore.documents.remove(owner)
    survivor = raw.execute("SELECT d.uri, m.source_id, m.metadata->>'document_uri' "
                           "FROM memdb.memories m JOIN memdb.documents d "
                           "ON d.tenant = m.tenant AND d.id = m.document_id WHERE m.content = %s",
                           (boiler,)).fetchone()
    assert survivor is not None and survivor[0] != owner and survivor[2] == survivor[0]
    assert survivor[1].startswith(
        str(raw.execute("SELECT id FROM memdb.documents WHERE uri = %s",
                        (survivor[0],)).fetchone()[0]))


def test_chunk_equal_to_a_user_memory_links_to_it_and_prune_keeps_it(hstore, raw):
    fact = "The office wifi password is changed every Monday."
    mid = hstore.add(fact, source_id="chat-3#1").id
    hstore.documents.ingest([TextSource("kb:it", fact, format="text")])
    linked = raw.execute("SELECT memory_id FROM memdb.document_chunks").fetchall()
    assert [r[0] for r in linked] == [mid]
    hstore.documents.remove("kb:it")
    assert hstore.get(mid).content == fact


def test_per_file_errors_do_not_stop_the_run(hstore, tmp_path, raw):
    root = tmp_path / "bad"
    root.mkdir()
    (root / "good.md").write_text("# Good\n\nThis one is fine.", encoding="utf-8")
    (root / "binary.txt").write_bytes(b"\x00\x01\x02garbage\x00" * 100)
    (root / "empty.md").write_text("", encoding="utf-8")
    (root / "blank.txt").write_text("  \n\n \t\n", encoding="utf-8")
    (root / "huge.txt").write_text("word " * 5000, encoding="utf-8")
    (root / "gbk.txt").write_bytes("中文文件，用GBK编码保存。\n\n第二段内容。".encode("gbk"))
    (root / "latin1.txt").write_bytes("caf\xe9 cr\xe8me br\xfbl\xe9e \xff\xfe".encode("latin-1"))
    os.symlink(root / "loop.md", root / "loop.md")
    os.symlink(root, root / "sub")  # a folder symlink back to its parent
    unreadable = root / "secret.md"
    unreadable.write_text("# no access", encoding="utf-8")
    unreadable.chmod(0)
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\n\nnot allowed", encoding="utf-8")
    os.symlink(outside, root / "escape.md")
    report = hstore.documents.ingest([root, root / "missing.md"], root=str(root), max_bytes=10_000,
                                     include=["*.md", "*.txt"])
    by_name = {f.uri.rsplit("/", 1)[-1]: f for f in report.files}
    assert by_name["good.md"].status == "created"
    assert by_name["gbk.txt"].status == "created" and by_name["gbk.txt"].encoding == "gb18030"
    kinds = {name: f.error_kind for name, f in by_name.items() if f.status == "error"}
    assert kinds["binary.txt"] == "binary"
    assert kinds["empty.md"] == "empty" and kinds["blank.txt"] == "empty"
    assert kinds["huge.txt"] == "too_large"
    assert kinds["loop.md"] == "symlink_loop"
    assert kinds["sub"] == "symlink_loop"
    assert kinds["escape.md"] == "outside_root"
    assert kinds["missing.md"] == "not_found"
    if os.geteuid() != 0:
        assert kinds["secret.md"] == "unreadable"
    assert by_name["latin1.txt"].status in ("created", "error")  # detected, or reported
    if by_name["latin1.txt"].status == "error":
        assert by_name["latin1.txt"].error_kind == "encoding"
    zh = raw.execute("SELECT content FROM memdb.documents WHERE uri LIKE '%gbk.txt'").fetchone()
    assert zh[0].startswith("中文文件")
    outside_root = hstore.documents.ingest([outside], root=str(root))
    assert outside_root.files[0].error_kind == "outside_root"
    unreadable.chmod(0o644)


def test_embedding_failures_are_retried_then_reported_per_file(hstore, tmp_path):
    emb = hstore.embedder
    emb.failures_left = 2  # transient: the batch succeeds on the third attempt
    (tmp_path / "a.md").write_text("# A\n\nfirst document", encoding="utf-8")
    (tmp_path / "b.md").write_text("# B\n\nsecond document POISON", encoding="utf-8")
    (tmp_path / "c.md").write_text("# C\n\nthird document", encoding="utf-8")
    report = hstore.documents.ingest([tmp_path / "a.md"])
    assert report.counts == {"created": 1} and emb.calls == 3
    emb.fail_on = "POISON"
    report = hstore.documents.ingest([tmp_path])
    by_name = {f.uri.rsplit("/", 1)[-1]: f for f in report.files}
    assert by_name["b.md"].status == "error" and by_name["b.md"].error_kind == "embedding"
    assert by_name["c.md"].status == "created" and by_name["a.md"].status == "unchanged"
    emb.fail_on = None
    assert hstore.documents.ingest([tmp_path]).counts == {"created": 1, "unchanged": 2}


def test_dry_run_writes_and_embeds_nothing(hstore, docs, raw):
    report = hstore.documents.ingest([docs], dry_run=True)
    assert report.counts == {"created": 3} and report.chunks > 0
    assert _counts(raw) == (0, 0, 0, 0)
    assert hstore.embedder.calls == 0


def test_category_mapping_tags_and_scope(hstore, docs, raw):
    hstore.documents.ingest([docs], category={"zh/*": "skills", "*.txt": "events"}, tags=["kb"],
                            scope="project", project_id="billing", subject="ops")
    cats = dict(raw.execute("SELECT d.format || ':' || split_part(d.uri, '/', -1), "
                            "min(m.category) FROM memdb.memories m JOIN memdb.documents d "
                            "ON d.tenant = m.tenant AND d.id = m.document_id GROUP BY 1"
                            ).fetchall())
    assert cats == {"markdown:deploy.md": "general", "markdown:部署.md": "skills",
                    "text:notes.txt": "events"}
    assert raw.execute("SELECT DISTINCT subject, scope, project_id, tags FROM memdb.memories"
                       ).fetchall() == [("ops", "project", "billing", ["kb"])]
    with pytest.raises(InvalidInput):
        hstore.documents.ingest([docs], scope="project")  # project scope needs a project_id


def test_other_tenant_and_subject_see_no_documents(fresh_db, docs, raw):
    emb = HashEmbedder()
    with MemoryStore(fresh_db, tenant="acme", embedder=emb) as acme, \
            MemoryStore(fresh_db, tenant="globex", embedder=emb) as globex:
        acme.documents.ingest([docs], subject="alice")
        assert globex.documents.list() == [] and globex.list() == []
        assert globex.documents.remove(f"file://{docs}/deploy.md") == 0
        assert globex.documents.search("billing deploy Fridays", routes=["bm25"]) == []
        assert acme.documents.search("billing deploy Fridays", routes=["bm25"])
        # the same URI in another tenant is another document
        assert globex.documents.ingest([docs]).counts == {"created": 3}
    with MemoryStore(fresh_db, tenant="acme", subject="bob", embedder=emb) as bob:
        assert bob.documents.list() == []
        with pytest.raises(Forbidden):
            bob.documents.ingest([docs], subject="alice")
        report = bob.documents.ingest([docs])  # bob's own documents: the URIs belong to alice
        assert report.counts == {"error": 3}
        assert {f.error_kind for f in report.files} == {"forbidden"}
    raw.execute("SET ROLE memdb_app")
    assert raw.execute("SELECT count(*) FROM memdb.documents").fetchone()[0] == 0
    assert raw.execute("SELECT count(*) FROM memdb.document_chunks").fetchone()[0] == 0
    raw.execute("RESET ROLE")


def test_concurrent_reader_never_sees_half_a_document(fresh_db, tmp_path):
    """A thread searches in a loop while the document is re-ingested with all chunks changed:
    every search sees only the old version's chunks or only the new one's."""
    emb = HashEmbedder()
    path = tmp_path / "big.md"

    def body(tag: str) -> str:
        return "# Big\n\n" + "\n\n".join(f"## Part {i}\n\nzebra {tag} paragraph {i} text."
                                         for i in range(40))

    path.write_text(body("old"), encoding="utf-8")
    with MemoryStore(fresh_db, embedder=emb) as writer, \
            MemoryStore(fresh_db, embedder=emb) as reader:
        writer.documents.ingest([path])
        seen: list[set[str]] = []
        stop = threading.Event()

        def read() -> None:
            while not stop.is_set():
                hits = reader.search("zebra", k=100, routes=["bm25"])
                seen.append({("old" if " old " in h.memory.content else "new")
                             for h in hits})

        thread = threading.Thread(target=read)
        thread.start()
        try:
            for n in range(6):
                path.write_text(body("new" if n % 2 == 0 else "old"), encoding="utf-8")
                report = writer.documents.ingest([path])
                assert report.counts == {"updated": 1}, report.to_dict()
                time.sleep(0.02)
        finally:
            stop.set()
            thread.join()
        assert seen and all(len(s) == 1 for s in seen), [s for s in seen if len(s) != 1]
        assert len([s for s in seen if s]) >= 1


def test_concurrent_reader_sees_each_document_of_a_batch_whole(fresh_db, tmp_path):
    """Several documents re-ingested together (one batch, one SQL call) while a thread
    searches: for every document, a search sees only its old chunks or only its new ones."""
    emb = HashEmbedder()
    folder = tmp_path / "many"
    folder.mkdir()

    def write(tag: str) -> None:
        for d in range(4):
            (folder / f"doc{d}.md").write_text(
                f"# Doc {d}\n\n" + "\n\n".join(f"## Part {i}\n\nzebra {tag} doc {d} part {i}."
                                                 for i in range(12)), encoding="utf-8")

    write("old")
    with MemoryStore(fresh_db, embedder=emb) as writer, \
            MemoryStore(fresh_db, embedder=emb) as reader:
        writer.documents.ingest([folder])
        seen: list[dict[str, set[str]]] = []
        stop = threading.Event()

        def read() -> None:
            while not stop.is_set():
                versions: dict[str, set[str]] = {}
                for h in reader.search("zebra", k=100, routes=["bm25"]):
                    versions.setdefault(h.memory.metadata["document_uri"], set()).add(
                        "old" if " old " in h.memory.content else "new")
                seen.append(versions)

        thread = threading.Thread(target=read)
        thread.start()
        try:
            for n in range(6):
                write("new" if n % 2 == 0 else "old")
                assert writer.documents.ingest([folder]).counts == {"updated": 4}
                time.sleep(0.02)
        finally:
            stop.set()
            thread.join()
        assert seen and all(len(v) == 1 for versions in seen for v in versions.values())


def _poison(raw: psycopg.Connection) -> None:
    """A trigger that makes writing any memory containing POISON fail in the database (on
    Citus it is made on the shards too, as memdb's own triggers on memories are)."""
    if has_citus(raw):
        raw.execute("SET citus.enable_unsafe_triggers = on")
    raw.execute("""CREATE FUNCTION public.poison() RETURNS trigger LANGUAGE plpgsql AS $$
                   BEGIN RAISE EXCEPTION 'poisoned chunk'; END $$""")
    raw.execute("""CREATE TRIGGER poison BEFORE INSERT OR UPDATE ON memdb.memories
                   FOR EACH ROW WHEN (NEW.content LIKE '%%POISON%%')
                   EXECUTE FUNCTION public.poison()""")


def test_a_failing_document_in_a_batch_leaves_the_others_written_and_itself_untouched(
        hstore, tmp_path, raw):
    for name in "abcd":
        (tmp_path / f"{name}.md").write_text(f"# {name}\n\nDocument {name}, first version.",
                                             encoding="utf-8")
    assert hstore.documents.ingest([tmp_path]).counts == {"created": 4}

    def chunk_map(name: str) -> list[tuple]:
        return raw.execute("SELECT d.version, c.position, c.memory_id FROM memdb.documents d "
                           "JOIN memdb.document_chunks c "
                           "ON c.tenant = d.tenant AND c.document_id = d.id "
                           "WHERE d.uri = %s ORDER BY c.position",
                           (f"file://{tmp_path}/{name}.md",)).fetchall()

    b_before = chunk_map("b")
    history = raw.execute("SELECT count(*) FROM memdb.memory_history").fetchone()[0]
    _poison(raw)
    (tmp_path / "b.md").write_text("# b\n\nDocument b, POISON version.", encoding="utf-8")
    (tmp_path / "c.md").write_text("# c\n\nDocument c, second version.", encoding="utf-8")
    (tmp_path / "e.md").write_text("# e\n\nDocument e, new.", encoding="utf-8")
    report = hstore.documents.ingest([tmp_path])
    by_name = {f.uri.rsplit("/", 1)[-1]: f for f in report.files}
    assert by_name["b.md"].status == "error" and by_name["b.md"].error_kind == "database"
    assert "poisoned chunk" in by_name["b.md"].error
    assert (by_name["c.md"].status, by_name["c.md"].version) == ("updated", 2)
    assert by_name["e.md"].status == "created"
    assert report.counts == {"error": 1, "updated": 1, "created": 1, "unchanged": 2}
    assert chunk_map("b") == b_before  # version 1, the same chunks and memories
    assert raw.execute("SELECT count(*) FROM memdb.memories WHERE content LIKE '%%POISON%%'"
                       ).fetchone()[0] == 0
    # c replaced one memory, e added one: history has exactly those rows, nothing of b's
    assert raw.execute("SELECT count(*) FROM memdb.memory_history").fetchone()[0] == history + 3
    assert {d.uri.rsplit("/", 1)[-1]: d.version for d in hstore.documents.list()} == {
        "a.md": 1, "b.md": 1, "c.md": 2, "d.md": 1, "e.md": 1}


def test_another_subjects_document_in_a_batch_is_forbidden_alone(fresh_db, docs):
    emb = HashEmbedder()
    with MemoryStore(fresh_db, embedder=emb) as alice:
        alice.documents.ingest([docs / "deploy.md"], subject="alice")
    with MemoryStore(fresh_db, subject="bob", embedder=emb) as bob:
        (docs / "bob.md").write_text("# Bob\n\nBob's own notes.", encoding="utf-8")
        report = bob.documents.ingest([docs / "deploy.md", docs / "bob.md", docs / "notes.txt"])
        assert [(f.uri.rsplit("/", 1)[-1], f.status, f.error_kind) for f in report.files] == [
            ("deploy.md", "error", "forbidden"), ("bob.md", "created", None),
            ("notes.txt", "created", None)]
        assert {d.uri.rsplit("/", 1)[-1] for d in bob.documents.list()} == {"bob.md", "notes.txt"}


def test_documents_are_written_one_sql_call_per_batch(hstore, monkeypatch):
    from memdb.write.ingest import _pipeline

    calls: list[int] = []
    original = _pipeline._Run._call

    def spy(self, conn, batch, space_id):
        calls.append(len(batch))
        return original(self, conn, batch, space_id)

    monkeypatch.setattr(_pipeline._Run, "_call", spy)
    texts = [TextSource(f"kb:{n}", f"Fact number {n} about the billing service.")
             for n in range(12)]
    assert hstore.documents.ingest(texts, embed_batch=5).counts == {"created": 12}
    assert calls == [5, 5, 2]  # one chunk each: batches of five chunks
    calls.clear()
    changed = [TextSource(t.id, t.text + " Changed.") for t in texts]
    assert hstore.documents.ingest(changed).counts == {"updated": 12}
    assert calls == [12]


def test_identical_chunks_of_one_batch_are_embedded_once(hstore, raw):
    report = hstore.documents.ingest([TextSource("kb:1", "# FAQ\n\nThe same answer twice."),
                                      TextSource("kb:2", "# FAQ\n\nThe same answer twice.")])
    assert report.counts == {"created": 2}
    assert hstore.embedder.texts == ["FAQ\n# FAQ\n\nThe same answer twice."]
    assert [f.embedded for f in report.files] == [1, 0]
    assert raw.execute("SELECT count(*) FROM memdb.memories").fetchone()[0] == 1
    assert raw.execute("SELECT count(*) FROM memdb.document_chunks").fetchone()[0] == 2


def test_progress_learns_the_number_of_files_first(hstore, docs):
    events: list[object] = []

    class Progress:
        def start(self, files: int) -> None:
            events.append(("start", files))

        def __call__(self, result) -> None:
            events.append(result.status)

    (docs / "bad.txt").write_bytes(b"\x00\x00binary\x00")
    hstore.documents.ingest([docs], progress=Progress())
    assert events[0] == ("start", 4) and sorted(events[1:]) == ["created"] * 3 + ["error"]
    events.clear()
    hstore.documents.ingest([docs],
                            progress=lambda result: events.append(result.status))  # no start
    assert sorted(events) == ["error"] + ["unchanged"] * 3


def _minimal_pdf(pages: list[str], title: str) -> bytes:
    """A small valid PDF (one Helvetica text line per page), written by hand."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", ""]
    kids = []
    for text in pages:
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
        page_no, content_no = len(objects) + 1, len(objects) + 2
        kids.append(f"{page_no} 0 R")
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                       f"/Resources << /Font << /F1 {{font}} 0 R >> >> "
                       f"/Contents {content_no} 0 R >>")
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream.decode()}\nendstream")
    font_no = len(objects) + 1
    objects.append("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    info_no = len(objects) + 1
    objects.append(f"<< /Title ({title}) >>")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    objects = [o.replace("{font}", str(font_no)) for o in objects]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{n} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info {info_no} 0 R >>\n"
            f"startxref\n{xref}\n%%EOF\n").encode()
    return bytes(out)


def test_html_and_pdf_formats(hstore, tmp_path, raw):
    (tmp_path / "page.html").write_text(
        "<html><head><meta charset='utf-8'><title>Billing &amp; keys</title></head><body>"
        "<h1>Billing</h1><p>Invoices go out on the <b>first</b> of the month.</p>"
        "<h2>密钥</h2><p>密钥每九十天轮换一次。</p><script>var x = 1;</script></body></html>",
        encoding="utf-8")
    (tmp_path / "manual.pdf").write_bytes(_minimal_pdf(
        ["The pump must be serviced every 500 hours.", "Warranty lasts two years."],
        "Pump manual"))
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not really a pdf\n")
    report = hstore.documents.ingest([tmp_path])
    by_name = {f.uri.rsplit("/", 1)[-1]: f for f in report.files}
    assert by_name["page.html"].status == "created", by_name["page.html"]
    assert by_name["manual.pdf"].status == "created", by_name["manual.pdf"]
    assert by_name["broken.pdf"].error_kind == "unreadable"
    docs = {d.uri.rsplit("/", 1)[-1]: d for d in hstore.documents.list()}
    assert (docs["page.html"].title, docs["page.html"].format) == ("Billing & keys", "html")
    assert (docs["manual.pdf"].title, docs["manual.pdf"].format) == ("Pump manual", "pdf")
    assert docs["manual.pdf"].metadata["pages"] == 2
    html_text, pdf_text = (raw.execute("SELECT content FROM memdb.documents WHERE uri LIKE %s",
                                       (f"%{n}",)).fetchone()[0]
                           for n in ("page.html", "manual.pdf"))
    assert "# Billing" in html_text and "## 密钥" in html_text and "var x" not in html_text
    assert "serviced every 500 hours" in pdf_text and "Warranty lasts two years" in pdf_text
    paths = raw.execute("SELECT DISTINCT heading_path FROM memdb.document_chunks c "
                        "JOIN memdb.documents d ON d.tenant = c.tenant AND d.id = c.document_id "
                        "WHERE d.format = 'html'").fetchall()
    assert ["Billing", "密钥"] in [p[0] for p in paths]


def test_missing_extra_is_reported_with_its_name(hstore, tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_pypdf(name, *args, **kwargs):
        if name == "pypdf" or name.startswith("pypdf."):
            raise ImportError("No module named 'pypdf'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pypdf)
    (tmp_path / "m.pdf").write_bytes(_minimal_pdf(["hello"], "t"))
    (tmp_path / "ok.md").write_text("# ok\n\nfine", encoding="utf-8")
    report = hstore.documents.ingest([tmp_path])
    by_name = {f.uri.rsplit("/", 1)[-1]: f for f in report.files}
    assert by_name["m.pdf"].error_kind == "missing_dependency"
    assert 'pip install "memdb[docs]"' in by_name["m.pdf"].error
    assert by_name["ok.md"].status == "created"


def test_search_finds_chunks_with_citations_and_parents(fresh_db, embedder, docs):
    with MemoryStore(fresh_db, embedder=embedder) as store:
        store.documents.ingest([docs], chunk_tokens=48, overlap=8, parent_tokens=512)
        hits = store.documents.search("how often are API keys rotated?", k=3)
        top = hits[0]
        assert "rotated every 90 days" in top.hit.memory.content
        cite = top.citation
        assert cite.uri == f"file://{docs}/deploy.md"
        assert cite.heading_path == ("Deployment guide", "Rotating keys")
        assert EN_DOC[cite.char_start:cite.char_end] == top.hit.memory.content
        zh = store.documents.search("密钥多久轮换一次", k=3)
        assert zh[0].citation.uri.endswith("部署.md")
        assert "九十天" in zh[0].hit.memory.content
        # parent/child: small chunks are searched, their sections come back, once each
        parents = store.documents.search("rolling out deploys on Fridays", k=2, parents=True)
        assert parents[0].parent_text is not None
        assert "## Rolling out" in parents[0].parent_text
        assert "make release" in parents[0].parent_text  # the whole section
        keys = [(p.citation.document_id, p.citation.parent_start) for p in parents]
        assert len(keys) == len(set(keys))
        # plain search sees document chunks too, with their provenance in metadata
        plain = store.search("vault rotate billing", k=1)
        assert plain[0].memory.source_type == "document"
        assert plain[0].memory.metadata["document_uri"] == cite.uri


def test_cli_ingest_documents_search_and_remove(fresh_db, docs, monkeypatch, tmp_path):
    import json as _json

    from click.testing import CliRunner

    from memdb.cli import cli

    monkeypatch.setenv("MEMDB_HOME", str(tmp_path / "home"))
    (docs / "bad.txt").write_bytes(b"\x00\x00binary\x00")

    def run(*args: str, input: str | None = None):
        return CliRunner().invoke(cli, ["--dsn", fresh_db, *args], input=input,
                                  catch_exceptions=False)

    result = run("documents", "ingest", str(docs), "--json", "--tag", "kb", "--category",
                 "*.txt=events")
    assert result.exit_code == 1  # one file failed: reported, the rest ingested
    data = _json.loads(result.stdout)
    assert data["counts"] == {"created": 3, "error": 1}
    assert data["seconds"]["embed"] >= 0 and data["chunks"] > 0
    assert "ingest" not in result.stderr  # --json: no progress bar
    result = run("documents", "ingest", str(docs), "--force", "--tag", "kb", "--category",
                 "*.txt=events")
    assert result.exit_code == 1
    assert "4/4" in result.stderr and "chunks/s" in result.stderr  # files of the total, rate
    (docs / "bad.txt").unlink()
    result = run("documents", "ingest", str(docs), "--prune", "--tag", "kb", "--category",
                 "*.txt=events")
    assert result.exit_code == 0, result.output
    assert "3 unchanged" in result.stdout  # the failed file was never stored: nothing to prune
    result = run("documents", "ingest", "-", "--id", "kb:stdin", "--json",
                 input="# 标题\n\n来自标准输入的文本。")
    assert _json.loads(result.stdout)["counts"] == {"created": 1}
    listed = _json.loads(run("documents", "list", "--json").stdout)
    assert {d["uri"] for d in listed} >= {"kb:stdin", f"file://{docs}/deploy.md"}
    text = run("documents", "list").stdout
    assert "Deployment guide" in text and "kb:stdin" in text
    hits = _json.loads(run("documents", "search", "来自标准输入", "--json").stdout)["hits"]
    assert hits[0]["citations"][0]["uri"] == "kb:stdin"
    assert _json.loads(run("documents", "remove", "kb:stdin", "--json").stdout) == {"removed": 1}
    bad = run("documents", "ingest", str(docs), "--chunk-tokens", "4")
    assert bad.exit_code == 1 and bad.stderr.startswith("error: ")


# -- special files: only regular files are read (issue 14) -------------------------------------
def _special_files(root: Path) -> dict[str, Path]:
    """A regular file, a FIFO, a symlink to the FIFO and a Unix socket, all named *.md."""
    import socket

    root.mkdir()
    (root / "good.md").write_text("# Good\n\nA regular file is read.", encoding="utf-8")
    fifo = root / "pipe.md"
    os.mkfifo(fifo)
    os.symlink(fifo, root / "link.md")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(root / "sock.md"))
    sock.close()  # the socket file stays
    return {"fifo": fifo, "link": root / "link.md", "socket": root / "sock.md"}


def _release(fifo: Path) -> None:
    """Unblock a reader stuck opening the FIFO (the old code), so the test can end."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass  # no reader waiting


def test_ingest_reports_fifo_socket_and_symlink_to_fifo_and_never_blocks(hstore, tmp_path, raw):
    root = tmp_path / "special"
    special = _special_files(root)
    box: dict[str, object] = {}

    def work() -> None:
        box["folder"] = hstore.documents.ingest(root)
        box["named"] = hstore.documents.ingest([special["fifo"], special["link"]])

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(60)
    if worker.is_alive():
        _release(special["fifo"])
        worker.join(10)
        _release(special["fifo"])
        pytest.fail("ingest blocked on a FIFO")
    by_name = {f.uri.rsplit("/", 1)[-1]: f for f in box["folder"].files}  # type: ignore[attr-defined]
    assert by_name["good.md"].status == "created"
    for name in ("pipe.md", "link.md", "sock.md"):
        assert by_name[name].status == "error", by_name[name]
        assert by_name[name].error_kind == "not_regular"
    assert "FIFO" in by_name["pipe.md"].error and "FIFO" in by_name["link.md"].error
    assert "socket" in by_name["sock.md"].error
    named = box["named"].files  # type: ignore[attr-defined]
    assert [f.error_kind for f in named] == ["not_regular", "not_regular"]
    assert raw.execute("SELECT count(*) FROM memdb.documents").fetchone()[0] == 1


def test_reading_refuses_a_file_swapped_for_a_fifo_after_discovery(tmp_path):
    """The reader itself checks the opened descriptor: a regular file replaced by a FIFO
    between discovery and reading is reported, not waited on."""
    from memdb.write.ingest._readers import FileProblem, read_regular

    fifo = tmp_path / "late.md"
    os.mkfifo(fifo)
    started = time.perf_counter()
    with pytest.raises(FileProblem) as info:
        read_regular(fifo, 1000)
    assert info.value.kind == "not_regular" and time.perf_counter() - started < 5


def test_cli_ingest_of_a_folder_with_a_fifo_returns(fresh_db, tmp_path):
    import json as _json
    import subprocess
    import sys

    root = tmp_path / "special"
    special = _special_files(root)
    env = {**os.environ, "MEMDB_HOME": str(tmp_path / "home"), "MEMDB_EMBEDDER": "local"}
    try:
        done = subprocess.run(
            [sys.executable, "-c", "from memdb.cli import main; main()", "--dsn", fresh_db,
             "documents", "ingest", str(root), "--json"],
            capture_output=True, text=True, timeout=120, env=env)
    except subprocess.TimeoutExpired:
        _release(special["fifo"])
        pytest.fail("memdb ingest blocked on a FIFO")
    assert done.returncode == 1, done.stderr  # some files failed: reported, the rest ingested
    data = _json.loads(done.stdout)
    assert data["counts"] == {"created": 1, "error": 3}
    assert {f["error_kind"] for f in data["files"] if f["status"] == "error"} == {"not_regular"}


# -- text sources name the bad field (issue 14) -------------------------------------------------
@pytest.mark.parametrize(("fields", "named"), [
    ({"id": "doc-1", "text": "hello \x00 world"}, "text source text"),
    ({"id": "doc\x002", "text": "hello"}, "text source id"),
    ({"id": "doc-3", "text": "hello", "title": "ti\x00tle"}, "text source title"),
    ({"id": "doc-4", "text": "hello", "metadata": {"k": "v\x00"}}, "text source metadata"),
    ({"id": "doc-5", "text": "lone \ud800 surrogate"}, "text source text"),
])
def test_text_source_with_nul_names_the_field_and_writes_nothing(hstore, raw, fields, named):
    before = _counts(raw)
    with pytest.raises(InvalidInput, match=named):
        TextSource(**fields)
    with pytest.raises(InvalidInput, match=named):
        hstore.documents.ingest([fields])
    assert _counts(raw) == before


def test_list_documents_offset_is_bounded(hstore):
    with pytest.raises(InvalidInput, match="2147483647"):
        hstore.documents.list(offset=2**31)
    assert hstore.documents.list(offset=2**31 - 1) == []


def test_ingested_chunks_are_created_by_the_store_actor(fresh_db, raw):
    with MemoryStore(fresh_db, embedder=HashEmbedder(), actor="indexer-1") as s:
        s.documents.ingest([TextSource("kb:actor", "# Actor\n\nChunks record who ingested them.")])
    rows = raw.execute("""SELECT m.created_by, h.actor FROM memdb.memories m
                          JOIN memdb.memory_history h
                            ON h.tenant = m.tenant AND h.memory_id = m.id""").fetchall()
    assert rows and all(r == ("indexer-1", "indexer-1") for r in rows)
