"""Run LangGraph's own store test suites against memdb's LangGraph store.

    python benchmarks/langgraph_suites.py /path/to/langgraph [--out JSON] [--keep]

Takes a checkout of the langgraph repository (nothing is fetched), copies three of its test
modules unchanged into a temporary folder -- the Postgres store's sync and async suites
(``libs/checkpoint-postgres/tests/test_store.py``, ``test_async_store.py``) and the in-memory
store's suite (``libs/checkpoint/tests/test_store.py``) -- with their ``embed_test_utils.py``,
and writes our own ``conftest.py`` there instead of theirs. The adaptation is in the fixtures
only: when pytest imports a suite module, the conftest replaces the module's store factories
(the ``store`` fixtures, ``_create_vector_store``, and the in-memory suite's ``InMemoryStore``
name) with factories that build :class:`MemdbStore` / :class:`AsyncMemdbStore` on a fresh
tenant; the tests' own code is untouched. LangGraph's fake embeddings reach memdb through a
store's ``index`` config as the tests give it (``embed``, ``dims``, ``fields``), with
``ranking="vector"`` (cosine similarity, as LangGraph's stores rank and score).

Cases that test something memdb's store does not have (PostgresStore's connection modes,
pgvector distance and storage variants, its SQL helpers and migrations, LangGraph's batching
base class) are skipped with a reason starting ``n/a:``. The JSON (default
``benchmarks/baselines/langgraph_suites.json``) maps each case id to its outcome
(``passed``, ``failed``, ``not_applicable``) and a reason, with per-suite counts.

Needs ``pytest-asyncio`` and ``pytest-mock`` (LangGraph's suites use them) importable by the
interpreter that runs this script. The stores use ``$MEMDB_DSN``, else an embedded server in a
temporary ``MEMDB_HOME``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
import xml.etree.ElementTree as ET
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITES = {  # our module name -> (suite name, path in the langgraph checkout)
    "test_pg_store": ("postgres_sync", "libs/checkpoint-postgres/tests/test_store.py"),
    "test_pg_async_store": ("postgres_async",
                            "libs/checkpoint-postgres/tests/test_async_store.py"),
    "test_inmem_store": ("in_memory", "libs/checkpoint/tests/test_store.py"),
}
UTILS = "libs/checkpoint/tests/embed_test_utils.py"

# Whole tests that do not apply to another store, by (module, test function): one reason each.
NOT_APPLICABLE = {
    ("test_pg_store", "test_escape_like_literal"): "PostgresStore's SQL helper",
    ("test_pg_store", "test_namespace_match_pattern"): "PostgresStore's SQL helper",
    ("test_pg_store", "test_nonnull_migrations"): "PostgresStore's migrations",
    ("test_pg_async_store", "test_abatch_uses_single_pool_checkout"):
        "counts checkouts of PostgresStore's connection pool",
    ("test_pg_async_store", "test_store_ttl"):
        "starts AsyncPostgresStore's TTL sweeper (start_ttl_sweeper is not BaseStore's API)",
    ("test_inmem_store", "test_get_text_at_path"): "LangGraph's JSON-path helper",
    ("test_inmem_store", "test_async_batch_store"): "LangGraph's AsyncBatchedBaseStore class",
    ("test_inmem_store", "test_async_batch_store_resilience"):
        "LangGraph's AsyncBatchedBaseStore class",
    ("test_inmem_store", "test_async_batch_store_handles_cancellation"):
        "LangGraph's AsyncBatchedBaseStore class",
    ("test_inmem_store", "test_async_batch_store_deduplication"):
        "LangGraph's AsyncBatchedBaseStore class",
}
for _mod in ("test_pg_store", "test_pg_async_store"):
    for _name in ("test_omit_expired_filters_read_paths",
                  "test_omit_expired_disabled_preserves_expired_rows",
                  "test_omit_expired_refresh_ttl_only_refreshes_live_rows",
                  "test_omit_expired_search_pagination"):
        NOT_APPLICABLE[(_mod, _name)] = ("expires rows and reads expires_at in PostgresStore's "
                                         "own table (store._cursor()); memdb has no "
                                         "omit_expired switch")

# Failures that are documented deliberate differences (docs/langgraph.md's contract table),
# by the test function's name or its prefix.
_UNINDEXED = ("an item put with index=False keeps its path as its memory's text, so memdb's "
              "vector ranking scores it by that vector; InMemoryStore returns it unscored "
              "(score None) after the scored items")
DIFFERENCES = {
    "test_embed_with_path": _UNINDEXED,
}


def difference(name: str) -> str | None:
    return next((why for prefix, why in DIFFERENCES.items() if name.startswith(prefix)), None)


FIXTURES = '''\
"""memdb's store factories for LangGraph's store suites (from benchmarks/langgraph_suites.py)."""
import itertools
import uuid
from contextlib import asynccontextmanager, contextmanager

import pytest

from memdb.integrations.langgraph import AsyncMemdbStore, MemdbStore

DEFAULT_URI = DEFAULT_POSTGRES_URI = "unused: the stores are memdb's"
VECTOR_TYPES = ["vector", "halfvec"]
_OPEN = []
_IDS = itertools.count()


def _tenant():
    return f"lg{uuid.uuid4().hex[:10]}{next(_IDS)}"


def _options(index=None, ttl=None):
    options = {"tenant": _tenant(), "ttl": ttl}
    if index is not None:  # LangGraph's index config as given, ranked by vector similarity
        options["index"] = {k: x for k, x in index.items() if x is not None}
        options["ranking"] = "vector"
    return options


def _check_vector_variant(vector_type, distance_type):
    if (vector_type, distance_type) != ("vector", "cosine"):
        pytest.skip("n/a: pgvector storage/distance variant of PostgresStore's index "
                    "(memdb stores one vector type, compared by cosine)")


def memdb_in_memory_store(*, index=None, **kwargs):
    """InMemoryStore(...) of the in-memory suite: a MemdbStore on a fresh tenant."""
    store = MemdbStore(**_options(index))
    _OPEN.append(store)
    return store


def _pg_ttl(module):
    return {"default_ttl": module.TTL_MINUTES, "refresh_on_read": True}


@pytest.fixture(name="store", scope="function", params=["default", "pipe", "pool"])
def sync_store(request):
    if request.param != "default":
        pytest.skip("n/a: PostgresStore connection mode (pipeline, pool)")
    with MemdbStore(**_options(ttl=_pg_ttl(request.module))) as store:
        yield store


@pytest.fixture(name="store", scope="function", params=["default", "pipe", "pool"])
async def async_store(request):
    if request.param != "default":
        pytest.skip("n/a: AsyncPostgresStore connection mode (pipeline, pool)")
    async with AsyncMemdbStore(**_options(ttl=_pg_ttl(request.module))) as store:
        yield store


@contextmanager
def sync_vector_store(vector_type, distance_type, fake_embeddings, text_fields=None,
                      enable_ttl=True):
    _check_vector_variant(vector_type, distance_type)
    index = {"dims": fake_embeddings.dims, "embed": fake_embeddings, "fields": text_fields}
    ttl = {"default_ttl": 2, "refresh_on_read": True} if enable_ttl else None
    with MemdbStore(**_options(index, ttl)) as store:
        yield store


@asynccontextmanager
async def async_vector_store(vector_type, distance_type, fake_embeddings, text_fields=None):
    _check_vector_variant(vector_type, distance_type)
    index = {"dims": fake_embeddings.dims, "embed": fake_embeddings, "fields": text_fields}
    async with AsyncMemdbStore(**_options(index)) as store:
        yield store


ADAPT = {
    "tests.test_pg_store": {"store": sync_store, "_create_vector_store": sync_vector_store},
    "tests.test_pg_async_store": {"store": async_store,
                                  "_create_vector_store": async_vector_store},
    "tests.test_inmem_store": {"InMemoryStore": memdb_in_memory_store},
}
'''

CONFTEST = '''\
"""memdb's conftest for LangGraph's store suites (written by benchmarks/langgraph_suites.py):
each suite module's store factories are replaced by memdb's before pytest collects it."""
import pytest

from tests.embed_test_utils import CharacterEmbeddings
from tests.memdb_fixtures import _OPEN, ADAPT, DEFAULT_POSTGRES_URI, DEFAULT_URI, VECTOR_TYPES

NOT_APPLICABLE = __NOT_APPLICABLE__
__all__ = ["CharacterEmbeddings", "DEFAULT_POSTGRES_URI", "DEFAULT_URI", "VECTOR_TYPES"]


class AdaptedModule(pytest.Module):
    """A suite module with its store factories replaced by memdb's (before collection)."""

    def _getobj(self):
        module = super()._getobj()
        for name, replacement in ADAPT.get(module.__name__, {}).items():
            setattr(module, name, replacement)
        return module


