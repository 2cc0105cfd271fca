"""time-ordered memory ids: on PostgreSQL 18 and later memories.id defaults to uuidv7(), as
memdb.new_memory_id() (memdb's own writes) returns; random before 18

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-02

See sql/schema/0018_time_ordered_ids.sql. Rankings break equal scores by id; with time-ordered
ids they come out in the order the memories were written, so a search gives the same ranking
on every run that wrote the same memories in the same order (with random ids it did not).
Stored ids are kept (an id is a memory's address): only new memories get time-ordered ones.
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file, one_connection_per_node

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0018_time_ordered_ids.sql"
SCHEMA_SHA256 = "0a4e1e5b5176a3c74dedc381191584af782c3f0e36b914a2788a2ce1271b7ec2"
# The sql/functions function this revision brought (a memdb release at revision 0017 makes
# its writes' ids with gen_random_uuid() when it migrates: its objects' digest differs).
_FUNCTION = "memdb.new_memory_id()"


def upgrade() -> None:
    conn = op.get_bind().connection.driver_connection
    one_connection_per_node(conn)
    apply_schema_file(conn, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    one_connection_per_node(op.get_bind().connection.driver_connection)
    op.execute(f"DROP FUNCTION IF EXISTS {_FUNCTION}")
    op.execute("ALTER TABLE memdb.memories ALTER COLUMN id SET DEFAULT gen_random_uuid()")
