"""per-field vectors of LangGraph store items: memdb.item_vectors

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-06

See sql/schema/0020_item_vectors.sql: one row per text an item's index fields extract, with
its vector, beside the memory holding the item (row-level security by tenant and subject).
On a Citus coordinator the table is distributed by tenant, co-located with memdb.memories.
"""
from __future__ import annotations

from alembic import op
from memdb.migrations import apply_schema_file, has_citus, one_connection_per_node

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0020_item_vectors.sql"
SCHEMA_SHA256 = "809fde143fdda01786ee14098657c07e1dac59a19b4cb70d6b337bdf61425e84"

_DISTRIBUTE = ("SELECT create_distributed_table('memdb.item_vectors', 'tenant', "
               "colocate_with => 'memdb.memories')")


def upgrade() -> None:
    conn = op.get_bind().connection.driver_connection
    one_connection_per_node(conn)
    apply_schema_file(conn, SCHEMA_FILE, SCHEMA_SHA256)
    if has_citus(conn):
        conn.execute(_DISTRIBUTE)


def downgrade() -> None:
    one_connection_per_node(op.get_bind().connection.driver_connection)
    op.execute("DROP TABLE memdb.item_vectors")
