"""The image's build context (.dockerignore): every file the Dockerfile COPYs is sent, and the
local virtualenv, git data, caches, tests and benchmark outputs are not. The patterns are read
with Docker's rules: Go filepath.Match per path segment, ``**`` for any number of segments, a
path excluded when it or a parent folder matches, ``!`` re-including, the last match wins."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _regex(pattern: str) -> re.Pattern[str]:
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        elif pattern[i] == "[":
            end = pattern.index("]", i)
            out, i = out + "[" + pattern[i + 1:end].replace("!", "^", 1) + "]", end + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + r"\Z")


def rules() -> list[tuple[bool, re.Pattern[str]]]:
    found = []
    for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        keep = line.startswith("!")
        found.append((keep, _regex(line.lstrip("!").strip("/"))))
    return found


def excluded(path: str, patterns: list[tuple[bool, re.Pattern[str]]]) -> bool:
    parts = path.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    verdict = False
    for keep, regex in patterns:
        if any(regex.match(p) for p in prefixes):
            verdict = not keep
    return verdict


def copied() -> list[str]:
    """The sources of the Dockerfile's COPY lines (not COPY --from)."""
    sources = []
    for line in (ROOT / "Dockerfile").read_text(encoding="utf-8").splitlines():
        words = shlex.split(line)
        if words and words[0].upper() == "COPY" and not any(w.startswith("--from")
                                                              for w in words):
            sources += [w for w in words[1:-1] if not w.startswith("--")]
    return sources


def test_the_matcher_reads_docker_patterns():
    patterns = [(False, _regex("**/__pycache__")), (False, _regex("docs")),
                (True, _regex("docs/keep.md")), (False, _regex("*.py[cod]"))]
    assert excluded("memdb/ui/__pycache__/x.cpython-311.pyc", patterns)
    assert excluded("__pycache__/x.pyc", patterns)
    assert excluded("docs/http.md", patterns) and not excluded("docs/keep.md", patterns)
    assert excluded("a.pyc", patterns) and not excluded("memdb/a.pyc", patterns)
    assert not excluded("memdb/families/documents.py", patterns)  # "docs" is not a prefix match
    assert not excluded("说明/文档.md", patterns)


def test_everything_the_dockerfile_copies_is_in_the_context():
    patterns = rules()
    sources = copied()
    assert {"memdb", "sql", "alembic", "pyproject.toml", "docker/entrypoint.sh"} <= set(sources)
    tracked = subprocess.run(["git", "ls-files", "--", *sources], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout.splitlines()
    assert any(f.startswith("memdb/") for f in tracked) and "README.md" in tracked
    for source in sources:
        assert (ROOT / source).exists(), source
    left_out = [f for f in tracked if excluded(f, patterns)]
    assert left_out == []


def test_local_and_build_only_files_stay_out():
    patterns = rules()
    for path in [".venv", ".venv/lib/python3.11/site-packages/numpy/__init__.py", ".git/HEAD",
                 "memdb/__pycache__/store.cpython-311.pyc", ".pytest_cache/v/cache",
                 ".hypothesis/examples/x", ".ruff_cache/0.1/x", "tests/test_store.py",
                 "benchmarks/results/run.json", "memdb.egg-info/PKG-INFO", "docs/http.md"]:
        assert excluded(path, patterns), path
