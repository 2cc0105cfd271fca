"""per-field vectors of LangGraph store items: memdb.item_vectors

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-06

See sql/schema/0020_item_vectors.sql: one row per text an item's index fields extract, with
its vector, beside the memory holding the item (row-level security by tenant and subject).
On a Citus coordinator the file runs one statement at a time (Citus passes DDL on to the
workers as its text) and memdb.item_vectors is distributed by tenant, co-located with
memdb.memories, right after it is made (its foreign keys need that).
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file, one_connection_per_node

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0020_item_vectors.sql"
SCHEMA_SHA256 = "3348a1e752383ebd66089bcf4b5e3d4be22bc36a148dc38460b6e667053ba543"


def upgrade() -> None:
    conn = op.get_bind().connection.driver_connection
    one_connection_per_node(conn)
    apply_schema_file(conn, SCHEMA_FILE, SCHEMA_SHA256, distribute=("memdb.item_vectors",))


def downgrade() -> None:
    one_connection_per_node(op.get_bind().connection.driver_connection)
    op.execute("DROP TABLE memdb.item_vectors")
