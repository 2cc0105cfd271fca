"""Every Python path the docs name exists: a dotted ``memdb.<package>....`` reference in the
README, docs/ or a comment in sql/ imports, and its attributes are there. (SQL objects, such as
the table memdb.documents, are named ``memdb.<object>`` and are not Python paths: only the
package's folders are checked.) A module moved or a class renamed without its docs fails here.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = sorted(p.name for p in (REPO / "memdb").iterdir()
                  if p.is_dir() and (p / "__init__.py").exists())
REFERENCE = re.compile(r"\bmemdb\.(?:" + "|".join(PACKAGES) + r")(?:\.[A-Za-z_]\w*)*")


def _references() -> dict[str, str]:
    """Each reference, and the first file naming it."""
    found: dict[str, str] = {}
    files = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
             *sorted((REPO / "sql").rglob("*.sql"))]
    for path in files:
        for ref in REFERENCE.findall(path.read_text(encoding="utf-8")):
            found.setdefault(ref, str(path.relative_to(REPO)))
    return found


REFERENCES = _references()


def _resolve(ref: str) -> object:
    parts = ref.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ModuleNotFoundError(ref)


def test_the_docs_name_python_paths():
    assert len(REFERENCES) > 50  # the pattern still finds the docs' references


@pytest.mark.parametrize("ref", sorted(REFERENCES))
def test_a_named_python_path_exists(ref):
    try:
        _resolve(ref)
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"{REFERENCES[ref]} names {ref}, which does not exist ({exc})")
