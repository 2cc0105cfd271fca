"""retrieval engine: BM25 statistics, per-subject usage, trigram index

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# The frozen table DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0002_retrieval.sql"
SCHEMA_SHA256 = "57abd7707b834d280b0ba7a72ffef8eb39dc35b1a604e73dfdca229d1900ff00"


def upgrade() -> None:
    apply_schema_file(op.get_bind().connection.driver_connection, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS memories_bm25_insert ON memdb.memories")
    op.execute("DROP TRIGGER IF EXISTS memories_bm25_update ON memdb.memories")
    op.execute("DROP TRIGGER IF EXISTS memories_bm25_delete ON memdb.memories")
    op.execute("DROP TRIGGER IF EXISTS memories_bm25_truncate ON memdb.memories")
    op.execute("DROP INDEX IF EXISTS memdb.memories_content_trgm_idx")
    op.execute("ALTER TABLE memdb.memories DROP COLUMN IF EXISTS doc_len")
    op.execute("ALTER TABLE memdb.memories ALTER COLUMN embedding SET STORAGE EXTERNAL, "
               "ALTER COLUMN tsv SET STORAGE EXTENDED")
    op.execute("DROP TABLE IF EXISTS memdb.memory_usage")
    op.execute("DROP TABLE IF EXISTS memdb.bm25_stats")
    op.execute("DROP TABLE IF EXISTS memdb.bm25_terms")
