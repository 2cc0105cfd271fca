"""schedules of recurring jobs: memdb.job_schedules (row-level security by tenant; on Citus
distributed by tenant, co-located with the memories) and memdb.enqueue_due_schedules

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-06

See sql/schema/0023_job_schedules.sql and docs/jobs.md (schedules). The downgrade drops the
table and its function (sql/functions is re-applied after every migration; at revision 0022
the function would stay behind, pointing at a table that is gone).
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file, one_connection_per_node

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0023_job_schedules.sql"
SCHEMA_SHA256 = "d7b73084429ba6d62a6a2539590b93853dc375baa7e2c42cb924843023038278"


def upgrade() -> None:
    conn = op.get_bind().connection.driver_connection
    one_connection_per_node(conn)
    apply_schema_file(conn, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    one_connection_per_node(op.get_bind().connection.driver_connection)
    op.execute("DROP FUNCTION IF EXISTS memdb.enqueue_due_schedules CASCADE")
    op.execute("DROP TABLE memdb.job_schedules")
