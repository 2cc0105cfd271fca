"""Text output of the CLI: aligned tables (CJK counts double), memories, history."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence
from typing import Any

import click

from ..core.models import HistoryEntry, Memory

CONTENT_CHARS = 160  # content is cut to this many characters in list and search tables


def width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def short(text: str, limit: int = CONTENT_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Columns padded to their widest cell (CJK counts double); the last is left ragged."""
    widths = [max(width(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        cells = [c + " " * (w - width(c)) for c, w in zip(row, widths, strict=False)]
        click.echo("  ".join([*cells, row[-1]]).rstrip())


def provenance(m: Memory) -> str:
    return f"{m.source_type.value}:{m.source_id or '-'}"


def print_hits(hits: Sequence[dict[str, Any]], with_id: bool = False) -> None:
    """Ranked hits (as :func:`memdb.demo.summarize_hit` dicts) as a table."""
    header = ["#", "score", "kind", "category", "subject", "provenance", "routes", "content"]
    rows = [[str(h["rank"]), f"{h['score']:.3f}", h["kind"], h["category"], h["subject"],
             f"{h['source_type']}:{h['source_id'] or '-'}",
             " ".join(f"{r}:{n}" for r, n in h["routes"].items()) or "-",
             short(h["content"])] for h in hits]
    if with_id:
        header.insert(1, "id")
        for row, h in zip(rows, hits, strict=True):
            row.insert(1, h["id"])
    table(header, rows)


def print_memory(m: Memory) -> None:
    for key, value in m.to_dict().items():
        if isinstance(value, (dict, list)):
            value = json.dumps(value, ensure_ascii=False)
        click.echo(f"{key:<17} {'-' if value is None else value}")


def print_history(entries: Sequence[HistoryEntry]) -> None:
    for e in entries:
        row = e.after or e.before or {}
        changed = ""
        if e.before and e.after:
            keys = [k for k in e.after if k not in ("updated_at", "version")
                    and e.before.get(k) != e.after[k]]
            changed = f"  changed: {', '.join(keys) or '-'}"
        click.echo(f"{e.at.isoformat()}  {e.op:<7} v{row.get('version', '?')}  "
                   f"actor={e.actor or '-'}  reason={e.reason or '-'}{changed}")
        click.echo(f"    {short(str(row.get('content', '')))}")


