"""Office and other files written by their own libraries (never downloaded), with Chinese and
English text: the test data of tests/test_ingest_formats.py and benchmarks/ingest_formats.py.

Each writer puts one known English sentence and one known Chinese sentence where a citation
must find them (a heading, a slide, a sheet, a row...)."""

from __future__ import annotations

import csv
import json
import zipfile
from pathlib import Path

EN = {
    "docx": "The quarterly audit found the firewall rules outdated.",
    "pptx": "Revenue in the northern region doubled after the launch.",
    "xlsx": "Keyboard stock ran out in the Berlin warehouse",
    "csv": "Shipment delayed by the harbour strike",
    "epub": "The lighthouse keeper kept a diary of every storm.",
    "json": "Rotate the signing keys every ninety days",
    "xml": "The backup robot restarts at midnight",
}
ZH = {
    "docx": "年度审计发现防火墙规则已经过期。",
    "pptx": "新产品发布后华北地区收入翻倍。",
    "xlsx": "上海仓库的显示器库存不足",
    "csv": "台风导致深圳港口停运三天",
    "epub": "灯塔看守人记录了每一场暴风雨。",
    "json": "每九十天轮换一次签名密钥",
    "xml": "备份机器人在午夜重新启动",
}


def docx(path: Path, paragraphs: int = 0) -> Path:
    import docx as docx_mod

    d = docx_mod.Document()
    d.core_properties.title = "Audit report 审计报告"
    d.add_heading("Findings", level=1)
    d.add_heading("Network", level=2)
    d.add_paragraph(EN["docx"])
    d.add_heading("安全", level=2)
    d.add_paragraph(ZH["docx"])
    d.add_paragraph("Replace the rules", style="List Bullet")
    t = d.add_table(rows=2, cols=2)
    t.cell(0, 0).text, t.cell(0, 1).text = "owner", "负责人"
    t.cell(1, 0).text, t.cell(1, 1).text = "ops", "运维"
    for i in range(paragraphs):
        d.add_heading(f"Appendix {i}", level=2)
        d.add_paragraph(f"Routine paragraph number {i} about maintenance windows. " * 4)
    d.save(path)
    return path


def pptx(path: Path, slides: int = 0) -> Path:
    from pptx import Presentation
    from pptx.util import Inches

    p = Presentation()
    s = p.slides.add_slide(p.slide_layouts[0])
    s.shapes.title.text = "Quarterly review"
    s.placeholders[1].text = "Sales and operations"
    s = p.slides.add_slide(p.slide_layouts[1])
    s.shapes.title.text = "North region"
    s.placeholders[1].text = EN["pptx"]
    s.notes_slide.notes_text_frame.text = "Mention the new dealers."
    s = p.slides.add_slide(p.slide_layouts[5])
    s.shapes.title.text = "华北地区"
    box = s.shapes.add_textbox(Inches(1), Inches(2), Inches(6), Inches(1))
    box.text_frame.text = ZH["pptx"]
    rows = s.shapes.add_table(2, 2, Inches(1), Inches(4), Inches(6), Inches(1)).table
    rows.cell(0, 0).text, rows.cell(0, 1).text = "季度", "收入"
    rows.cell(1, 0).text, rows.cell(1, 1).text = "Q3", "2x"
    for i in range(slides):
        s = p.slides.add_slide(p.slide_layouts[1])
        s.shapes.title.text = f"Topic {i}"
        s.placeholders[1].text = f"Routine bullet number {i} about the roadmap."
    p.save(path)
    return path


def xlsx(path: Path, rows: int = 0) -> Path:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Inventory"
    ws.append(["item", "warehouse", "note"])
    for i in range(30):
        ws.append([f"item-{i}", "Hamburg", f"routine restock {i}"])
    ws.append(["keyboard", "Berlin", EN["xlsx"]])  # row 32
    zh = wb.create_sheet("库存")
    zh.append(["物品", "仓库", "备注"])
    zh.append(["显示器", "上海", ZH["xlsx"]])  # row 2
    for i in range(rows):
        zh.append([f"物品{i}", "广州", f"常规补货 {i}"])
    wb.save(path)
    return path


def csv_file(path: Path, rows: int = 0) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["date", "port", "event"])
        for i in range(25):
            w.writerow([f"2026-01-{i % 28 + 1:02d}", "Rotterdam", f"normal day {i}"])
        w.writerow(["2026-02-01", "Hamburg", EN["csv"]])  # row 27
        w.writerow(["2026-02-02", "深圳", ZH["csv"]])  # row 28
        for i in range(rows):
            w.writerow(["2026-03-01", "Oslo", f"filler row {i}"])
    return path


def epub(path: Path, chapters: int = 0) -> Path:
    """An EPUB 3 written with zipfile (an EPUB is a zip of XHTML and a package document)."""
    docs = [("ch1", "Harbour", EN["epub"]), ("ch2", "灯塔", ZH["epub"])]
    docs += [(f"x{i}", f"Interlude {i}", f"A quiet chapter number {i}.") for i in range(chapters)]
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        zf.writestr("META-INF/container.xml",
                    '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:'
                    'tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/'
                    'content.opf" media-type="application/oebps-package+xml"/></rootfiles>'
                    '</container>')
        items = "".join(f'<item id="{i}" href="{i}.xhtml" media-type="application/xhtml+xml"/>'
                        for i, _, _ in docs)
        spine = "".join(f'<itemref idref="{i}"/>' for i, _, _ in docs)
        zf.writestr("OEBPS/content.opf",
                    '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" '
                    'version="3.0"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
                    '<dc:title>The Keeper 看守人</dc:title></metadata>'
                    f'<manifest>{items}</manifest><spine>{spine}</spine></package>')
        for i, title, text in docs:
            zf.writestr(f"OEBPS/{i}.xhtml",
                        '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/'
                        f'1999/xhtml"><head><title>{title}</title></head><body><h1>{title}</h1>'
                        f'<p>{text}</p></body></html>')
    return path


def json_file(path: Path, items: int = 0) -> Path:
    data = {"title": "Ops handbook 运维手册",
            "security": {"keys": EN["json"], "密钥": ZH["json"]},
            "services": [{"name": "api", "owner": "team-a"}, {"name": "db", "owner": "team-b"}]
            + [{"name": f"svc-{i}", "owner": "team-c", "note": f"routine {i}"}
               for i in range(items)]}
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


def xml_file(path: Path, items: int = 0) -> Path:
    extra = "".join(f'<job id="j{i}"><note>routine job {i}</note></job>' for i in range(items))
    path.write_text('<?xml version="1.0" encoding="utf-8"?><schedule>'
                    f'<job id="backup"><note>{EN["xml"]}</note><备注>{ZH["xml"]}</备注></job>'
                    f'{extra}</schedule>', encoding="utf-8")
    return path


WRITERS = {"docx": (docx, ".docx"), "pptx": (pptx, ".pptx"), "xlsx": (xlsx, ".xlsx"),
           "csv": (csv_file, ".csv"), "epub": (epub, ".epub"), "json": (json_file, ".json"),
           "xml": (xml_file, ".xml")}


def write_all(folder: Path, stem: str = "sample", size: int = 0) -> dict[str, Path]:
    """One file per format in ``folder`` (``size`` adds that many filler units to each)."""
    folder.mkdir(parents=True, exist_ok=True)
    return {fmt: writer(folder / f"{stem}{suffix}", size)
            for fmt, (writer, suffix) in WRITERS.items()}
