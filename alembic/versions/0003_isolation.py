"""tenant isolation: role memdb_app, grants, row-level security policies

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0003_isolation.sql"
SCHEMA_SHA256 = "a6c937d05554d88bd7c71362325d478457eabe4493ffc367bc6064e4febe0bd4"

_RLS_TABLES = ("memories", "memory_history", "memory_usage", "bm25_terms", "bm25_stats")


def upgrade() -> None:
    apply_schema_file(op.get_bind().connection.driver_connection, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    for table in _RLS_TABLES:
        op.execute(f"DROP POLICY IF EXISTS {table}_isolation ON memdb.{table}")
        op.execute(f"ALTER TABLE memdb.{table} DISABLE ROW LEVEL SECURITY")
    op.execute("REVOKE ALL ON ALL TABLES IN SCHEMA memdb FROM memdb_app")
    op.execute("REVOKE ALL ON ALL SEQUENCES IN SCHEMA memdb FROM memdb_app")
    op.execute("REVOKE ALL ON ALL FUNCTIONS IN SCHEMA memdb FROM memdb_app")
    op.execute("REVOKE USAGE ON SCHEMA memdb FROM memdb_app")
    # The role memdb_app and its membership grant stay: roles are cluster-wide, and the role
    # may serve memdb databases of this cluster that are still at revision 0003 or later.
