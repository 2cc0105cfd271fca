"""Rows of a sheet or a CSV file as Markdown sections a citation can point at.

The first non-empty row is the header. The rows are cut into sections of at most
:data:`SECTION_ROWS` rows (or about :data:`SECTION_CHARS` characters), each under a heading
that names its cells (``Sales!A1:C21`` for a sheet, ``rows 22–41`` for a CSV file) and
repeating the header row, so every chunk carries its column names and its citation's
heading path says where in the sheet it is. At most ``max_cells`` cells are scanned (empty
ones too): a bigger sheet is refused (``too_large``), not read for minutes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ._markdown import cell, heading, table
from ._readers import FileProblem

__all__ = ["MAX_CELLS", "SECTION_CHARS", "SECTION_ROWS", "row_sections"]

MAX_CELLS = 2_000_000
SECTION_ROWS = 20
SECTION_CHARS = 2000

Ref = Callable[[int, int, int, int], str]  # (first row, last row, first col, last col)


def _span(cells: Sequence[str]) -> tuple[int, int]:
    filled = [i for i, c in enumerate(cells, 1) if c]
    return filled[0], filled[-1]


def row_sections(rows: Iterable[tuple[int, Sequence[Any]]], ref: Ref, *, level: int = 2,
                 max_cells: int | None = None, what: str = "sheet") -> tuple[list[str], int]:
    """The Markdown sections of ``(row number, values)`` rows (values from column A), and
    how many cells were scanned (at most ``max_cells``, default :data:`MAX_CELLS`)."""
    limit = MAX_CELLS if max_cells is None else max_cells
    out: list[str] = []
    header: list[str] | None = None
    header_row = 0
    pending: list[tuple[int, list[str]]] = []
    size = scanned = 0
    for number, values in rows:
        scanned += max(len(values), 1)
        if scanned > limit:
            raise FileProblem("too_large", f"{what} has more than {limit} cells: refused "
                              "(a sheet that large is data, not a document; export the part "
                              "to remember)")
        cells = [cell(v) for v in values]
        if not any(cells):
            continue
        if header is None:
            header, header_row = cells, number
            pending = [(number, cells)]  # the first section's range starts at the header
            size = sum(map(len, cells))
            continue
        pending.append((number, cells))
        size += sum(map(len, cells)) + 3 * len(cells)
        if len(pending) >= SECTION_ROWS or size >= SECTION_CHARS:
            out.append(_flush(ref, level, header, header_row, pending))
            pending, size = [], 0
    if header is not None and pending:
        out.append(_flush(ref, level, header, header_row, pending))
    return out, scanned


def _flush(ref: Ref, level: int, header: list[str], header_row: int,
           pending: list[tuple[int, list[str]]]) -> str:
    """One section: its heading names the cells of its rows (the first section's includes
    the header row); the table repeats the header above the rows."""
    spans = [_span(c) for _, c in pending]
    lo, hi = min(s[0] for s in spans), max(s[1] for s in spans)
    head_lo, head_hi = _span(header)
    cut_lo, cut_hi = min(lo, head_lo), max(hi, head_hi)
    rows = [c[cut_lo - 1:cut_hi] for n, c in pending if n != header_row]
    title = ref(pending[0][0], pending[-1][0], lo, hi)
    return heading(level, title) + "\n\n" + table(rows, header[cut_lo - 1:cut_hi])
