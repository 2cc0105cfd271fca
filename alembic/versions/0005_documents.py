"""knowledge ingestion: documents, memories.document_id, document_chunks

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-29
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0005_documents.sql"
SCHEMA_SHA256 = "5fa2b0405f191322a6cbfc7e6404b89af1e9ffa790e621d690d2b7a0e924d485"


def upgrade() -> None:
    apply_schema_file(op.get_bind().connection.driver_connection, SCHEMA_FILE, SCHEMA_SHA256)


# Functions of sql/functions/ that exist for these tables (one takes a documents row).
_FUNCTIONS = (
    "memdb.prune_documents(text, text[], text[], boolean)",
    "memdb.remove_documents(text, text[])",
    "memdb.known_chunks(text, jsonb, text[], text[], integer)",
    "memdb.ingest_document(text, jsonb, jsonb, vector[], integer)",
    "memdb.release_document_memories(uuid, uuid[])",
    "memdb.chunk_provenance(memdb.documents, integer, text[], integer, integer, integer, integer)",
    "memdb.current_memory_id(text, text, text, text, text, bytea)",
)


def downgrade() -> None:
    for signature in _FUNCTIONS:
        op.execute(f"DROP FUNCTION IF EXISTS {signature}")
    # A document's chunks go with it, as its ON DELETE CASCADE would take them.
    op.execute("DROP TABLE memdb.document_chunks")
    op.execute("DELETE FROM memdb.memories WHERE document_id IS NOT NULL")
    op.execute("DROP INDEX memdb.memories_document_idx")
    op.execute("ALTER TABLE memdb.memories DROP COLUMN document_id")
    op.execute("DROP TABLE memdb.documents")
