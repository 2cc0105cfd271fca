"""sessions: conversation buffer, running summary and working state per session

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-29
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0007_sessions.sql"
SCHEMA_SHA256 = "d99a9103e741a87ab2c6c50a1db60eec526d2d3b6101f82f302de6fd3028e029"


def upgrade() -> None:
    apply_schema_file(op.get_bind().connection.driver_connection, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    op.execute("DROP TABLE memdb.session_messages")
    op.execute("DROP TABLE memdb.sessions")
