"""directory-organized retrieval: memories.tag_version, retrieval_traces

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-29
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0008_traces.sql"
SCHEMA_SHA256 = "2245867ff3b34d68c55021c25232aea398f82e295bdad95f2597fae8d3f85416"


def upgrade() -> None:
    apply_schema_file(op.get_bind().connection.driver_connection, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    op.execute("DROP TABLE memdb.retrieval_traces")
    op.execute("ALTER TABLE memdb.memories DROP COLUMN tag_version")
