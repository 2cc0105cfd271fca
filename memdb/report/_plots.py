"""The report's figures as PNG bytes (matplotlib, Agg backend: no display needed).

Plot labels are ASCII unless a font with CJK glyphs is installed (then that font is used);
a label the font cannot draw is shown with '?' rather than as empty boxes. The HTML
carries every text in full.
"""

from __future__ import annotations

import functools
import io
import logging
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Any

from ..core.errors import MissingDependency

__all__ = ["figures", "cjk_font", "rc_params"]

_CJK_FONTS = ("Noto Sans CJK SC", "Noto Sans CJK JP", "Noto Sans SC", "Source Han Sans SC",
              "Source Han Sans CN", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei",
              "Droid Sans Fallback",
              "AR PL UMing CN", "SimHei", "Microsoft YaHei", "PingFang SC")
_CJK_FILES = ("wqy", "notosanscjk", "notoserifcjk", "sourcehan", "droidsansfallback", "uming",
              "ukai", "simhei", "msyh", "pingfang")


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise MissingDependency("memdb report needs matplotlib: pip install 'memdb[report]'") \
            from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


@functools.cache
def cjk_font() -> str | None:
    """The name of an installed font with CJK glyphs, or None."""
    from matplotlib import font_manager

    def known() -> str | None:
        installed = {f.name for f in font_manager.fontManager.ttflist}
        return next((name for name in _CJK_FONTS if name in installed), None)

    if (found := known()) is None:  # installed after matplotlib cached its font list
        for path in font_manager.findSystemFonts():
            if any(mark in path.lower() for mark in _CJK_FILES):
                try:
                    font_manager.fontManager.addfont(path)
                except (OSError, RuntimeError, ValueError):
                    continue
        found = known()
    return found


def rc_params() -> dict[str, Any]:
    """matplotlib settings of the report's figures: the CJK font first when there is one
    (its ASCII minus sign, since some CJK fonts lack U+2212)."""
    font = cjk_font()
    if font is None:
        return {}
    return {"font.family": ["sans-serif"], "font.sans-serif": [font, "DejaVu Sans"],
            "axes.unicode_minus": False}


def _label(text: Any) -> str:
    text = str(text)
    if text.isascii() or cjk_font() is not None:
        return text
    return text.encode("ascii", "replace").decode("ascii")


