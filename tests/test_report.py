"""memdb report (memdb/report/): the figures equal SQL counts computed here independently, the
PNGs are real images, the HTML is self-contained and renders in headless Chromium."""

from __future__ import annotations

import base64
import json
import re
import shutil
import struct
import subprocess
import sys
import warnings
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdb import MemoryStore
from memdb.cli import cli
from memdb.core.errors import InvalidInput, MissingDependency
from memdb.report import write_report

pytest.importorskip("matplotlib")
pytestmark = pytest.mark.filterwarnings("error:.*[Gg]lyph.*missing:UserWarning")

NOW = datetime.now(UTC)


def _seed(store: MemoryStore, other: MemoryStore) -> None:
    """Memories of several kinds, categories, ages and subjects; some expiring, some
    superseded; a few recalls for traces; another tenant's rows that must not count."""
    rows = [
        ("我喜欢喝乌龙茶", "u1", "semantic", "preferences", 0, None),
        ("I prefer window seats on planes", "u1", "semantic", "preferences", 3, None),
        ("张伟住在杭州", "u1", "semantic", "entities", 12, None),
        ("Met Alice at the conference", "u2", "episodic", "events", 40, 6.9),
        ("会议记录：周五发布", "u2", "episodic", "events", 100, 29.5),
        ("Run tests with pytest -q", "u2", "procedural", "skills", 400, 364),
        ("Scratch note for this session", "u1", "working", "general", 0, 2),
        ("草稿：明天再看", "u1", "working", "general", 1, 400),
    ]
    ids = []
    for content, subject, kind, category, age_days, ttl_days in rows:
        fields = {"subject": subject, "kind": kind, "category": category,
                  "created_at": NOW - timedelta(days=age_days)}
        if ttl_days is not None:
            fields["expires_at"] = NOW + timedelta(days=ttl_days)
        ids.append(store.add(content, **fields).id)
    for _ in range(10):  # the newest, used ten times: hot (1.5 at most)
        store.mark_used(ids[:1])
    store.mark_used(ids[3:4])
    # supersessions: a newer value of the same key replaces the older one
    store.add("张伟住在杭州市", subject="u1", category="entities", norm_key="city")
    store.add("张伟住在上海", subject="u1", category="entities", norm_key="city")
    store.add("Favourite colour: blue", subject="u2", category="preferences", norm_key="colour")
    store.add("Favourite colour: green", subject="u2", category="preferences", norm_key="colour")
    for q in ("我喜欢喝什么茶？", "where does Zhang Wei live", "what did I do at the conference",
              "zzzz qqqq"):
        store.recall(q, subject="u1" if "茶" in q else None)
    other.add("another tenant's memory", subject="u1", kind="episodic", category="events",
              expires_at=NOW + timedelta(days=3))
    other.recall("another tenant's memory")


def _one(raw, sql: str, *args):
    return raw.execute(sql, args).fetchone()


def _table(html: str, name: str) -> dict[str, list[str]]:
    """{row label: [cells]} of the report's table t-NAME."""
    body = re.search(rf'<table id="t-{name}">.*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    return {m.group(1): re.findall(r"<td>(.*?)</td>", m.group(2))
            for m in re.finditer(r"<tr><th>(.*?)</th>(.*?)</tr>", body)}


