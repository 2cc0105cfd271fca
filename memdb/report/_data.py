"""The report's figures: the named queries of sql/queries/report.sql, run in one transaction
confined by row-level security to the store's tenant (and one subject, when given).

No plotting here; :func:`collect` returns plain JSON-ready data.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from pathlib import Path
from typing import Any

from ..core import sql
from ..core import validate as v
from ..core.errors import InvalidInput

__all__ = ["collect", "load_eval", "AGE_BUCKETS", "HOTNESS_BUCKETS", "EXPIRY_HORIZONS"]

AGE_BUCKETS = ("< 1 day", "1-7 days", "7-30 days", "30-90 days", "90-365 days", ">= 365 days")
HOTNESS_BUCKETS = tuple(f"{0.3 + 0.1 * i:.1f}-{0.4 + 0.1 * i:.1f}" for i in range(12))
EXPIRY_HORIZONS = (("within_7d", "7 days"), ("within_30d", "30 days"),
                   ("within_365d", "365 days"))


JOB_HOURS = 48  # the job queue's throughput plot: the last two days, by hour


def _plain(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    return value


def _rows(conn: Any, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: _plain(x) for k, x in dict(r).items()}
            for r in conn.execute(sql.query(name), params)]


def collect(store: Any, subject: str | None = None) -> dict[str, Any]:
    """Every figure of the report for the store's tenant (or one ``subject``) as a dict."""
    subject = v.name(subject, "subject") if subject is not None else store.subject
    params = {"tenant": store.tenant}
    with store.db.transaction(tenant=store.tenant, subject=subject) as conn:
        totals = _rows(conn, "report_totals", params)[0]
        kind_category = _rows(conn, "report_kind_category", params)
        weekly = _rows(conn, "report_weekly", params)
        age = {r["bucket"]: r["n"] for r in _rows(conn, "report_age", params)}
        hot = {r["bucket"]: r["n"] for r in _rows(conn, "report_hotness", params)}
        expiry = _rows(conn, "report_expiry", params)[0]
        supersessions = _rows(conn, "report_supersessions", params)
        traces = _rows(conn, "report_traces", params)[0]
        intents = _rows(conn, "report_trace_intents", params)
        latencies = [r["ms"] for r in _rows(conn, "report_trace_latencies", params)]
        jobs = _rows(conn, "job_stats", params)[0]  # the queue is per tenant (no subject)
        jobs_hourly = _rows(conn, "job_throughput", {**params, "hours": JOB_HOURS})
    traces["intents"] = {r["intent"]: r["n"] for r in intents}
    return {
        "tenant": store.tenant,
        "subject": subject,
        "generated_at": datetime.now().astimezone().isoformat(timespec="seconds"),
        "totals": totals,
        "kind_category": kind_category,
        "weekly": weekly,
        "age": [{"bucket": label, "n": age.get(i, 0)} for i, label in enumerate(AGE_BUCKETS)],
        "hotness": [{"bucket": label, "n": hot.get(i + 1, 0)}
                    for i, label in enumerate(HOTNESS_BUCKETS)],
        "expiry": expiry,
        "supersessions": supersessions,
        "traces": traces,
        "latencies": latencies,
        "jobs": jobs,
        "jobs_hourly": jobs_hourly,
    }


def load_eval(path: str | Path) -> dict[str, Any]:
    """Recall per LoCoMo category and route from the JSON ``memdb eval locomo --json`` writes:
    ``{"k": K, "routes": {route: {"overall": r, "categories": {name: r}}}}`` (recall@K, K = 10
    when measured, else the largest k)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        ks = [int(k) for k in data["ks"]]
        routes = data["routes"]
    except FileNotFoundError:
        raise InvalidInput(f"no evaluation file {str(path)!r}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInput(f"not an evaluation JSON of `memdb eval locomo` ({path}): "
                           f"{exc}") from None
    from ..evaluation import CATEGORY_NAMES

    k = 10 if 10 in ks else max(ks)
    key = f"recall@{k}"
    out: dict[str, Any] = {}
    try:
        for name, block in routes.items():
            cats = {CATEGORY_NAMES.get(int(c), str(c)): b[key]
                    for c, b in sorted(block["per_category"].items(), key=lambda x: int(x[0]))}
            out[name] = {"overall": block["overall"][key], "categories": cats}
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInput(f"evaluation JSON without {key} per category ({path}): "
                           f"{exc}") from None
    return {"k": k, "dataset": data.get("dataset"), "questions": data.get("questions"),
            "routes": out}
