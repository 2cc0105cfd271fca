"""a durable job queue: memdb.jobs (row-level security by tenant; on Citus distributed by
tenant, co-located with the memories) and its functions (sql/functions/3xx_*job*.sql)

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-06

See sql/schema/0021_jobs.sql and docs/jobs.md. The downgrade drops the table and the queue's
functions (they are in sql/functions, re-applied after every migration; at revision 0020 they
would stay behind, pointing at a table that is gone).
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file, one_connection_per_node

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0021_jobs.sql"
SCHEMA_SHA256 = "531fb49fbedd65d5296d8474d6a59930203fb09106a3317257019cb045602962"
# The sql/functions functions this revision brought (their guards too, on Citus)
_FUNCTIONS = ("enqueue_job", "claim_jobs", "start_job", "complete_job", "fail_job",
              "cancel_job", "retry_job")


def upgrade() -> None:
    conn = op.get_bind().connection.driver_connection
    one_connection_per_node(conn)
    apply_schema_file(conn, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    one_connection_per_node(op.get_bind().connection.driver_connection)
    for name in _FUNCTIONS:
        for suffix in ("", "__unguarded"):
            op.execute(f"DROP FUNCTION IF EXISTS memdb.{name}{suffix} CASCADE")
    op.execute("DROP TABLE memdb.jobs")
