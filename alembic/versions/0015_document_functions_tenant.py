"""document functions take the tenant: memdb.release_documents_memories and
memdb.release_document_memories get p_tenant first (distributed by it on Citus)

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01

See sql/schema/0015_document_functions_tenant.sql: it drops the old signatures; the new ones
come from sql/functions (re-applied after the migration, and distributed on Citus).
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0015_document_functions_tenant.sql"
SCHEMA_SHA256 = "bb60b9a989bc5c9facc2775f3313641a9d98862c988f8fee37d006cbc83b7ae8"

# The signatures of sql/functions this revision brought. A memdb release at revision 0014
# makes its own (without the tenant) when it migrates (its objects' digest differs).
_FUNCTIONS = (
    "memdb.release_document_memories(text, uuid, uuid[])",
    "memdb.release_documents_memories(text, uuid[], uuid[])",
)


def upgrade() -> None:
    apply_schema_file(op.get_bind().connection.driver_connection, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    for signature in _FUNCTIONS:
        op.execute(f"DROP FUNCTION IF EXISTS {signature}")
