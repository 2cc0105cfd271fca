"""memory lifecycle: memories.status (hypotheses), review_queue, sediment_runs

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0004_lifecycle.sql"
SCHEMA_SHA256 = "373b1c3b26fb1f4893408b010607807d5375f2e3a73aca093a5a7e58adf7437d"


def upgrade() -> None:
    apply_schema_file(op.get_bind().connection.driver_connection, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    op.execute("DROP TABLE memdb.sediment_runs")
    op.execute("DROP TABLE memdb.review_queue")
    op.execute("DROP INDEX memdb.memories_hypothesis_idx")
    op.execute("ALTER TABLE memdb.memories DROP COLUMN status")
