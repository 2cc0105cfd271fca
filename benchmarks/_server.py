"""What the benchmarks share: the server they run on ($MEMDB_DSN / --dsn, or an embedded one
in a temporary MEMDB_HOME, never the user's data, removed afterwards) and a stub embedder."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from psycopg.conninfo import conninfo_to_dict, make_conninfo


class RandomEmbedder:
    """An Embedder that never embeds: benchmark memories carry their own vectors and queries
    pass embedding=, so figures are database time only."""

    dims = 384

    def __init__(self, model: str) -> None:
        self.model = model

    def embed_passages(self, texts) -> np.ndarray:
        raise RuntimeError("the benchmark passes precomputed embeddings; no text is embedded")

    embed_queries = embed_passages


@contextmanager
def server(dsn: str | None) -> Iterator[tuple[str, str]]:
    """(admin DSN, how) for a server where databases may be created."""
    dsn = dsn or os.environ.get("MEMDB_DSN")
    if dsn:
        yield dsn, "dsn"
        return
    from memdb.core.embedded import EmbeddedServer

    home = tempfile.mkdtemp(prefix="memdb-bench-")
    os.chmod(home, 0o755)
    embedded = EmbeddedServer(home)
    try:
        embedded.start()
        yield embedded.dsn("postgres"), "embedded"
    finally:
        embedded.stop()
        shutil.rmtree(home, ignore_errors=True)


@contextmanager
def scratch_database(admin_dsn: str, prefix: str) -> Iterator[tuple[str, str]]:
    """(DSN, name) of a new, migrated database named ``prefix_<pid>_<random>`` on the server of
    ``admin_dsn``; dropped at the end, also when the run fails."""
    import uuid

    import psycopg
    from psycopg import sql

    from memdb.core.migrations import upgrade

    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        db = with_db(admin_dsn, name)
        upgrade(db)
        yield db, name
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))


@contextmanager
def database_copy(dsn: str, suffix: str) -> Iterator[str]:
    """The DSN of a copy of ``dsn``'s database (``CREATE DATABASE ... TEMPLATE``: the same
    pages, the same HNSW graph), named ``<name>_<suffix>_<random>``; dropped at the end, also
    when the run fails. Nothing may be connected to the source while it is copied."""
    import uuid

    import psycopg
    from psycopg import sql

    source = conninfo_to_dict(dsn)["dbname"]
    copy = f"{source}_{suffix}_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
            sql.Identifier(copy), sql.Identifier(source)))
    try:
        yield with_db(dsn, copy)
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(copy)))


def paired(calls: dict[str, Callable[[object], object]], items: list) -> dict:
    """Time ``calls["before"]`` and ``calls["after"]`` on every item: an untimed call of both,
    then a timed one, the order alternating item by item. Each side's p50/p95 (ms), the
    geometric mean of the per-item ratios after/before, and how many items' results differed."""
    times: dict[str, list[float]] = {"before": [], "after": []}
    differences = 0
    for i, item in enumerate(items):
        order = ("before", "after") if i % 2 == 0 else ("after", "before")
        for side in order:
            calls[side](item)
        out = {}
        for side in order:
            start = time.perf_counter()
            out[side] = calls[side](item)
            times[side].append((time.perf_counter() - start) * 1000)
        differences += out["before"] != out["after"]
    a, b = np.array(times["before"]), np.array(times["after"])
    return {"before_p50_p95_ms": [round(float(np.percentile(a, p)), 2) for p in (50, 95)],
            "after_p50_p95_ms": [round(float(np.percentile(b, p)), 2) for p in (50, 95)],
            "geomean_after_over_before": round(float(np.exp(np.mean(np.log(b / a)))), 3),
            "differences": differences}


class NewMemories:
    """Memories for timed single adds, none a duplicate of another: eight words of English and
    Chinese and a suffix unique to the run, a random unit vector, ``subject``, a source id.
    ``args()`` gives one add's ``(text, keyword arguments)``; :func:`delete_subject` removes
    them afterwards."""

    WORDS = ("coffee meeting friday deadline project team python backend deploy review "
             "用户 喜欢 咖啡 北京 出差 航班 会议 项目").split()

    def __init__(self, seed: int, subject: str) -> None:
        import uuid

        self.rng = np.random.default_rng(seed + 7)
        self.subject = subject
        self.run = uuid.uuid4().hex[:8]
        self.count = 0

    def args(self) -> tuple[str, dict]:
        self.count += 1
        vector = self.rng.standard_normal(384).astype(np.float32)
        tag = f"{self.run}-{self.count}"
        return (f"{' '.join(self.rng.choice(self.WORDS, 8))} ({tag})",
                {"subject": self.subject, "source_id": tag,
                 "embedding": vector / np.linalg.norm(vector)})


def delete_subject(dsn: str, tenant: str, subject: str) -> None:
    """Remove a subject's memories and their history (a superuser's connection)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn, conn.transaction():
        for table in ("memories", "memory_history"):
            conn.execute(f"DELETE FROM memdb.{table} WHERE tenant = %s AND subject = %s",
                         (tenant, subject))


def set_hnsw_min_rows(dsn: str, rows: int | None) -> None:
    """memdb.hnsw_min_rows for the new sessions of ``dsn``'s database (None: memdb's own).
    With it above a load, memdb builds no HNSW index during the load (docs/configuration.md,
    "When the HNSW index is built")."""
    import psycopg
    from psycopg import sql

    name = sql.Identifier(conninfo_to_dict(dsn)["dbname"])
    statement = (sql.SQL("ALTER DATABASE {} RESET memdb.hnsw_min_rows").format(name)
                 if rows is None else
                 sql.SQL("ALTER DATABASE {} SET memdb.hnsw_min_rows = {}").format(
                     name, sql.Literal(str(rows))))
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(statement)


def with_db(dsn: str, dbname: str) -> str:
    """The same server DSN, pointing at another database."""
    params = conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return make_conninfo(**params)


def emit(result: dict, path: Path | str | None) -> None:
    """Print the benchmark's JSON document and write it to ``path`` too (folders made)."""
    text = json.dumps(result, indent=2, ensure_ascii=False)
    if path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
    print(text)


def median_ms(fn: Callable[[int], object], repeat: int, digits: int = 2) -> float:
    """Median wall time of ``fn(i)`` for i in range(repeat), in milliseconds."""
    times = []
    for i in range(repeat):
        start = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), digits)
