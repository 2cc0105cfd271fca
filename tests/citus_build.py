"""Build Citus from the vendored source tarball into a cached copy of the embedded PostgreSQL.

``MEMDB_CITUS_TARBALL``, default ``../shared/vendor/citus-14.0.1.tar.gz`` next to the
repository (or next to the one a clean clone came from), built by ``tests/extension_build.py``
into ``${MEMDB_BUILD_CACHE:-~/.cache/memdb-build}/citus-<tarball sha256[:12]>-<flags hash>/``.
Run it by hand (``.ci/run`` does) to build or reuse the cache and print its path::

    python tests/citus_build.py

:func:`citus_install` returns the tree's ``bin`` folder, or raises :class:`CitusUnavailable`
with the reason (missing tarball, failed build: the log's path) for the tests to skip on.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: tests/ is not a package on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.extension_build import DROPPED_CFLAGS, ExtensionBuild, ExtensionUnavailable  # noqa: E402

CONFIGURE_FLAGS = ("--without-libcurl", "--without-lz4", "--without-zstd")
# citus.so links libpq: find it next to itself, not in the build folder.
MAKE_VARS = ("rpathdir=$$ORIGIN",)


class CitusUnavailable(ExtensionUnavailable):
    """Citus cannot be built here (the message says why and where the log is)."""


def _steps(pg_config: Path, cflags: str) -> list[tuple[str, list[str]]]:
    jobs = str(min(os.cpu_count() or 1, 4))
    return [
        ("configure", ["./configure", f"PG_CONFIG={pg_config}", *CONFIGURE_FLAGS]),
        ("make", ["make", f"-j{jobs}", f"CFLAGS={cflags}", *MAKE_VARS]),
        ("make install", ["make", "install", f"CFLAGS={cflags}", *MAKE_VARS]),
    ]


CITUS = ExtensionBuild(
    name="citus", tarball_name="citus-14.0.1.tar.gz", tarball_env="MEMDB_CITUS_TARBALL",
    library="citus.so", steps=_steps,
    flags=(*CONFIGURE_FLAGS, *DROPPED_CFLAGS, *MAKE_VARS), error=CitusUnavailable)


def citus_install() -> Path:
    """The ``bin`` folder of a PostgreSQL tree with Citus installed (built once, then cached)."""
    return CITUS.install()


if __name__ == "__main__":
    sys.exit(CITUS.main())
