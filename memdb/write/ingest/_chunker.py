"""Chunking: Markdown headings first, then blocks and paragraphs, then sentences, then a token
budget with overlap.

1. The text is cut into blocks (:mod:`._blocks`) and the blocks into sections at headings; a
   heading with no text of its own joins the section after it. A chunk never crosses a
   section, so its heading path describes all of it.
2. Each section is cut into *units*: a whole block when it fits the budget; else a code block
   by lines, a table by rows, a paragraph by sentences (``.!?`` followed by a space, and the
   Chinese ``。！？；`` with any closing quotes), and a unit still over budget by words / CJK
   characters.
3. Units are packed greedily into *parents* of at most ``parent_tokens`` (a section that fits
   is one parent) and, inside each parent, into chunks of at most ``chunk_tokens``; a new
   chunk starts with the previous chunk's last units up to ``overlap`` tokens. A heading never
   ends a chunk.

Every chunk is a contiguous slice ``text[start:end]`` of the document (offsets are exact
provenance) and its token count never exceeds ``chunk_tokens``: a chunk of one unit is counted
exactly; a chunk of several is bounded by its units' counts plus one token per join (the
most a join adds with this tokenizer, measured) and recounted on the slice itself when that
bound comes near the budget.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from ...core.errors import InvalidInput
from ...core.tokens import TokenCounter, default_counter
from ._blocks import Block, markdown_blocks, text_blocks

__all__ = ["Chunk", "ChunkOptions", "chunk_text", "CHUNKER_VERSION"]

CHUNKER_VERSION = 1
_SENTENCE_END = re.compile(r"[。！？；!?;…]+[”’」』）)\"']*|\.(?=\s)|\n")
_WIDE = r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\uffef]"
# the smallest pieces a unit over budget is cut into: one CJK character, or one word
_ATOM = re.compile(rf"{_WIDE}|\S+?(?={_WIDE}|\s|$)")


@dataclass(frozen=True, slots=True)
class ChunkOptions:
    """How documents are chunked (stored with each document: a change re-chunks it)."""

    chunk_tokens: int = 256
    overlap: int = 32
    parent_tokens: int = 1024

    def __post_init__(self) -> None:
        for name in ("chunk_tokens", "overlap", "parent_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidInput(f"{name} must be a non-negative integer")
        if not 16 <= self.chunk_tokens <= 8192:
            raise InvalidInput("chunk_tokens must be between 16 and 8192")
        if self.overlap >= self.chunk_tokens // 2 + 1:
            raise InvalidInput("overlap must be less than half of chunk_tokens")
        if self.parent_tokens < self.chunk_tokens:
            raise InvalidInput("parent_tokens must be at least chunk_tokens")

    def to_json(self) -> dict[str, int]:
        return {**asdict(self), "version": CHUNKER_VERSION}


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk: ``text == document[start:end]``, with its section's heading path and the
    span of its parent (the section, or a part of it of at most ``parent_tokens``).
    ``tokens`` is exact, or an upper bound (see the module docstring)."""

    text: str
    start: int
    end: int
    heading_path: tuple[str, ...]
    parent_start: int
    parent_end: int
    tokens: int


@dataclass(slots=True)
class _Unit:
    start: int
    end: int
    tokens: int
    heading: bool = False


