"""app-role grants: no access to BM25 statistics, append-only history, no sequences

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-30
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0010_app_grants.sql"
SCHEMA_SHA256 = "e0526ac329c165eacad2751aabb1bf084e0a60c3f9f59f45ade71089e4754c35"


def upgrade() -> None:
    apply_schema_file(op.get_bind().connection.driver_connection, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    # exactly the grants revisions 0003 gave (the functions stay as sql/ has them: the
    # SECURITY DEFINER ones work under either set of grants)
    op.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON memdb.bm25_terms, memdb.bm25_stats"
               " TO memdb_app")
    op.execute("GRANT UPDATE, DELETE ON memdb.memory_history TO memdb_app")
    op.execute("GRANT USAGE, SELECT ON SEQUENCE memdb.embedding_spaces_id_seq,"
               " memdb.memory_history_id_seq TO memdb_app")
