"""API keys of the HTTP door: memdb.api_keys (hashed keys bound to a tenant, or admin keys)

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0012_api_keys.sql"
SCHEMA_SHA256 = "d93f737506a467e79b4767fff2a05245c62acbb1ccfb3216f1225172d13b020b"


def upgrade() -> None:
    apply_schema_file(op.get_bind().connection.driver_connection, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    # the lookup function (sql/functions) cannot work without its table: it goes too, and is
    # re-applied with the other functions when the database is upgraded to head again
    op.execute("DROP FUNCTION IF EXISTS memdb.api_key_lookup(bytea)")
    op.execute("DROP TABLE memdb.api_keys")
