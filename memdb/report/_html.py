"""The report as one self-contained HTML page: every figure inlined as a base64 data URI,
and beside each figure the same numbers as a table (``<table id="t-NAME">``, one
``<tr><th>label</th><td>value</td>...</tr>`` per row) so readers and tests can check them.
No external references (no scripts, fonts or stylesheets to fetch).
"""

from __future__ import annotations

import base64
from html import escape
from typing import Any

__all__ = ["render"]

_CSS = """
body{font-family:"Noto Sans CJK SC","Source Han Sans SC","PingFang SC","Microsoft YaHei",
"WenQuanYi Micro Hei",system-ui,sans-serif;margin:2em auto;max-width:1000px;color:#222}
h1{font-size:1.6em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ccc;padding:2px 8px}
td{text-align:right}th{text-align:left;background:#f6f6f6}img{max-width:100%}
.meta{color:#666}
"""


def _num(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.4g}"
    return escape(str(x))


def _table(name: str, header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr><th>" + escape(str(r[0])) + "</th>"
                   + "".join(f"<td>{_num(x)}</td>" for x in r[1:]) + "</tr>" for r in rows)
    return f'<table id="t-{name}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _img(name: str, pngs: dict[str, bytes], alt: str) -> str:
    if name not in pngs:
        return ""
    data = base64.b64encode(pngs[name]).decode("ascii")
    return f'<img id="f-{name}" alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def render(data: dict[str, Any], pngs: dict[str, bytes]) -> str:
    """The HTML text of the report."""
    who = (f"subject {data['subject']}" if data["subject"] else "all subjects")
    t, tot, ex = data["traces"], data["totals"], data["expiry"]
    kc = data["kind_category"]
    kinds = sorted({r["kind"] for r in kc})
    cats = sorted({r["category"] for r in kc})
    cell = {(r["kind"], r["category"]): r["n"] for r in kc}
    weeks = sorted({r["week"] for r in data["weekly"]})
    wk_kinds = sorted({r["kind"] for r in data["weekly"]})
    wk_cats = sorted({r["category"] for r in data["weekly"]})

    def weekly(key: str, groups: list[str]) -> list[list[Any]]:
        return [[w] + [sum(r["n"] for r in data["weekly"] if r["week"] == w and r[key] == g)
                       for g in groups] for w in weeks]

    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>memdb report: {escape(data['tenant'])} / {escape(who)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>memdb report · 记忆报告: tenant {escape(data['tenant'])}, {escape(who)}</h1>",
        f'<p class="meta">Generated {escape(data["generated_at"])}. Weeks start on Monday '
        "(UTC). “Current” memories are those not superseded or closed.</p>",
        "<h2>Totals · 总览</h2>",
        _table("totals", ["figure", "value"], [[k, tot[k]] for k in (
            "rows", "current", "superseded", "expired_unpurged", "hypotheses", "subjects",
            "first_created", "last_created")]),
        "<h2>Memories by kind and category · 按类型和类别</h2>",
        _img("kinds", pngs, "current memories by kind"),
        _img("categories", pngs, "current memories by category"),
        _table("kind_category", ["kind"] + cats + ["total"],
               [[k] + [cell.get((k, c), 0) for c in cats]
                + [sum(cell.get((k, c), 0) for c in cats)] for k in kinds]),
        "<h2>Over time · 随时间变化</h2>",
        _img("kinds_weekly", pngs, "memories added per week by kind"),
        _table("weekly_kinds", ["week"] + wk_kinds, weekly("kind", wk_kinds)),
        _img("categories_weekly", pngs, "memories added per week by category"),
        _table("weekly_categories", ["week"] + wk_cats, weekly("category", wk_cats)),
        "<h2>Age and hotness · 年龄与热度</h2>",
        _img("age", pngs, "age histogram"),
        _table("age", ["age", "memories"], [[b["bucket"], b["n"]] for b in data["age"]]),
        _img("hotness", pngs, "hotness histogram"),
        _table("hotness", ["hotness", "memories"],
               [[b["bucket"], b["n"]] for b in data["hotness"]]),
        "<h2>Expiry horizon · 即将过期</h2>",
        "<p>Current memories not yet expired; the horizons are cumulative.</p>",
        _img("expiry", pngs, "expiry horizon"),
        _table("expiry", ["expiring within", "memories"], [
            ["7 days", ex["within_7d"]], ["30 days", ex["within_30d"]],
            ["365 days", ex["within_365d"]], ["later", ex["later"]], ["never", ex["never"]]]),
        "<h2>Supersessions · 被取代的记忆</h2>",
        _img("supersessions", pngs, "supersessions per week"),
        _table("supersessions", ["week", "superseded"],
               [[r["week"], r["n"]] for r in data["supersessions"]]),
        "<h2>Retrieval health · 检索健康度</h2>",
        _img("latency", pngs, "latency histogram"),
        _img("health", pngs, "empty, fallback and degraded rates"),
        _table("traces", ["figure", "value"], [[k, t[k]] for k in (
            "searches", "p50_ms", "p95_ms", "p99_ms", "empty_rate", "fallback_rate",
            "degraded_rate")]),
        _img("intents", pngs, "search intents"),
        _table("intents", ["intent", "searches"], [[k, n] for k, n in t["intents"].items()]),
    ]
    jobs = data.get("jobs")
    if jobs is not None:
        parts += [
            "<h2>Job queue · 任务队列</h2>",
            "<p>Background jobs of the tenant (all subjects): depth by state, the age of the "
            "oldest due job, and jobs finished per hour over the last two days.</p>",
            _img("jobs", pngs, "jobs finished per hour"),
            _table("jobs", ["figure", "value"], [[k, jobs[k]] for k in (
                "queued", "running", "failed", "dead", "done", "cancelled",
                "oldest_due_seconds", "done_last_hour", "dead_last_hour")]),
            _table("jobs_hourly", ["hour", "done", "dead"],
                   [[r["hour"], r["done"], r["dead"]] for r in data["jobs_hourly"]]),
        ]
    ev = data.get("eval")
    if ev:
        cats_ev = sorted({c for r in ev["routes"].values() for c in r["categories"]})
        parts += [
            f"<h2>Evaluation · 评测: recall@{ev['k']}</h2>",
            f'<p class="meta">{escape(str(ev.get("dataset")))}, '
            f"{escape(str(ev.get('questions')))} questions</p>",
            _img("eval_recall", pngs, "recall by category and route"),
            _table("eval", ["route", "overall"] + cats_ev,
                   [[name, r["overall"]] + [r["categories"].get(c) for c in cats_ev]
                    for name, r in ev["routes"].items()]),
        ]
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p)
