"""a job belongs to the subject its payload names: memdb.jobs.subject (generated) and a
row-level-security policy that confines a caller with memdb.subject set to its subject's jobs

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-06

See sql/schema/0024_job_subjects.sql and docs/isolation.md: the policy of revision 0021
admitted every job of the caller's tenant, so SQL run by the application role with
memdb.subject set read the other subjects' remembered turns and queued documents. claim_jobs
and start_job return the job's subject too (their old result shape is dropped). The downgrade
restores that policy, drops the column and those two functions.
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file, one_connection_per_node

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0024_job_subjects.sql"
SCHEMA_SHA256 = "c18a3a3204ceffd81fa0a66cad0d15d3ca79566d3d61038741879ae2218074ed"

# The policy of revision 0021, restored by the downgrade.
_POLICY_0021 = """
ALTER POLICY jobs_isolation ON memdb.jobs
    USING (tenant = current_setting('memdb.tenant', true))
    WITH CHECK (tenant = current_setting('memdb.tenant', true))"""


# The functions whose result gains the job's subject at this revision: their old shape is
# dropped on the way up (sql/functions makes the new one at head), the new one on the way down
# (the memdb of revision 0023 makes its own again; CREATE OR REPLACE cannot change a result).
_RESHAPED = ("claim_jobs", "start_job")


def _drop_reshaped() -> None:
    for name in _RESHAPED:
        for suffix in ("", "__unguarded"):  # start_job's guard and body (990_guard_...)
            op.execute(f"DROP FUNCTION IF EXISTS memdb.{name}{suffix} CASCADE")


def upgrade() -> None:
    conn = op.get_bind().connection.driver_connection
    one_connection_per_node(conn)
    apply_schema_file(conn, SCHEMA_FILE, SCHEMA_SHA256)
    _drop_reshaped()


def downgrade() -> None:
    one_connection_per_node(op.get_bind().connection.driver_connection)
    _drop_reshaped()
    op.execute(_POLICY_0021)
    op.execute("ALTER TABLE memdb.jobs DROP COLUMN subject")
