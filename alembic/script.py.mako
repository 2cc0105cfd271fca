"""${message}

Revision ID: ${up_revision}
Revises: ${down_revision | comma,n}
Create Date: ${create_date}
"""
from __future__ import annotations

from alembic import op

from memdb.migrations import apply_schema_file

revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}
branch_labels = ${repr(branch_labels)}
depends_on = ${repr(depends_on)}

# The frozen table DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "NNNN_name.sql"
SCHEMA_SHA256 = ""


def upgrade() -> None:
    apply_schema_file(op.get_bind().connection.driver_connection, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    ${downgrades if downgrades else "raise NotImplementedError"}
