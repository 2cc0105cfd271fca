"""Word, PowerPoint, Excel, CSV, EPUB, JSON and XML ingest (the ``files`` extra): every
format found by search in English and Chinese with a citation that points at its heading,
slide, sheet range or rows; formats decided by content, not suffix; hostile files (zip
bombs, malformed archives, huge sheets, lying suffixes) refused with a typed error and
nothing written. The files are written by their own libraries (tests/office_files.py)."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from memdb import MemoryStore
from tests import office_files as of
from tests.test_ingest import HashEmbedder

# where each known sentence must be cited: the heading path of its chunk
WHERE = {
    ("docx", "en"): ("Findings", "Network"), ("docx", "zh"): ("Findings", "安全"),
    ("pptx", "en"): ("Slide 2: North region",), ("pptx", "zh"): ("Slide 3: 华北地区",),
    ("xlsx", "en"): ("Inventory!A21:C32",), ("xlsx", "zh"): ("库存!A1:C2",),
    ("csv", "en"): ("rows 21–28",), ("csv", "zh"): ("rows 21–28",),
    ("epub", "en"): ("Harbour",), ("epub", "zh"): ("灯塔",),
    ("json", "en"): ("security",), ("json", "zh"): ("security",),
    ("xml", "en"): ("schedule", "job backup"), ("xml", "zh"): ("schedule", "job backup"),
}


@pytest.fixture
def hstore(fresh_db):
    with MemoryStore(fresh_db, embedder=HashEmbedder()) as s:
        yield s


def _by_name(report):
    return {f.uri.rsplit("/", 1)[-1]: f for f in report.files}


def _documents(raw) -> int:
    return raw.execute("SELECT count(*) FROM memdb.documents").fetchone()[0]


def test_every_format_is_found_in_english_and_chinese_with_its_citation(fresh_db, embedder,
                                                                       tmp_path, raw):
    paths = of.write_all(tmp_path / "kb")
    (tmp_path / "kb" / "readme.md").write_text("# Readme\n\nNothing else here.\n")
    with MemoryStore(fresh_db, embedder=embedder) as store:
        report = store.documents.ingest([tmp_path / "kb"])
        assert report.ok, report.errors
        formats = {f.uri.rsplit(".", 1)[-1]: f.format for f in report.files}
        assert formats == {"docx": "docx", "pptx": "pptx", "xlsx": "xlsx", "csv": "csv",
                           "epub": "epub", "json": "json", "xml": "xml", "md": "markdown"}
        for fmt, path in paths.items():
            for lang, sentence in (("en", of.EN[fmt]), ("zh", of.ZH[fmt])):
                hits = store.documents.search(sentence, k=3)
                top = hits[0]
                assert sentence in top.hit.memory.content, (fmt, lang, top.hit.memory.content)
                assert top.citation.uri == f"file://{path}", (fmt, lang)
                assert top.citation.heading_path == WHERE[fmt, lang], (fmt, lang)
        docs = {d.uri.rsplit(".", 1)[-1]: d for d in store.documents.list()}
    # the converted Markdown is what is stored (format markdown), the file's format kept
    assert docs["pptx"].format == "markdown"
    assert docs["pptx"].metadata["source_format"] == "pptx"
    assert docs["pptx"].metadata["slides"] == 3
    assert docs["xlsx"].metadata["sheets"] == ["Inventory", "库存"]
    assert docs["docx"].title == "Audit report 审计报告"
    assert docs["epub"].title == "The Keeper 看守人"
    content = raw.execute("SELECT content FROM memdb.documents WHERE uri LIKE '%.pptx'").fetchone()
    assert "Notes: Mention the new dealers." in content[0]  # speaker notes are text too
    assert "| 季度 | 收入 |" in content[0]  # a slide's table


def test_format_is_decided_by_content_not_suffix(hstore, tmp_path, raw):
    folder = tmp_path / "mixed"
    folder.mkdir()
    of.docx(folder / "minutes.txt")  # a Word file with a text suffix: read as Word
    of.xlsx(folder / "ledger")  # no suffix at all: picked up in a folder by its content
    of.pptx(folder / "deck.bin")  # an unknown suffix, PowerPoint content
    with zipfile.ZipFile(folder / "archive.bin", "w") as zf:  # a zip that is no document
        zf.writestr("a.txt", "not a document")
    (folder / "random.dat").write_bytes(b"\x00\x01binary")  # unknown: skipped as before
    (folder / "pdf-notes.md").write_text("# PDF\n\nFiles start with %PDF-1.7.\n")  # text
    report = hstore.documents.ingest([folder])
    files = _by_name(report)
    assert set(files) == {"minutes.txt", "ledger", "deck.bin", "pdf-notes.md"}
    assert {n: f.format for n, f in files.items()} == {
        "minutes.txt": "docx", "ledger": "xlsx", "deck.bin": "pptx", "pdf-notes.md": "markdown"}
    assert all(f.status == "created" for f in files.values())
    hit = hstore.documents.search(of.ZH["xlsx"], k=1, routes=["bm25"])[0]
    assert hit.citation.uri.endswith("/ledger")
    assert hit.citation.heading_path == ("库存!A1:C2",)
    # named directly, the archive that is not a document is refused by name
    named = _by_name(hstore.documents.ingest([folder / "archive.bin"]))
    assert named["archive.bin"].error_kind == "unsupported"


def test_a_suffix_that_lies_is_refused_and_nothing_written(hstore, tmp_path, raw):
    folder = tmp_path / "liars"
    folder.mkdir()
    (folder / "report.docx").write_text("just text pretending to be Word", encoding="utf-8")
    (folder / "slides.pptx").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    (folder / "old.xlsx").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 504)
    (folder / "book.epub").write_bytes(b"%PDF-1.4 not really")  # a PDF header: read as PDF
    report = hstore.documents.ingest([folder])
    files = _by_name(report)
    assert files["report.docx"].error_kind == "format_mismatch"
    assert "named .docx but its content is text" in files["report.docx"].error
    assert files["slides.pptx"].error_kind == "format_mismatch"
    assert "a PNG image" in files["slides.pptx"].error
    assert files["old.xlsx"].error_kind == "unsupported"
    assert "97-2003" in files["old.xlsx"].error
    assert files["book.epub"].error_kind == "unreadable"  # handled as the PDF it claims to be
    assert "broken PDF" in files["book.epub"].error
    assert _documents(raw) == 0
    assert raw.execute("SELECT count(*) FROM memdb.memories").fetchone()[0] == 0


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return out.getvalue()


def test_zip_bombs_and_broken_archives_are_refused_before_reading(hstore, tmp_path, raw,
                                                                  monkeypatch):
    from memdb.write.ingest import _sniff

    folder = tmp_path / "hostile"
    folder.mkdir()
    # a member that expands 1000 times (4 MiB of zeros in about 4 KiB)
    (folder / "bomb.docx").write_bytes(_zip({
        "[Content_Types].xml": b"<Types/>", "word/document.xml": b"\x00" * (4 << 20)}))
    (folder / "many.xlsx").write_bytes(_zip({
        "xl/workbook.xml": b"<workbook/>", **{f"xl/m{i}.xml": b"<x/>" for i in range(60)}}))
    good = of.pptx(folder / "good.pptx")
    (folder / "cut.pptx").write_bytes(good.read_bytes()[:3000])  # truncated: no directory
    (folder / "junk.docx").write_bytes(b"PK\x03\x04" + b"\x07" * 200)
    (folder / "broken.docx").write_bytes(_zip({"word/document.xml": b"<not-closed"}))
    monkeypatch.setattr(_sniff, "MAX_MEMBERS", 50)
    report = hstore.documents.ingest([folder])
    files = _by_name(report)
    assert files["bomb.docx"].error_kind == "unsafe"
    assert "expands 1" in files["bomb.docx"].error and "zip bomb" in files["bomb.docx"].error
    assert files["many.xlsx"].error_kind == "unsafe"
    assert "61 zip members" in files["many.xlsx"].error
    assert files["cut.pptx"].error_kind == "malformed"
    assert files["junk.docx"].error_kind == "malformed"
    assert files["broken.docx"].error_kind == "malformed"
    assert files["good.pptx"].status == "created"  # one bad file never stops the run
    assert _documents(raw) == 1
    # the total uncompressed size is bounded too
    monkeypatch.setattr(_sniff, "MAX_UNPACKED", 1000)
    big = _by_name(hstore.documents.ingest([folder / "good.pptx"], force=True))
    assert big["good.pptx"].error_kind == "unsafe" and "would unpack to" in big["good.pptx"].error


def test_huge_sheets_and_csv_are_bounded(hstore, tmp_path, raw, monkeypatch):
    import openpyxl

    from memdb.write.ingest import _office, _tabular

    wb = openpyxl.Workbook(write_only=True)
    ws = wb.create_sheet("big")
    for i in range(200):
        ws.append([f"r{i}c{j}" for j in range(10)])
    wb.save(tmp_path / "big.xlsx")
    with open(tmp_path / "big.csv", "w", encoding="utf-8") as fh:
        fh.write("\n".join(",".join(["x"] * 10) for _ in range(200)))
    monkeypatch.setattr(_office, "MAX_CELLS", 1000)
    monkeypatch.setattr(_tabular, "MAX_CELLS", 1000)
    files = _by_name(hstore.documents.ingest([tmp_path / "big.xlsx", tmp_path / "big.csv"]))
    assert files["big.xlsx"].error_kind == "too_large"
    assert "more than 1000 cells" in files["big.xlsx"].error
    assert files["big.csv"].error_kind == "too_large"
    assert _documents(raw) == 0


def test_xml_entities_are_refused_and_bad_json_reported(hstore, tmp_path, raw):
    (tmp_path / "laughs.xml").write_text(
        '<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><l>&b;</l>', encoding="utf-8")
    (tmp_path / "bad.json").write_text('{"a": [1, 2', encoding="utf-8")
    (tmp_path / "events.jsonl").write_text('{"event": "发布"}\n{"event": "rollback"}\n',
                                           encoding="utf-8")
    files = _by_name(hstore.documents.ingest([tmp_path]))
    assert files["laughs.xml"].error_kind == "unsafe"
    assert files["bad.json"].error_kind == "malformed" and "invalid JSON" in files["bad.json"].error
    assert files["events.jsonl"].status == "created"
    hit = hstore.documents.search("发布", k=1, routes=["bm25"])[0]
    assert hit.citation.heading_path == ("line 1",)
    assert _documents(raw) == 1


def test_missing_extra_is_named(hstore, tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_docx(name, *args, **kwargs):
        if name in ("docx", "openpyxl") or name.startswith(("docx.", "openpyxl.")):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    of.docx(tmp_path / "a.docx")
    of.xlsx(tmp_path / "b.xlsx")
    monkeypatch.setattr(builtins, "__import__", no_docx)
    files = _by_name(hstore.documents.ingest([tmp_path]))
    for name in ("a.docx", "b.xlsx"):
        assert files[name].error_kind == "missing_dependency"
        assert 'pip install "memdb[files]"' in files[name].error


def test_cli_ingests_office_files_and_cites_the_slide(fresh_db, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from memdb.cli import cli

    monkeypatch.setenv("MEMDB_HOME", str(tmp_path / "home"))
    of.pptx(tmp_path / "kb" / "deck.pptx") if (tmp_path / "kb").mkdir() is None else None
    of.xlsx(tmp_path / "kb" / "stock.xlsx")

    def run(*args: str):
        return CliRunner().invoke(cli, ["--dsn", fresh_db, *args], catch_exceptions=False)

    result = run("documents", "ingest", str(tmp_path / "kb"), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["counts"] == {"created": 2}
    assert sorted(f["format"] for f in data["files"]) == ["pptx", "xlsx"]
    hits = json.loads(run("documents", "search", of.EN["pptx"], "--json").stdout)["hits"]
    assert hits[0]["citations"][0]["heading_path"] == ["Slide 2: North region"]
    hits = json.loads(run("documents", "search", of.ZH["xlsx"], "--json").stdout)["hits"]
    assert hits[0]["citations"][0]["heading_path"] == ["库存!A1:C2"]


def test_text_sources_in_csv_json_and_xml_are_converted(hstore, raw):
    from memdb.write.ingest import TextSource

    csv_text = "city,note\nBerlin,the office moves in May\n上海,办公室五月搬迁\n"
    sources = [TextSource("kb:offices", csv_text, format="csv", metadata={"lang": "mixed"}),
               TextSource("kb:ops", json.dumps({
                   "oncall": {"primary": "Ana 安娜"},
                   "staff": [{"name": "Li 李", "duty": "数据库值班"},  # records: a table
                             {"name": "Bo", "duty": "network on-call", "pager": True}]}),
                   format="json"),
               TextSource("kb:feed", "<feed><entry id='e1'><t>deploy freeze</t></entry></feed>",
                          format="xml")]
    report = hstore.documents.ingest(sources)
    assert report.counts == {"created": 3}
    assert [f.format for f in report.files] == ["csv", "json", "xml"]
    for query, uri, where in (("办公室五月搬迁", "kb:offices", ("rows 1–3",)),
                              ("Ana 安娜", "kb:ops", ("oncall",)),
                              ("数据库值班", "kb:ops", ("staff", "staff[0–1]")),
                              ("deploy freeze", "kb:feed", ("feed", "entry e1"))):
        hit = hstore.documents.search(query, k=1, routes=["bm25"])[0]
        assert (hit.citation.uri, hit.citation.heading_path) == (uri, where)
    assert hstore.documents.ingest(sources).counts == {"unchanged": 3}  # idempotent
    meta = raw.execute("SELECT metadata FROM memdb.documents WHERE uri = 'kb:offices'").fetchone()
    assert meta[0] == {"lang": "mixed", "source_format": "csv"}


def test_body_text_never_becomes_a_heading(tmp_path):
    import docx

    from memdb.write.ingest import chunk_text
    from memdb.write.ingest._formats import extract

    d = docx.Document()
    d.add_heading("Plan 计划", level=1)
    d.add_paragraph("# 1 priority: 安全 first")
    d.add_paragraph("```not code")
    d.save(tmp_path / "plan.docx")
    text = extract((tmp_path / "plan.docx").read_bytes(), "docx", "plan.docx").text
    chunks = chunk_text(text, markdown=True)
    assert chunks and all(c.heading_path == ("Plan 计划",) for c in chunks)
    assert "priority: 安全 first" in text
