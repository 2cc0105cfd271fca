"""index on memories (tenant, subject, session, created_at, id) for neighbour expansion

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-01
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file, one_connection_per_node

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0016_neighbor_index.sql"
SCHEMA_SHA256 = "a5548c308eb61d7c3d30b62acde917d2136db1ceac32d0b8d9a4b2e06ce1eb4d"


def upgrade() -> None:
    conn = op.get_bind().connection.driver_connection
    one_connection_per_node(conn)
    apply_schema_file(conn, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    one_connection_per_node(op.get_bind().connection.driver_connection)
    op.execute("DROP INDEX memdb.memories_stream_idx")
