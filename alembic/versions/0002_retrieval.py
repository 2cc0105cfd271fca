"""retrieval engine: BM25 statistics, per-subject usage, trigram index

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""
from __future__ import annotations

from alembic import op
from memdb.migrations import apply_schema_file

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# The frozen table DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0002_retrieval.sql"
SCHEMA_SHA256 = "6957a9be7b8190137f6b6f901bf05e51311e00e7d36e79ecd9c7381591389671"


def upgrade() -> None:
    apply_schema_file(op.get_bind().connection.driver_connection, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS memories_bm25_insert ON memdb.memories")
    op.execute("DROP TRIGGER IF EXISTS memories_bm25_update ON memdb.memories")
    op.execute("DROP TRIGGER IF EXISTS memories_bm25_delete ON memdb.memories")
    op.execute("DROP TRIGGER IF EXISTS memories_bm25_truncate ON memdb.memories")
    op.execute("DROP INDEX IF EXISTS memdb.memories_content_trgm_idx")
    op.execute("DROP TABLE IF EXISTS memdb.memory_usage")
    op.execute("DROP TABLE IF EXISTS memdb.bm25_stats")
    op.execute("DROP TABLE IF EXISTS memdb.bm25_terms")