class _Chunker:
    def __init__(self, text: str, options: ChunkOptions, count: TokenCounter) -> None:
        self.text, self.opt = text, options
        self.count = count
        self._atom_count = functools.lru_cache(maxsize=65536)(count)

    # -- units -----------------------------------------------------------------------------
    def _split_pieces(self, start: int, end: int, pattern: re.Pattern[str] | None) -> list[_Unit]:
        """Cut text[start:end] at pattern's match ends (or at newlines when pattern is None)."""
        text, out, pos = self.text, [], start
        bounds = ([m.end() for m in pattern.finditer(text, start, end)]
                  if pattern is not None else
                  [i + 1 for i in range(start, end) if text[i] == "\n"])
        for b in [*bounds, end]:
            s = pos
            while s < b and text[s].isspace():
                s += 1
            e = b
            while e > s and text[e - 1].isspace():
                e -= 1
            if e > s:
                out.extend(self._fit(s, e))
            pos = b
        return out

    def _fit(self, start: int, end: int, tokens: int | None = None) -> list[_Unit]:
        """One unit for text[start:end] if it fits the budget, else word/char-level pieces."""
        budget = self.opt.chunk_tokens
        n = self.count(self.text[start:end]) if tokens is None else tokens
        if n <= budget:
            return [_Unit(start, end, n)]
        atoms = [(m.start() + start, m.end() + start)
                 for m in _ATOM.finditer(self.text[start:end])]
        out: list[_Unit] = []
        i = 0
        while i < len(atoms):
            total, j = 0, i
            while j < len(atoms):
                t = self._atom_count(self.text[atoms[j][0]:atoms[j][1]])
                if total + t > budget and j > i:
                    break
                total += t
                j += 1
            s, e = atoms[i][0], atoms[j - 1][1]
            exact = self.count(self.text[s:e])
            while exact > budget and j - 1 > i:
                j -= 1
                e = atoms[j - 1][1]
                exact = self.count(self.text[s:e])
            if exact > budget:  # one atom alone over budget (a huge "word"): cut by characters
                step = max(1, (e - s) * budget // max(exact, 1))
                for k in range(s, e, step):
                    stop = min(e, k + step)
                    out.append(_Unit(k, stop, self.count(self.text[k:stop])))
            else:
                out.append(_Unit(s, e, exact))
            i = j
        return out

    def units(self, block: Block) -> list[_Unit]:
        n = self.count(self.text[block.start:block.end])
        if block.kind == "heading" and n <= self.opt.chunk_tokens:
            return [_Unit(block.start, block.end, n, heading=True)]
        if block.kind == "heading":  # a heading longer than a chunk: cut like a sentence
            return self._fit(block.start, block.end, n)
        if n <= self.opt.chunk_tokens:
            return [_Unit(block.start, block.end, n)]
        if block.kind in ("code", "table"):
            return self._split_pieces(block.start, block.end, None)
        return self._split_pieces(block.start, block.end, _SENTENCE_END)

    # -- packing ---------------------------------------------------------------------------
    def _groups(self, units: Sequence[_Unit], budget: int) -> list[list[_Unit]]:
        groups: list[list[_Unit]] = []
        current: list[_Unit] = []
        total = 0
        for u in units:
            if current and total + u.tokens > budget:
                groups.append(current)
                current, total = [], 0
            current.append(u)
            total += u.tokens
        if current:
            groups.append(current)
        return groups

    def chunks(self, units: list[_Unit], path: tuple[str, ...]) -> list[Chunk]:
        out: list[Chunk] = []
        budget, overlap = self.opt.chunk_tokens, self.opt.overlap
        for parent in self._groups(units, self.opt.parent_tokens):
            p_start, p_end = parent[0].start, parent[-1].end
            i = 0
            while i < len(parent):
                # overlap: the previous chunk's trailing units, up to `overlap` tokens
                j, carried = i, 0
                while j > 0 and out and out[-1].parent_start == p_start and \
                        carried + parent[j - 1].tokens <= overlap and j - 1 > (i - 64):
                    if parent[j - 1].start < out[-1].start:
                        break
                    carried += parent[j - 1].tokens
                    j -= 1
                # bound: the units' tokens plus one per join (the separator measured the
                # costliest case of the tokenizer); within budget, no recount is needed
                k, bound = i, carried + max(0, i - j - 1)
                while k < len(parent) and (k == i or bound + 1 + parent[k].tokens <= budget):
                    bound += parent[k].tokens + (1 if k > j else 0)
                    k += 1
                while k - 1 > i and parent[k - 1].heading:  # a heading never ends a chunk
                    k -= 1
                    bound -= parent[k].tokens + 1
                s, e = parent[j].start, parent[k - 1].end
                if bound > budget or (j < k - 1 and bound > budget - 2):
                    bound = self.count(self.text[s:e])
                    while bound > budget and (k - 1 > i or j < i):
                        if j < i:
                            j += 1  # drop overlap first
                        else:
                            k -= 1
                        s, e = parent[j].start, parent[k - 1].end
                        bound = self.count(self.text[s:e])
                out.append(Chunk(self.text[s:e], s, e, path, p_start, p_end, bound))
                i = k
        return out


def _sections(blocks: list[Block]) -> list[tuple[tuple[str, ...], list[Block]]]:
    """(heading path, blocks) per section; a heading with no body joins the next section."""
    sections: list[tuple[tuple[str, ...], list[Block]]] = []
    stack: list[tuple[int, str]] = []
    current: list[Block] = []
    path: tuple[str, ...] = ()
    for block in blocks:
        if block.kind == "heading":
            if current and any(b.kind != "heading" for b in current):
                sections.append((path, current))
                current = []
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.title))
            path = tuple(title for _, title in stack)
        current.append(block)
    if current:
        sections.append((path, current))
    return sections


def chunk_text(text: str, *, markdown: bool = True, options: ChunkOptions | None = None,
               counter: TokenCounter | None = None) -> list[Chunk]:
    """Chunks of ``text`` (Markdown-aware when ``markdown``), in document order.

    >>> [c.heading_path for c in chunk_text("# A\\n\\nx\\n\\n## B\\n\\ny")]
    [('A',), ('A', 'B')]
    """
    opt = options or ChunkOptions()
    chunker = _Chunker(text, opt, counter or default_counter())
    blocks = markdown_blocks(text) if markdown else text_blocks(text)
    out: list[Chunk] = []
    for path, section in _sections(blocks):
        units = [u for block in section for u in chunker.units(block)]
        out.extend(chunker.chunks(units, path))
    return out
