"""How much memory the embedded server keeps its pages in (``shared_buffers``), and what its
planner assumes of reading them (``random_page_cost``, ``effective_cache_size``).

PostgreSQL's own default (128 MB) holds about 20,000 memories with their indexes. Beyond that
every search copies most of the pages it reads from the operating system's cache into the
server's buffers again, evicting others. Measured (docs/performance.md, "Shared buffers"):
buffers that hold the whole database made searches faster (whole tenant p95 33.3 -> 20.8 ms
at 100,000 memories, 163 -> 130 ms at 1,000,000); buffers that hold only part of it (1, 2 and
4 GB for 6.4 GB) made whole-tenant searches slower than 128 MB did. So the embedded server
gets room for its largest database (and 256 MB to grow into) when that fits in a third of the
machine's memory (or of the container's limit) and in 8 GB, else 128 MB. The buffers are
mapped when the server starts but take memory only as pages are read into them.

``MEMDB_SHARED_BUFFERS`` sets another size (``512MB``, ``2GB``, ...). memdb writes the size to
``memdb-memory.conf`` in the data folder whenever it starts the server (not when it joins a
running one); it takes effect then: ``memdb server stop`` ends a running one. ``ALTER SYSTEM
SET shared_buffers`` overrides it (``postgresql.auto.conf`` is read after it).

The planner's defaults describe spinning disks and a small cache: a page read at random costs 4
sequential ones, and 4 GB of cache. The embedded server's pages are in its buffers or the
operating system's cache (or on the local disk, an SSD on any current machine), so the file
sets ``random_page_cost`` 1.1 and ``effective_cache_size`` half the machine's memory (or of the
container's limit). With PostgreSQL's 4 the BM25 route read a whole 10,000-memory tenant
sequentially instead of the ~1,400 rows its index named (docs/performance.md, "Planner costs
for pages in memory"); ``ALTER SYSTEM SET`` overrides both, as it does ``shared_buffers``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .errors import InvalidInput

__all__ = ["ENV", "FILE", "database_bytes", "memory_config", "planner_settings", "requested",
           "shared_buffers", "size_mb"]

ENV = "MEMDB_SHARED_BUFFERS"
FILE = "memdb-memory.conf"  # in the data folder, included from postgresql.conf
_MB = 1024 * 1024
_FLOOR_MB = 128
_CEILING_MB = 8 * 1024
_HEADROOM_MB = 256
_SIZE = re.compile(r"^([1-9][0-9]{0,8})(kB|MB|GB|TB)$")
_UNIT_MB = {"kB": 1 / 1024, "MB": 1, "GB": 1024, "TB": 1024 * 1024}
RANDOM_PAGE_COST = "1.1"  # pages in memory or on an SSD (PostgreSQL's 4: a spinning disk)


def size_mb(size: str) -> float | None:
    """A PostgreSQL size (``512MB``, ``6GB``, as ``SHOW shared_buffers`` prints it) in MB."""
    match = _SIZE.match(size.strip())
    return None if match is None else int(match.group(1)) * _UNIT_MB[match.group(2)]


def _machine_bytes() -> int | None:
    """Physical memory, or the cgroup's (container's) limit when that is lower."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    for limit_file in ("/sys/fs/cgroup/memory.max",  # cgroup v2
                       "/sys/fs/cgroup/memory/memory.limit_in_bytes"):  # cgroup v1
        try:
            text = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def database_bytes(pgdata: Path) -> int:
    """The size on disk of the largest database in ``pgdata`` (its tables, indexes and TOAST:
    ``base/<oid>``); 0 for a new cluster."""
    largest = 0
    try:
        databases = [e for e in os.scandir(pgdata / "base") if e.is_dir(follow_symlinks=False)]
    except OSError:
        return 0
    for database in databases:
        total = 0
        for dirpath, _dirs, files in os.walk(database.path):
            for name in files:
                try:
                    total += os.lstat(os.path.join(dirpath, name)).st_size
                except OSError:  # dropped while we looked
                    continue
        largest = max(largest, total)
    return largest


def requested(environ: dict[str, str] | None = None,
              machine_bytes: int | None = None) -> str | None:
    """``MEMDB_SHARED_BUFFERS`` checked (a PostgreSQL size with its unit, from 128MB to the
    machine's memory), or None when unset or blank."""
    env = os.environ if environ is None else environ
    wanted = env.get(ENV, "").strip()
    if not wanted:
        return None
    mb = size_mb(wanted)
    if mb is None:
        raise InvalidInput(f"{ENV} must be a size such as 512MB or 2GB, got {wanted!r}")
    if mb < _FLOOR_MB:
        raise InvalidInput(f"{ENV} must be at least {_FLOOR_MB}MB, got {wanted!r}")
    total = _machine_bytes() if machine_bytes is None else machine_bytes
    if total is not None and mb * _MB > total:
        raise InvalidInput(f"{ENV} {wanted} is more than this machine's memory "
                           f"({total // _MB}MB)")
    return wanted


def shared_buffers(environ: dict[str, str] | None = None, machine_bytes: int | None = None,
                   data_bytes: int = 0) -> str:
    """The embedded server's ``shared_buffers``: :func:`requested` when set; else room for the
    data (``data_bytes``, the largest database, and 256 MB to grow into) when that fits in a
    third of ``machine_bytes`` (default: this machine's memory, or its cgroup limit) and in
    8 GB; else PostgreSQL's default, 128 MB: buffers that hold only part of the data made
    whole-tenant searches slower than 128 MB did (docs/performance.md)."""
    total = _machine_bytes() if machine_bytes is None else machine_bytes
    wanted = requested(environ, total)
    if wanted is not None:
        return wanted
    budget = min(_CEILING_MB, (total or 0) // 3 // _MB)
    need = -(-data_bytes // _MB) + _HEADROOM_MB
    mb = max(_FLOOR_MB, need if need <= budget else _FLOOR_MB)
    return f"{mb // 1024}GB" if mb % 1024 == 0 else f"{mb}MB"


def planner_settings(machine_bytes: int | None = None) -> dict[str, str]:
    """The planner's costs for the embedded server: ``random_page_cost`` 1.1 and
    ``effective_cache_size`` half of ``machine_bytes`` (default: this machine's memory, or
    its cgroup limit; at least 128 MB; 4 GB, PostgreSQL's default, when it cannot be read)."""
    total = _machine_bytes() if machine_bytes is None else machine_bytes
    cache_mb = 4096 if not total else max(_FLOOR_MB, total // 2 // _MB)
    cache = f"{cache_mb // 1024}GB" if cache_mb % 1024 == 0 else f"{cache_mb}MB"
    return {"random_page_cost": RANDOM_PAGE_COST, "effective_cache_size": cache}


def memory_config(pgdata: Path, environ: dict[str, str] | None = None) -> str:
    """The text of ``memdb-memory.conf`` for ``pgdata``."""
    size = shared_buffers(environ, data_bytes=database_bytes(pgdata))
    planner = "".join(f"{name} = '{value}'\n" for name, value in planner_settings().items())
    return ("# memdb: written when memdb starts the server (MEMDB_SHARED_BUFFERS, else room for\n"
            "# the largest database when that fits in a third of the machine's memory and\n"
            "# 8GB, else 128MB; the planner's costs of pages in memory or on an SSD).\n"
            f"shared_buffers = '{size}'\n" + planner)
