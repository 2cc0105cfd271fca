"""a job belongs to the subject its payload names: memdb.jobs.subject (generated) and a
row-level-security policy that confines a caller with memdb.subject set to its subject's jobs

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-06

See sql/schema/0024_job_subjects.sql and docs/isolation.md: the policy of revision 0021
admitted every job of the caller's tenant, so SQL run by the application role with
memdb.subject set read the other subjects' remembered turns and queued documents. The
downgrade restores that policy and drops the column.
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


def upgrade() -> None:
    conn = op.get_bind().connection.driver_connection
    one_connection_per_node(conn)
    apply_schema_file(conn, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    one_connection_per_node(op.get_bind().connection.driver_connection)
    op.execute(_POLICY_0021)
    op.execute("ALTER TABLE memdb.jobs DROP COLUMN subject")
