"""every row-level-security policy reads memdb.tenant and memdb.subject once per statement (an
init plan), not once per row

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-07

See sql/schema/0026_policy_settings_once.sql and docs/performance.md: the policies compared
each row with current_setting(...), which PostgreSQL evaluates per row wherever it is not an
index condition; (SELECT current_setting(...)) is evaluated once per statement. The same rows
are visible and writable. The downgrade restores the per-row form of revisions 0003-0024.
On a Citus coordinator nothing changes: Citus refuses a sub-select in a policy on a
distributed table ("Subqueries are not supported in policies on distributed tables"), so the
policies keep the per-row form there.
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file, has_citus

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0026_policy_settings_once.sql"
SCHEMA_SHA256 = "07db0ae85ba44acb3f44af5afa2784dbe3ec3ea041485e98049c1b0f9ae7af81"

# The policies of revision 0025, restored by the downgrade: tenant only, or tenant and subject
# (retrieval_traces: and never the reserved subject '*' for a caller confined to a subject).
_TENANT_ONLY = ("bm25_stats", "bm25_terms", "job_schedules")
_TENANT_AND_SUBJECT = ("document_chunks", "documents", "entities", "entity_mentions",
                       "entity_relations", "item_vectors", "jobs", "memories", "memory_history",
                       "memory_usage", "percepts", "review_queue", "sediment_runs",
                       "session_messages", "sessions", "retrieval_traces")
_TENANT = "tenant = current_setting('memdb.tenant', true)"
_SUBJECT = "subject = current_setting('memdb.subject', true)"


def _per_row(table: str) -> str:
    if table in _TENANT_ONLY:
        expr = _TENANT
    else:
        subject = f"({_SUBJECT} AND subject <> '*')" if table == "retrieval_traces" else _SUBJECT
        expr = (f"{_TENANT} AND (coalesce(current_setting('memdb.subject', true), '') = ''"
                f" OR {subject})")
    return f"ALTER POLICY {table}_isolation ON memdb.{table} USING ({expr}) WITH CHECK ({expr})"


def per_row_policies() -> list[str]:
    """The statements that give every policy revision 0025's per-row form (the downgrade's;
    benchmarks/rls_policies.py puts them on a copy to compare)."""
    return [_per_row(table) for table in (*_TENANT_ONLY, *_TENANT_AND_SUBJECT)]


def upgrade() -> None:
    conn = op.get_bind().connection.driver_connection
    if has_citus(conn):  # Citus refuses sub-selects in policies on distributed tables
        return
    apply_schema_file(conn, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    if has_citus(op.get_bind().connection.driver_connection):  # the upgrade changed nothing
        return
    for statement in per_row_policies():
        op.execute(statement)
