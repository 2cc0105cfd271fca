"""memdb.search_hybrid takes its keyword routes' rows (p_keyword_routes), computed ahead by
memdb.search_keyword_routes while the query is being embedded

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-07

See sql/schema/0027_keyword_routes_ahead.sql: it drops the six-argument search_hybrid; the
seven-argument one, search_keyword_routes and its helpers come from sql/functions (re-applied
after the migration). No table changes. The downgrade drops what this revision brought; a memdb
release at revision 0026 makes its own search_hybrid when it migrates (its objects' digest
differs).
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0027_keyword_routes_ahead.sql"
SCHEMA_SHA256 = "6e209e139c0a5ebf520820a0189f128dacec775cef24a3093a4983022e9990a8"

# The functions of sql/functions this revision brought, each guarded one with its body
# (memdb.guard_tenant_functions).
_FUNCTIONS = (
    "memdb.search_hybrid(text, text, vector, integer, jsonb, jsonb, jsonb)",
    "memdb.search_hybrid__unguarded(text, text, vector, integer, jsonb, jsonb, jsonb)",
    "memdb.search_keyword_routes(text, text, integer, jsonb, jsonb)",
    "memdb.search_keyword_routes__unguarded(text, text, integer, jsonb, jsonb)",
    "memdb.keyword_route_rows(text, text, integer, jsonb, jsonb, boolean, boolean, boolean,"
    " text[], double precision[])",
    "memdb.keyword_route_rows__unguarded(text, text, integer, jsonb, jsonb, boolean, boolean,"
    " boolean, text[], double precision[])",
    "memdb.keyword_routes_key(text, text, integer, jsonb, jsonb)",
    "memdb.keyword_routes_key__unguarded(text, text, integer, jsonb, jsonb)",
    "memdb.search_depth(integer, jsonb)",
)


def upgrade() -> None:
    apply_schema_file(op.get_bind().connection.driver_connection, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    for signature in _FUNCTIONS:
        op.execute(f"DROP FUNCTION IF EXISTS {signature}")
