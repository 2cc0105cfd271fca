"""a tenant-wide retrieval trace (subject '*') is readable only by a tenant-wide scope

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-06

See sql/schema/0019_reserved_subject.sql: the row-level-security policy of
memdb.retrieval_traces no longer admits a '*' row to a caller confined to a subject (one that
set memdb.subject = '*' read and deleted every tenant-wide trace of its tenant).
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file, one_connection_per_node

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0019_reserved_subject.sql"
SCHEMA_SHA256 = "b1133f941f033fa5e8fe34ae488d36332bdad180cc9f109ccabfa66142bb2af7"

# The policy of revision 0008, restored by the downgrade.
_POLICY_0008 = """
ALTER POLICY retrieval_traces_isolation ON memdb.retrieval_traces
    USING (tenant = current_setting('memdb.tenant', true)
           AND (coalesce(current_setting('memdb.subject', true), '') = ''
                OR subject = current_setting('memdb.subject', true)))
    WITH CHECK (tenant = current_setting('memdb.tenant', true)
                AND (coalesce(current_setting('memdb.subject', true), '') = ''
                     OR subject = current_setting('memdb.subject', true)))"""


def upgrade() -> None:
    conn = op.get_bind().connection.driver_connection
    one_connection_per_node(conn)
    apply_schema_file(conn, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    one_connection_per_node(op.get_bind().connection.driver_connection)
    op.execute(_POLICY_0008)
