"""Build pg_textsearch from the vendored tarball into a cached copy of the embedded PostgreSQL.

``MEMDB_PG_TEXTSEARCH_TARBALL``, default ``../shared/vendor/pg_textsearch-1.4.0.tar.gz`` next
to the repository, built with PGXS by ``tests/extension_build.py`` (the recipe that builds
Citus for the cluster tests) into
``${MEMDB_BUILD_CACHE:-~/.cache/memdb-build}/pg_textsearch-<tarball sha256[:12]>-<flags hash>/``.

Only the benchmark ``benchmarks/pg_textsearch.py`` uses it; memdb itself does not (its BM25
route is its own SQL). Run by hand to build or reuse the cache and print the ``bin`` path::

    python benchmarks/pg_textsearch_build.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.extension_build import ExtensionBuild, ExtensionUnavailable  # noqa: E402


class TextsearchUnavailable(ExtensionUnavailable):
    """pg_textsearch cannot be built here (the message says why and where the log is)."""


def _steps(pg_config: Path, cflags: str) -> list[tuple[str, list[str]]]:
    common = [f"PG_CONFIG={pg_config}", f"CFLAGS={cflags}"]
    return [("make", ["make", "-j2", *common]), ("make install", ["make", "install", *common])]


PG_TEXTSEARCH = ExtensionBuild(
    name="pg_textsearch", tarball_name="pg_textsearch-1.4.0.tar.gz",
    tarball_env="MEMDB_PG_TEXTSEARCH_TARBALL", library="pg_textsearch.so", steps=_steps,
    error=TextsearchUnavailable)


def textsearch_install() -> Path:
    """The ``bin`` folder of a PostgreSQL tree with pg_textsearch installed (built once)."""
    return PG_TEXTSEARCH.install()


if __name__ == "__main__":
    sys.exit(PG_TEXTSEARCH.main())
