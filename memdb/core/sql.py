"""Loads memdb's SQL files: the schema, functions and triggers that migrations apply, and the
named queries the DAL runs. SQL text lives only in ``sql/``; this is the one module reading it.

In a wheel the folder ships as ``memdb/sql``; in a source checkout it is ``sql/`` beside the
package.
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from pathlib import Path

__all__ = ["sql_dir", "schema_files", "object_files", "query"]

_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)


@functools.cache
def sql_dir() -> Path:
    """The folder holding schema/, functions/, triggers/ and queries/."""
    packaged = resources.files("memdb") / "sql"
    if packaged.is_dir():
        return Path(str(packaged))
    source = Path(__file__).resolve().parents[2] / "sql"
    if source.is_dir():
        return source
    raise FileNotFoundError("memdb's sql/ folder is missing from this installation")


def schema_files() -> list[Path]:
    """Frozen table DDL, one file per migration, in apply order."""
    return sorted((sql_dir() / "schema").glob("*.sql"))


def object_files() -> list[Path]:
    """Functions, then triggers: re-applied (CREATE OR REPLACE) after every upgrade."""
    return sorted((sql_dir() / "functions").glob("*.sql")) + sorted(
        (sql_dir() / "triggers").glob("*.sql")
    )


@functools.cache
def _queries() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted((sql_dir() / "queries").glob("*.sql")):
        text = path.read_text(encoding="utf-8")
        marks = list(_NAME.finditer(text))
        for i, mark in enumerate(marks):
            end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
            body = text[mark.end():end].strip().rstrip(";")
            if mark.group(1) in found:
                raise ValueError(f"duplicate query name {mark.group(1)!r} in {path}")
            found[mark.group(1)] = body
    return found


def query(name: str) -> str:
    """The SQL text of the named query (``-- name: NAME`` blocks in sql/queries/*.sql)."""
    return _queries()[name]
