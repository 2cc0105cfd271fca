"""Small Markdown writers shared by the converters: headings, table rows, cell text."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import Any

__all__ = ["cell", "heading", "plain", "table", "column_letter", "sheet_ref"]

_SPACE = re.compile(r"\s+")
_BLOCK_START = re.compile(r"^([ \t]*)(#|```|~~~)", re.MULTILINE)


def plain(text: str) -> str:
    """Body text that stays body text: a line starting with ``#`` or a code fence is
    escaped, so a bullet "# 1 priority" never becomes a heading (and a citation's path)."""
    return _BLOCK_START.sub(lambda m: m.group(1) + "\\" + m.group(2), text)


def cell(value: Any) -> str:
    """One table cell's text: one line, ``|`` escaped, numbers without a useless ``.0``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        text = "TRUE" if value else "FALSE"
    elif isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        text = str(int(value))
    elif isinstance(value, (dt.datetime, dt.date, dt.time)):
        text = value.isoformat()
    else:
        text = str(value)
    return _SPACE.sub(" ", text).strip().replace("|", "\\|")


def heading(level: int, text: str) -> str:
    """``## text`` (level clamped to 1..6; the text on one line)."""
    return "#" * min(max(level, 1), 6) + " " + _SPACE.sub(" ", text).strip()


def table(rows: Sequence[Sequence[str]], header: Sequence[str] | None = None) -> str:
    """A Markdown table of already escaped cells; the first row is the header unless
    ``header`` is given (it is repeated above each section of a long sheet)."""
    if not rows and header is None:
        return ""
    head = list(header) if header is not None else list(rows[0])
    body = rows if header is not None else rows[1:]
    width = max([len(head), *(len(r) for r in body)])
    lines = ["| " + " | ".join([*head, *[""] * (width - len(head))]) + " |",
             "| " + " | ".join(["---"] * width) + " |"]
    lines += ["| " + " | ".join([*r, *[""] * (width - len(r))]) + " |" for r in body]
    return "\n".join(lines)


def column_letter(n: int) -> str:
    """1 → A, 27 → AA."""
    out = ""
    while n > 0:
        n, rest = divmod(n - 1, 26)
        out = chr(65 + rest) + out
    return out


def sheet_ref(sheet: str, first_row: int, last_row: int, first_col: int, last_col: int) -> str:
    """``Sheet1!A2:D21`` (the name quoted as Excel does when it is not a plain word)."""
    plain = re.fullmatch(r"[^\s!'\-+(),;]+", sheet)
    name = sheet if plain else "'" + sheet.replace("'", "''") + "'"
    return (f"{name}!{column_letter(first_col)}{first_row}:"
            f"{column_letter(last_col)}{last_row}")