def _png(plt: Any, fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


def _bars(plt: Any, title: str, labels: list[Any], values: list[float], *, xlabel: str = "",
          ylabel: str = "memories", horizontal: bool = False, fmt: str = "{:g}") -> bytes:
    fig, ax = plt.subplots(figsize=(7, 3.6))
    labels = [_label(x) for x in labels]
    if not labels:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", fontsize=14, color="#888")
        ax.set_axis_off()
    elif horizontal:
        bars = ax.barh(labels, values, color="#4C72B0")
        ax.invert_yaxis()
        ax.set_xlabel(ylabel)
        ax.bar_label(bars, labels=[fmt.format(x) for x in values], padding=2, fontsize=8)
        ax.margins(x=0.12)  # room for the value labels
    else:
        bars = ax.bar(labels, values, color="#4C72B0")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.bar_label(bars, labels=[fmt.format(x) for x in values], padding=2, fontsize=8)
        ax.margins(y=0.12)
        if len(labels) > 6:
            ax.tick_params(axis="x", labelrotation=45)
    ax.set_title(title)
    return _png(plt, fig)


def _week_axis(ax: Any, weeks: list[date]) -> None:
    ax.set_xlim(weeks[0] - timedelta(days=7), weeks[-1] + timedelta(days=7))
    ax.xaxis_date()
    ax.tick_params(axis="x", labelrotation=30)


def _stacked_weeks(plt: Any, title: str, rows: list[dict[str, Any]], key: str) -> bytes:
    """Stacked bars on a date axis (weeks without memories are gaps, not hidden)."""
    weeks = sorted({date.fromisoformat(r["week"]) for r in rows})
    groups = sorted({r[key] for r in rows})
    fig, ax = plt.subplots(figsize=(7, 3.6))
    if not weeks:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", fontsize=14, color="#888")
        ax.set_axis_off()
    else:
        bottom = [0] * len(weeks)
        for g in groups:
            counts = [sum(r["n"] for r in rows
                          if r["week"] == w.isoformat() and r[key] == g) for w in weeks]
            ax.bar(weeks, counts, width=6, bottom=bottom, align="edge", label=_label(g))
            bottom = [b + c for b, c in zip(bottom, counts, strict=True)]
        ax.set_ylabel("memories added")
        ax.set_xlabel("week (Monday, UTC)")
        ax.legend(fontsize=8, ncols=2)
        _week_axis(ax, weeks)
    ax.set_title(title)
    return _png(plt, fig)


def _weekly_bars(plt: Any, title: str, rows: list[dict[str, Any]], ylabel: str) -> bytes:
    if not rows:
        return _bars(plt, title, [], [])
    weeks = [date.fromisoformat(r["week"]) for r in rows]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    bars = ax.bar(weeks, [r["n"] for r in rows], width=6, align="edge", color="#4C72B0")
    ax.bar_label(bars, padding=2, fontsize=8)
    ax.margins(y=0.12)
    ax.set_ylabel(ylabel)
    ax.set_xlabel("week (Monday, UTC)")
    _week_axis(ax, weeks)
    ax.set_title(title)
    return _png(plt, fig)


def _latency(plt: Any, data: dict[str, Any]) -> bytes:
    ms, t = data["latencies"], data["traces"]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    if not ms:
        ax.text(0.5, 0.5, "no traces", ha="center", va="center", fontsize=14, color="#888")
        ax.set_axis_off()
    else:
        ax.hist(ms, bins=min(30, max(5, len(ms) // 3)), color="#55A868")
        for q, style in (("p50_ms", "-"), ("p95_ms", "--"), ("p99_ms", ":")):
            ax.axvline(t[q], color="#C44E52", linestyle=style,
                       label=f"{q[:3]} {t[q]:.1f} ms")
        ax.set_xlabel("search latency (ms)")
        ax.set_ylabel("searches")
        ax.legend(fontsize=8)
    ax.set_title(f"Retrieval latency ({t['searches']} searches)")
    return _png(plt, fig)


def _jobs(plt: Any, data: dict[str, Any]) -> bytes:
    """Jobs finished per hour (done and dead) over the last two days, with the queue's depth
    and the age of its oldest due job in the title."""
    rows, q = data.get("jobs_hourly") or [], data.get("jobs") or {}
    oldest = q.get("oldest_due_seconds")
    title = (f"Jobs finished per hour (queued {q.get('queued', 0)}, running "
             f"{q.get('running', 0)}, oldest due "
             + ("-" if oldest is None else f"{oldest:.0f} s") + ")")
    fig, ax = plt.subplots(figsize=(7, 3.6))
    hours = [datetime.fromisoformat(r["hour"]) for r in rows]
    width = 1 / 24 * 0.8
    ax.bar(hours, [r["done"] for r in rows], width, color="#55A868", label="done")
    ax.bar(hours, [r["dead"] for r in rows], width, bottom=[r["done"] for r in rows],
           color="#C44E52", label="dead")
    if not rows:  # the axes of the last two days, empty
        end = datetime.fromisoformat(data["generated_at"])
        ax.set_xlim(end - timedelta(hours=48), end)
        ax.set_ylim(0, 1)
        ax.text(0.5, 0.5, "no finished jobs", ha="center", va="center", fontsize=14,
                color="#888", transform=ax.transAxes)
    ax.set_ylabel("jobs")
    ax.set_xlabel("hour (UTC)")
    ax.xaxis_date()
    fig.autofmt_xdate()
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=10)
    return _png(plt, fig)


def _eval(plt: Any, ev: dict[str, Any]) -> bytes:
    routes = list(ev["routes"])
    cats = sorted({c for r in ev["routes"].values() for c in r["categories"]})
    fig, ax = plt.subplots(figsize=(8, 3.8))
    width = 0.8 / max(len(routes), 1)
    for i, route in enumerate(routes):
        vals = [100 * ev["routes"][route]["categories"].get(c, 0) for c in cats]
        ax.bar([j + i * width for j in range(len(cats))], vals, width, label=_label(route))
    ax.set_xticks([j + width * (len(routes) - 1) / 2 for j in range(len(cats))],
                  [_label(c) for c in cats])
    ax.set_ylabel(f"recall@{ev['k']} (%)")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=8, ncols=3)
    ax.set_title(f"Recall@{ev['k']} by category and route")
    return _png(plt, fig)


def figures(data: dict[str, Any]) -> dict[str, bytes]:
    """``{file stem: PNG bytes}`` for the report's data (see memdb.report._data.collect)."""
    plt = _pyplot()
    rc = rc_params()
    kc = data["kind_category"]
    kinds = sorted({r["kind"] for r in kc})
    cats = sorted({r["category"] for r in kc})
    expiry = data["expiry"]
    t = data["traces"]
    makers: dict[str, Callable[[], bytes]] = {
        "kinds_weekly": lambda: _stacked_weeks(plt, "Memories added per week, by kind",
                                               data["weekly"], "kind"),
        "categories_weekly": lambda: _stacked_weeks(plt, "Memories added per week, by category",
                                                    data["weekly"], "category"),
        "kinds": lambda: _bars(plt, "Current memories by kind", kinds,
                               [sum(r["n"] for r in kc if r["kind"] == k) for k in kinds]),
        "categories": lambda: _bars(plt, "Current memories by category", cats,
                                    [sum(r["n"] for r in kc if r["category"] == c)
                                     for c in cats]),
        "age": lambda: _bars(plt, "Age of current memories", [b["bucket"] for b in data["age"]],
                             [b["n"] for b in data["age"]], xlabel="age"),
        "hotness": lambda: _bars(plt, "Hotness of current memories (0.3 cold .. 1.5 hot)",
                                 [b["bucket"] for b in data["hotness"]],
                                 [b["n"] for b in data["hotness"]], xlabel="hotness"),
        "expiry": lambda: _bars(plt, "Expiry horizon (current memories)",
                                ["7 days", "30 days", "365 days", "later", "never"],
                                [expiry["within_7d"], expiry["within_30d"],
                                 expiry["within_365d"], expiry["later"], expiry["never"]],
                                xlabel="expiring within"),
        "supersessions": lambda: _weekly_bars(plt, "Supersessions per week",
                                              data["supersessions"], "superseded"),
        "latency": lambda: _latency(plt, data),
        "intents": lambda: _bars(plt, "Search intents", list(t["intents"]),
                                 list(t["intents"].values()), ylabel="searches",
                                 horizontal=True),
        "health": lambda: _bars(plt, "Retrieval health (% of searches)",
                                ["empty", "fallback", "degraded"],
                                [100 * t["empty_rate"], 100 * t["fallback_rate"],
                                 100 * t["degraded_rate"]], ylabel="%", fmt="{:.1f}"),
    }
    if "jobs" in data:
        makers["jobs"] = lambda: _jobs(plt, data)
    if data.get("eval"):
        makers["eval_recall"] = lambda: _eval(plt, data["eval"])
    fonts = logging.getLogger("matplotlib.font_manager")
    level = fonts.level
    fonts.setLevel(logging.ERROR)  # "failed to find font weight normal": a CJK font's 500 is fine
    try:
        with plt.rc_context(rc):
            return {name: make() for name, make in makers.items()}
    finally:
        fonts.setLevel(level)
