"""graph: entities, their mentions in memories, and relations between them

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-29
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0009_graph.sql"
SCHEMA_SHA256 = "93cdddf0bc5011005513b643bca6444477053097e5a79439d4d1b8b8d833c542"


def upgrade() -> None:
    apply_schema_file(op.get_bind().connection.driver_connection, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    op.execute("DROP TABLE memdb.entity_relations")
    op.execute("DROP TABLE memdb.entity_mentions")
    op.execute("DROP TABLE memdb.entities")
