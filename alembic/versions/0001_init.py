"""memdb schema: embedding spaces, memories, memory history

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# The frozen table DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0001_init.sql"
SCHEMA_SHA256 = "cce927617d4408a252abaa9916747734af550d1151656a9131795f4daf97c6ab"


def upgrade() -> None:
    apply_schema_file(op.get_bind().connection.driver_connection, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    # Everything memdb owns lives in schema memdb; the vector extension may serve others.
    op.execute("DROP SCHEMA IF EXISTS memdb CASCADE")
