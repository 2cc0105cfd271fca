"""The server's cumulative statistics as tests read them: flushed first (a backend reports its
counts at its next transaction's end, at most once a second unless forced), then read afresh."""

from __future__ import annotations

import psycopg


def _fresh(conn: psycopg.Connection) -> None:
    conn.execute("SELECT pg_stat_force_next_flush()")
    conn.execute("SELECT pg_stat_clear_snapshot()")


def table_reads(conn: psycopg.Connection, table: str) -> int:
    """How many scans (sequential and index) have read ``table`` (e.g. 'memdb.memory_usage')."""
    _fresh(conn)
    return conn.execute("SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) "
                        "FROM pg_stat_user_tables WHERE relid = %s::regclass",
                        (table,)).fetchone()[0]


def function_calls(conn: psycopg.Connection, *names: str) -> dict[str, int]:
    """Calls of the memdb functions ``names`` (with track_functions on; 0 for none)."""
    _fresh(conn)
    rows = conn.execute("SELECT funcname, calls FROM pg_stat_user_functions "
                        "WHERE schemaname = 'memdb' AND funcname = ANY (%s)",
                        (list(names),)).fetchall()
    return {name: 0 for name in names} | {r[0]: r[1] for r in rows}
