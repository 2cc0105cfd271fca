"""Splitting extracted text into structural blocks (headings, paragraphs, code, tables) with
character offsets — the first stage of chunking (:mod:`memdb.write.ingest._chunker`).

Markdown: ATX headings (``#`` to ``######``), fenced code blocks (``` or ~~~, kept whole:
headings and blank lines inside a fence are code), tables (consecutive lines starting with
``|``), and paragraphs separated by blank lines. Plain text: paragraphs only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Block", "markdown_blocks", "text_blocks"]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")


@dataclass(frozen=True, slots=True)
class Block:
    """One structural piece of a document: ``text[start:end]`` (no trailing newline)."""

    kind: str  # heading | paragraph | code | table
    start: int
    end: int
    level: int = 0  # heading level
    title: str = ""  # heading text


def _lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of every line, end excluding the newline."""
    out, pos = [], 0
    for line in text.split("\n"):
        out.append((pos, pos + len(line)))
        pos += len(line) + 1
    return out


def _rstrip_end(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def markdown_blocks(text: str) -> list[Block]:
    """The blocks of a Markdown text, in order."""
    blocks: list[Block] = []
    lines = _lines(text)
    i, n = 0, len(lines)
    para_start: int | None = None
    para_end = 0

    def close_paragraph() -> None:
        nonlocal para_start
        if para_start is not None:
            blocks.append(Block("paragraph", para_start, _rstrip_end(text, para_start, para_end)))
            para_start = None

    while i < n:
        line_start, end = lines[i]
        line = text[line_start:end]
        start = line_start + (len(line) - len(line.lstrip()))  # blocks start at their text
        fence = _FENCE.match(line)
        if fence:
            close_paragraph()
            mark = fence.group(1)
            j = i + 1
            while j < n:
                inner = text[lines[j][0]:lines[j][1]].lstrip(" ")
                if inner.startswith(mark[0] * len(mark)) and not inner.strip(mark[0]).strip():
                    break
                j += 1
            last = min(j, n - 1)
            blocks.append(Block("code", start, _rstrip_end(text, start, lines[last][1])))
            i = last + 1
            continue
        heading = _HEADING.match(line)
        if heading:
            close_paragraph()
            blocks.append(Block("heading", start, _rstrip_end(text, start, end),
                                level=len(heading.group(1)), title=heading.group(2).strip()))
            i += 1
            continue
        if line.lstrip().startswith("|"):
            close_paragraph()
            j = i
            while j + 1 < n and text[lines[j + 1][0]:lines[j + 1][1]].lstrip().startswith("|"):
                j += 1
            blocks.append(Block("table", start, _rstrip_end(text, start, lines[j][1])))
            i = j + 1
            continue
        if not line.strip():
            close_paragraph()
        else:
            if para_start is None:
                para_start = start
            para_end = end
        i += 1
    close_paragraph()
    return [b for b in blocks if b.end > b.start]


def text_blocks(text: str) -> list[Block]:
    """The paragraphs (separated by blank lines) of a plain text."""
    blocks: list[Block] = []
    for match in re.finditer(r"\S(?:.*?)(?=\n[ \t]*\n|\Z)", text, re.DOTALL):
        end = _rstrip_end(text, match.start(), match.end())
        if end > match.start():
            blocks.append(Block("paragraph", match.start(), end))
    return blocks
