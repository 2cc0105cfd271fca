"""index on memories.superseded_by (deletes no longer scan the table for referencing rows)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-29
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0006_superseded_index.sql"
SCHEMA_SHA256 = "1e9c781c309123be696ae97e7c4ef118adc5bc6fe4cbe29e9ac9059884738d35"


def upgrade() -> None:
    apply_schema_file(op.get_bind().connection.driver_connection, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    op.execute("DROP INDEX memdb.memories_superseded_by_idx")
