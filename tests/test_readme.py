"""README.md is a front page and the docs describe the product, not its making.

* README.md is at most 150 lines and opens with the two commands for a fresh machine: one
  installs memdb and runs ``memdb demo``, one installs the development dependencies and runs
  the tests.
* Neither README.md nor docs/*.md names a commit (``memdb `7dffa39```, ``at 22568cd``), an
  issue (``issue 19``, ``#18``) or a working session (``session 7``, ``(session 8)``): a
  figure carries a date and a version instead. Ordinary hex (colours, sha256 digests, uuids)
  and the product's own sessions (``session_id``, ``trip-42``) are not flagged.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
MAX_LINES = 150

DEMO = 'python3 -m venv .venv && . .venv/bin/activate && pip install . && memdb demo'
TESTS = ('python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[dev]" '
         '&& python -m pytest -q')

# A commit: a 7-40 character hex word holding a digit and a letter, next to a word that
# introduces one ("memdb", "at", "commit", "before", "on", "as of", "--ref"...), or alone in
# backticks or parentheses (`7dffa39`, (12c45dc)). Colours (#1f77b4), sha256 digests (64
# characters) and uuids (hyphenated) do not qualify.
_HEX = r"(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}"
COMMIT = re.compile(
    rf"(?:\b(?:memdb|at|on|commit|commits|before|after|of|as of|against|ref|--ref|--before|rev)"
    rf"\s+`?(?<![#\w-]){_HEX}\b(?![\w-]))"
    rf"|(?:(?:^|[`(])(?<![#\w-]){_HEX}[`)])",
    re.IGNORECASE)
ISSUE = re.compile(r"\b(?:issue|issues|pr|pull request)\s*#?\d+\b|(?<![\w&/])#\d{1,5}\b(?![\w\"])",
                   re.IGNORECASE)
SESSION = re.compile(r"\b(?:working\s+)?sessions?\s+#?\d+\b(?!\s*(?:of|/|turns?|:))",
                     re.IGNORECASE)


def _prose(text: str) -> list[tuple[int, str]]:
    """The page's lines outside fenced code blocks (examples may count sessions or items)."""
    lines, fenced = [], False
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((n, line))
    return lines


def history_mentions(text: str) -> list[str]:
    """``line: match`` for every commit, issue or working-session mention in a page's prose."""
    found = []
    for n, line in _prose(text):
        for pattern in (COMMIT, ISSUE, SESSION):
            found += [f"{n}: {m.group(0)}" for m in pattern.finditer(line)]
    return found


def test_readme_is_a_front_page() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines (at most {MAX_LINES})"
    fences = [n for n, line in enumerate(lines) if line.startswith("```")]
    first, second = lines[fences[0] + 1], lines[fences[2] + 1]
    assert lines[fences[0]] == "```bash" and first == DEMO
    assert lines[fences[2]] == "```bash" and second == TESTS
    assert lines[fences[0] - 1].startswith("<!-- docs-test: skip (")
    assert lines[fences[2] - 1].startswith("<!-- docs-test: skip (")
    before = [line for line in lines[: fences[0]] if line.strip()]
    assert len(before) <= 4, "the two commands come first: a title, a line, and the commands"
    assert not any(line.startswith("```") for line in lines[: fences[0]])


def test_readme_links_every_docs_page() -> None:
    text = README.read_text(encoding="utf-8")
    missing = [p.name for p in PAGES[1:] if f"(docs/{p.name})" not in text]
    assert not missing, f"README.md's Documentation list misses {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_commits_issues_or_sessions(page: Path) -> None:
    found = history_mentions(page.read_text(encoding="utf-8"))
    assert not found, f"{page.relative_to(ROOT)} names its history:\n" + "\n".join(found)


@pytest.mark.parametrize("text", [
    "memdb `7dffa39` (the current search default), 2026-12-04",
    "`search_latency.py --hnsw-after-load` at `7dffa39`, 2026-12-04",
    "kept plans for the vector pass (`12c45dc`), paired against `4b085ff` at load 9",
    "python benchmarks/peers.py --before 22568cd at a861d48",
    "22568cd`, its default (a backtick opened on the line before)",
    "the route functions before (b40f752) and after",
    "issue 18's target (half of it) is not met",
    "within issue 19's 1.5×",
    "see #18 for the plan",
    "On by default since session 7 (`speaker_neighbors=0.4`)",
    "**Kept plans for the routes (session 7).**",
    "### The entity graph route (session 9)",
    "在第 7 次会话 (session 7) 之后默认开启",
    "检索目标见 issue 19：R@10 ≥ 82",
])
def test_the_patterns_catch_history(text: str) -> None:
    assert history_mentions(text), text


@pytest.mark.parametrize("text", [
    "a colour `#1f77b4` and `#ff7f0e`, and style=\"color:#d62728\"",
    "keyed by the sha256 `9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08`",
    "id `0193a4c2-7b1e-7cc3-9f1a-2d3e4f5a6b7c` (a uuidv7)",
    "`memdb session append trip-42 user ...` appends to session `trip-42`",
    "the LoCoMo turns carry their session's id (`session_N`), sessions 1 of 3",
    "ranks 11–50, 122 of 274; R@10 80.3 → 81.2; deadbeef is a word",
    "爱丽丝的第 3 次会话：session_id 为 s-1",
    "schema revision 0018, version 0.1.0, 2026-12-04",
])
def test_the_patterns_leave_ordinary_text(text: str) -> None:
    assert not history_mentions(text), history_mentions(text)