def _png_pixels_vary(png: bytes) -> bool:
    """Decode enough of an 8-bit RGBA/RGB PNG to tell whether its pixels differ."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height, depth, ctype = struct.unpack(">IIBB", png[16:26])
    data, pos = b"", 8
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        if kind == b"IDAT":
            data += png[pos + 8:pos + 8 + length]
        pos += 12 + length
    raw = zlib.decompress(data)
    assert width > 100 and height > 100 and depth == 8
    # distinct byte values in the first rows (filter bytes included): a blank image has ~2
    return len(set(raw[: len(raw) // 2])) > 20


@pytest.fixture
def seeded(store: MemoryStore, fresh_db: str, embedder) -> MemoryStore:
    with MemoryStore(fresh_db, embedder=embedder, gate=None, tenant="other") as other:
        _seed(store, other)
    return store


def test_report_figures_match_sql(seeded: MemoryStore, raw, tmp_path: Path) -> None:
    result = write_report(seeded, tmp_path / "r")
    data, html = result.data, result.html.read_text(encoding="utf-8")
    t = "default"
    cur = "tenant = %s AND valid_to IS NULL"
    # totals and kind x category
    assert data["totals"]["current"] == _one(
        raw, f"SELECT count(*) FROM memdb.memories WHERE {cur}", t)[0]
    superseded = _one(raw, "SELECT count(*) FROM memdb.memories WHERE tenant = %s "
                           "AND superseded_by IS NOT NULL", t)[0]
    assert superseded == 2 and data["totals"]["superseded"] == superseded
    for kind, category, n in raw.execute(f"SELECT kind, category, count(*) FROM memdb.memories "
                                         f"WHERE {cur} GROUP BY 1, 2", (t,)):
        assert {"kind": kind, "category": category, "n": n} in data["kind_category"]
    assert len(data["kind_category"]) == _one(
        raw, f"SELECT count(DISTINCT (kind, category)) FROM memdb.memories WHERE {cur}", t)[0]
    kc = _table(html, "kind_category")
    assert kc["episodic"][-1] == str(_one(raw, f"SELECT count(*) FROM memdb.memories WHERE {cur} "
                                               "AND kind = 'episodic'", t)[0]) == "2"
    # age buckets
    ages = [r[0] for r in raw.execute(
        f"SELECT now() - created_at FROM memdb.memories WHERE {cur}", (t,))]
    edges = [timedelta(days=d) for d in (1, 7, 30, 90, 365)]
    expect = [sum(1 for a in ages if (i == 0 or a >= edges[i - 1]) and (i == 5 or a < edges[i]))
              for i in range(6)]
    assert [b["n"] for b in data["age"]] == expect
    assert [c[0] for c in _table(html, "age").values()] == [str(n) for n in expect]
    # hotness, as memdb.hotness defines it, binned in Python (0.1 wide from 0.3)
    hot = [0] * 12
    for age, uses in raw.execute(
            "SELECT extract(epoch FROM now() - m.created_at) / 86400.0, u.use_count "
            "FROM memdb.memories m LEFT JOIN memdb.memory_usage u ON u.memory_id = m.id "
            f"AND u.subject = m.subject WHERE m.{cur}", (t,)):
        h = (1 + min(0.5, 0.05 * (uses or 0))) * max(0.3, 1 - float(age) / 365)
        hot[min(int((h - 0.3) / 0.1 + 1e-9), 11)] += 1
    assert [b["n"] for b in data["hotness"]] == hot and sum(hot) == len(ages)
    assert hot[-1] == 1  # the memory used ten times
    # expiry horizon
    exp = [r[0] for r in raw.execute(f"SELECT expires_at - now() FROM memdb.memories WHERE {cur} "
                                     "AND expires_at > now()", (t,))]
    within = {d: sum(1 for e in exp if e <= timedelta(days=d)) for d in (7, 30, 365)}
    assert within == {7: 2, 30: 3, 365: 4}
    assert (data["expiry"]["within_7d"], data["expiry"]["within_30d"],
            data["expiry"]["within_365d"]) == (within[7], within[30], within[365])
    assert _table(html, "expiry")["30 days"] == [str(within[30])]
    # supersessions per week
    weeks = {str(w): n for w, n in raw.execute(
        "SELECT date_trunc('week', valid_to AT TIME ZONE 'UTC')::date, count(*) "
        "FROM memdb.memories WHERE tenant = %s AND superseded_by IS NOT NULL GROUP BY 1", (t,))}
    assert {r["week"]: r["n"] for r in data["supersessions"]} == weeks
    # retrieval health
    searches, empty, p95 = _one(
        raw, "SELECT count(*), avg((cardinality(chosen_ids) = 0)::int)::float8, "
             "percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) "
             "FROM memdb.retrieval_traces WHERE tenant = %s", t)
    assert searches == 4 and data["traces"]["searches"] == 4
    assert data["traces"]["empty_rate"] == pytest.approx(empty)
    assert data["traces"]["p95_ms"] == pytest.approx(p95)
    intents = dict(raw.execute("SELECT intent, count(*) FROM memdb.retrieval_traces "
                               "WHERE tenant = %s GROUP BY 1", (t,)).fetchall())
    assert data["traces"]["intents"] == intents
    assert _table(html, "traces")["searches"] == ["4"]
    # the JSON beside the report says the same
    assert json.loads((tmp_path / "r" / "report.json").read_text(encoding="utf-8"))["expiry"] \
        == data["expiry"]


def test_report_one_subject(seeded: MemoryStore, raw, tmp_path: Path) -> None:
    data = write_report(seeded, tmp_path, subject="u2").data
    assert data["subject"] == "u2"
    assert data["totals"]["current"] == _one(
        raw, "SELECT count(*) FROM memdb.memories WHERE tenant = 'default' AND subject = 'u2' "
             "AND valid_to IS NULL")[0] == 4
    assert data["totals"]["subjects"] == 1
    assert data["totals"]["superseded"] == 1
    # the search confined to u1 is u1's; the others searched every subject ('*')
    assert data["traces"]["searches"] == 0
    assert write_report(seeded, tmp_path / "u1", subject="u1").data["traces"]["searches"] == 1


def test_report_images_and_html_self_contained(seeded: MemoryStore, tmp_path: Path) -> None:
    result = write_report(seeded, tmp_path)
    html = result.html.read_text(encoding="utf-8")
    assert {"kinds_weekly", "categories_weekly", "age", "hotness", "expiry", "supersessions",
            "latency", "intents", "health"} <= set(result.images)
    for name, path in result.images.items():
        png = path.read_bytes()
        assert len(png) > 8_000, name
        assert _png_pixels_vary(png), name
        assert base64.b64encode(png).decode() in html, name  # the same image, inlined
    assert "http://" not in html and "https://" not in html
    assert not re.search(r"""(src|href)=["'](?!data:)""", html)
    assert "记忆报告" in html and "<meta charset=\"utf-8\">" in html


