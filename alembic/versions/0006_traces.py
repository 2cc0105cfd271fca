"""directory-organized retrieval: memories.tag_version, retrieval_traces

Revision ID: 0006
Revises: 0004 (becomes 0005 when the documents revision is merged on main)
Create Date: 2026-11-29
"""
from __future__ import annotations

from alembic import op
from memdb.migrations import apply_schema_file

revision = "0006"
down_revision = "0004"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0006_traces.sql"
SCHEMA_SHA256 = "79972ce4887c52337d51fb24fc08fb124180de647dee40a310aa6c37bda06a73"


def upgrade() -> None:
    apply_schema_file(op.get_bind().connection.driver_connection, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    op.execute("DROP TABLE memdb.retrieval_traces")
    op.execute("ALTER TABLE memdb.memories DROP COLUMN tag_version")
