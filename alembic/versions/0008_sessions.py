"""sessions: conversation buffer, running summary and working state per session

Revision ID: 0008
Revises: 0006 (relinked to 0007 when that revision lands on main)
Create Date: 2026-11-29
"""
from __future__ import annotations

from alembic import op
from memdb.migrations import apply_schema_file

revision = "0008"
down_revision = "0006"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0008_sessions.sql"
SCHEMA_SHA256 = "63c579941c86fd80d5a23c2b2bed4b913deec28e922cd35482389a3cba6bd6df"


def upgrade() -> None:
    apply_schema_file(op.get_bind().connection.driver_connection, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    op.execute("DROP TABLE memdb.session_messages")
    op.execute("DROP TABLE memdb.sessions")