def pytest_pycollect_makemodule(module_path, parent):
    if module_path.name.startswith("test_"):
        return AdaptedModule.from_parent(parent, path=module_path)
    return None


def pytest_collection_modifyitems(items):
    for item in items:
        reason = NOT_APPLICABLE.get((item.module.__name__.split(".")[-1], item.originalname))
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"n/a: {reason}"))


@pytest.fixture
def fake_embeddings():
    return CharacterEmbeddings(dims=500)


@pytest.fixture(autouse=True)
def close_memdb_stores():
    yield
    while _OPEN:
        _OPEN.pop().close()
'''

PYTEST_INI = """\
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
addopts = -p no:cacheprovider --timeout=300
"""


def prepare(checkout: Path, workdir: Path) -> Path:
    tests = workdir / "tests"
    tests.mkdir(parents=True)
    (tests / "__init__.py").write_text("")
    shutil.copy(checkout / UTILS, tests / "embed_test_utils.py")
    for module, (_, path) in SUITES.items():
        shutil.copy(checkout / path, tests / f"{module}.py")
    (tests / "memdb_fixtures.py").write_text(FIXTURES)
    conftest = CONFTEST.replace(
        "__NOT_APPLICABLE__",
        "{" + ", ".join(f"({m!r}, {t!r}): {r!r}" for (m, t), r in NOT_APPLICABLE.items()) + "}")
    (tests / "conftest.py").write_text(conftest)
    (workdir / "pytest.ini").write_text(PYTEST_INI)
    return tests


def outcomes(junit: Path) -> dict[str, dict[str, str]]:
    cases: dict[str, dict[str, str]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")[-1]
        case_id = f"{module}::{case.get('name')}"
        name = case.get("name", "").split("[")[0]
        skipped = case.find("skipped")
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if skipped is not None:
            message = skipped.get("message", "")
            reason = message.split("n/a: ", 1)[-1] if "n/a: " in message else message
            outcome = "not_applicable" if "n/a: " in message else "skipped"
            cases[case_id] = {"outcome": outcome, "reason": reason}
        elif problem is not None:
            why = difference(name)
            reason = why or (problem.get("message") or "")[:300]
            kind = "deliberate difference" if why else "not explained"
            cases[case_id] = {"outcome": "failed", "reason": f"{kind}: {reason}"}
        else:
            cases[case_id] = {"outcome": "passed", "reason": ""}
    return cases


def summary(cases: dict[str, dict[str, str]]) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for module, (suite, _) in SUITES.items():
        mine = [c["outcome"] for k, c in cases.items() if k.startswith(f"{module}::")]
        applicable = sum(o != "not_applicable" for o in mine)
        passed = mine.count("passed")
        out[suite] = {"total": len(mine), "not_applicable": len(mine) - applicable,
                      "applicable": applicable, "passed": passed,
                      "failed": applicable - passed,
                      "pass_rate": round(100 * passed / applicable, 1) if applicable else None}
    return out


def checkout_versions(checkout: Path) -> dict[str, str]:
    found = {}
    for lib in ("checkpoint", "checkpoint-postgres"):
        pyproject = checkout / "libs" / lib / "pyproject.toml"
        if pyproject.exists():
            project = tomllib.loads(pyproject.read_text())["project"]
            found[project["name"]] = project["version"]
    return found


def version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help="a checkout of langchain-ai/langgraph")
    parser.add_argument("--out", type=Path,
                        default=ROOT / "benchmarks" / "baselines" / "langgraph_suites.json")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="memdb-lgsuites-"))
    try:
        prepare(args.checkout.resolve(), workdir)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(workdir), str(ROOT), os.environ.get("PYTHONPATH", "")]))
        if not env.get("MEMDB_DSN"):
            env["MEMDB_HOME"] = str(workdir / "memdb-home")
        junit = workdir / "junit.xml"
        subprocess.run([sys.executable, "-m", "pytest", "tests", "-q", "-rN",
                        f"--junitxml={junit}"], cwd=workdir, env=env, check=False)
        cases = outcomes(junit)
        counts = summary(cases)
        result = {"date": dt.date.today().isoformat(),
                  "suites_from_checkout": checkout_versions(args.checkout),
                  "installed": {n: version(n) for n in
                                ("langgraph", "langgraph-checkpoint",
                                 "langgraph-checkpoint-postgres")},
                  "suites": {suite: path for suite, path in SUITES.values()},
                  "counts": counts, "cases": cases}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
        print(json.dumps(counts, indent=1))
    finally:
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