def test_report_eval_json(store: MemoryStore, tmp_path: Path) -> None:
    ev = {"dataset": "locomo_dev.json", "questions": 10, "ks": [5, 10], "routes": {
        name: {"overall": {"recall@5": 0.5, "recall@10": r},
               "per_category": {"1": {"count": 4, "recall@10": r / 2, "recall@5": 0.1},
                                "4": {"count": 6, "recall@10": r, "recall@5": 0.2}}}
        for name, r in (("vector", 0.6), ("hybrid", 0.8))}}
    path = tmp_path / "eval.json"
    path.write_text(json.dumps(ev), encoding="utf-8")
    result = write_report(store, tmp_path / "out", eval_path=path)
    assert result.images["eval_recall"].stat().st_size > 8_000
    rows = _table(result.html.read_text(encoding="utf-8"), "eval")
    assert rows["hybrid"] == ["0.8", "0.4", "0.8"]  # overall, multi-hop, single-hop
    bad = tmp_path / "bad.json"
    bad.write_text('{"routes": {}}', encoding="utf-8")
    with pytest.raises(InvalidInput, match="evaluation JSON"):
        write_report(store, tmp_path / "bad", eval_path=bad)
    with pytest.raises(InvalidInput, match="no evaluation file"):
        write_report(store, tmp_path / "bad", eval_path=tmp_path / "missing.json")
    with pytest.raises(InvalidInput, match="subject"):
        write_report(store, tmp_path / "bad", subject="  ")
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(InvalidInput, match="is a file"):
        write_report(store, tmp_path / "file")
    assert not (tmp_path / "bad").exists()  # bad input changes nothing


def test_report_empty_database(store: MemoryStore, tmp_path: Path) -> None:
    result = write_report(store, tmp_path)
    assert result.data["totals"]["current"] == 0 and result.data["traces"]["searches"] == 0
    assert all(p.stat().st_size > 3_000 for p in result.images.values())


def test_cli_report(seeded: MemoryStore, fresh_db: str, tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["--dsn", fresh_db, "report", "--out", str(tmp_path / "c"),
                              "--subject", "u1", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert Path(out["html"]).is_file() and out["memories"] == 6 and out["searches"] == 1
    res = runner.invoke(cli, ["--dsn", fresh_db, "report", "--out", str(tmp_path / "d")])
    assert res.exit_code == 0 and "report.html" in res.output


def test_missing_matplotlib_names_the_extra(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from memdb.report import _plots\n"
            "try:\n    _plots._pyplot()\nexcept Exception as e:\n"
            "    print(type(e).__name__, e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith("MissingDependency") and "memdb[report]" in out
    assert issubclass(MissingDependency, ImportError)


@pytest.mark.skipif(shutil.which("chromium") is None,
                    reason="chromium is not installed (apt-get install chromium; .ci/run does)")
def test_report_renders_in_chromium(seeded: MemoryStore, tmp_path: Path) -> None:
    result = write_report(seeded, tmp_path)
    shot = tmp_path / "shot.png"
    subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                    "--hide-scrollbars", "--window-size=1100,2400", f"--screenshot={shot}",
                    result.html.resolve().as_uri()],
                   capture_output=True, timeout=120, check=False)
    assert shot.is_file(), "chromium wrote no screenshot"
    png = shot.read_bytes()
    assert len(png) > 30_000 and _png_pixels_vary(png)


def test_plot_labels_never_tofu() -> None:
    """A label the plot font cannot draw becomes '?', never an empty box: with a CJK font
    installed the Chinese label is drawn (no missing-glyph warning), without one it is ASCII."""
    from memdb.report import _plots

    plt = _plots._pyplot()
    label = _plots._label("张伟的偏好")
    font = _plots.cjk_font()
    assert label == ("张伟的偏好" if font else "?????")
    with warnings.catch_warnings(), plt.rc_context(_plots.rc_params()):
        warnings.filterwarnings("error", message=".*[Gg]lyph.*missing")
        png = _plots._bars(plt, "t", ["张伟的偏好", "tea"], [1, 2])
    assert _png_pixels_vary(png)


def test_demo_screenshot_script(fresh_db: str, tmp_path: Path) -> None:
    """scripts/report_screenshot.py: the demo data, its recalls, the report (and, with
    chromium, the README's screenshot)."""
    script = Path(__file__).resolve().parent.parent / "scripts" / "report_screenshot.py"
    shot = tmp_path / "shot.png"
    res = subprocess.run([sys.executable, str(script), "--dsn", fresh_db, "--out",
                          str(tmp_path / "demo"), "--png", str(shot)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    data = json.loads((tmp_path / "demo" / "report.json").read_text(encoding="utf-8"))
    from memdb.demo import MEMORIES, SEARCHES

    assert data["totals"]["current"] == len(MEMORIES)
    assert data["traces"]["searches"] == len(SEARCHES)
    assert "findfont" not in res.stderr
    if shutil.which("chromium"):
        assert _png_pixels_vary(shot.read_bytes())
