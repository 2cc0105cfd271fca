"""perceptual memory: memories.kind 'perceptual' and memdb.percepts (the image, audio or
video a memory's text was derived from)

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-06

See sql/schema/0022_percepts.sql. On a Citus coordinator the file runs one statement at a time
(Citus passes DDL on to the workers as its text) and memdb.percepts is distributed by tenant,
co-located with memdb.memories, right after it is made (its foreign key needs that). The
downgrade drops the table and keeps the perceptual memories as semantic ones (their text).
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file, one_connection_per_node

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0022_percepts.sql"
SCHEMA_SHA256 = "5cb43f064b7744d29c710b3edd943522641d006833031cf34b3fcd6ef1374c87"

_DOWNGRADE = (
    "DROP TABLE memdb.percepts",
    "UPDATE memdb.memories SET kind = 'semantic' WHERE kind = 'perceptual'",
    "ALTER TABLE memdb.memories DROP CONSTRAINT memories_kind_check",
    "ALTER TABLE memdb.memories ADD CONSTRAINT memories_kind_check"
    " CHECK (kind IN ('working', 'episodic', 'semantic', 'procedural'))",
)


def upgrade() -> None:
    conn = op.get_bind().connection.driver_connection
    one_connection_per_node(conn)
    apply_schema_file(conn, SCHEMA_FILE, SCHEMA_SHA256, distribute=("memdb.percepts",))


def downgrade() -> None:
    conn = op.get_bind().connection.driver_connection
    one_connection_per_node(conn)
    for statement in _DOWNGRADE:
        conn.execute(statement)
