"""Scanned PDFs: a page without a text layer is read by OCR (memdb.write.perceive's engine,
RapidOCR)
when documents are ingested, so its text is found by search and cited by its page. The PDF is
made by the test: a page with a text layer (tests/test_ingest.py's minimal PDF writer) and two
image-only pages drawn with Pillow (English, Chinese), joined by pypdf."""

from __future__ import annotations

import io
from bisect import bisect_right

import pytest
from PIL import Image
from pypdf import PdfReader, PdfWriter

from tests.image_factory import text_image
from tests.test_ingest import _minimal_pdf

EN = "Invoice total 4280 dollars\nPayment is due on the third of March"
ZH = "会议改到星期四下午三点\n地点在三楼的大会议室请准时参加"


def scanned_pdf() -> bytes:
    """Page 1: a text layer; pages 2 and 3: images only (a scan), English then Chinese."""
    scans = [Image.open(io.BytesIO(text_image(EN, size=36))),
             Image.open(io.BytesIO(text_image(ZH, lang="zh", size=28)))]
    buf = io.BytesIO()
    scans[0].save(buf, "PDF", save_all=True, append_images=scans[1:])
    writer = PdfWriter()
    for part in (_minimal_pdf(["The pump must be serviced every 500 hours."], "Pump"),
                 buf.getvalue()):
        for page in PdfReader(io.BytesIO(part)).pages:
            writer.add_page(page)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.fixture(scope="module")
def pdf() -> bytes:
    data = scanned_pdf()
    assert [p.extract_text().strip() for p in PdfReader(io.BytesIO(data)).pages][1:] == ["", ""]
    return data


def test_scanned_pages_are_read_by_ocr_and_cited_by_page(store, tmp_path, pdf, monkeypatch):
    monkeypatch.delenv("MEMDB_OCR", raising=False)
    (tmp_path / "scan.pdf").write_bytes(pdf)
    report = store.documents.ingest([tmp_path], chunk_tokens=16, overlap=0)
    assert [f.status for f in report.files] == ["created"], report.files
    doc = store.documents.list()[0]
    meta = doc.metadata
    assert meta["pages"] == 3 and meta["ocr_pages"] == [2, 3]
    assert meta["ocr_engine"] == "rapidocr" and "ocr_skipped" not in meta
    for query, page in (("pump serviced 500 hours", 1), ("invoice total 4280", 2),
                        ("星期四下午的会议", 3), ("4280", 2)):
        hits = store.documents.search(query, k=1)
        assert hits, query
        cite = hits[0].citation
        assert bisect_right(meta["page_starts"], cite.char_start) == page, (query, cite)
    assert "会议改到星期四下午三点" in store.documents.search("星期四", k=1)[0].hit.memory.content


def test_without_ocr_scanned_pages_are_noted_not_guessed(store, tmp_path, pdf, monkeypatch):
    monkeypatch.setenv("MEMDB_OCR", "none")
    (tmp_path / "scan.pdf").write_bytes(pdf)
    report = store.documents.ingest([tmp_path])
    assert [f.status for f in report.files] == ["created"]
    meta = store.documents.list()[0].metadata
    assert "ocr_pages" not in meta
    assert meta["ocr_skipped"] == {"2": "OCR turned off (MEMDB_OCR=none)",
                                   "3": "OCR turned off (MEMDB_OCR=none)"}
    assert not store.documents.search("4280", k=1, routes=("bm25",))
