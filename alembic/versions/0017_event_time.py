"""a memory's event time at write time: memories.event_time (memdb.time_range(content,
valid_from)) and memories.names_time (the content carries a time), kept by the
memories_before_write trigger and read by the search option temporal

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-02

See sql/schema/0017_event_time.sql. Stored memories are filled here: the functions of this
release are applied first (memdb.time_range, memdb.time_words and the trigger that derives
the columns; a database at 0016 may predate them), then one UPDATE sets names_time to NULL on
the memories whose content carries a time, which the trigger takes as "derive both again" (no
version, no history row); the rest keep the defaults (NULL, false), already right, and are not
rewritten (a rewritten row costs an entry in every index, the HNSW one included). It resolves
every memory's text once: most text is rejected by one LIKE ANY (docs/retrieval.md has the
measured cost per 100,000 memories). A database without memories skips both steps (the
functions come after the migration anyway).
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_objects, apply_schema_file, one_connection_per_node

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0017_event_time.sql"
SCHEMA_SHA256 = "5f5e0701b04e52c0e58981e68cee907826935b70a6ae0d089baa5cb2099bb776"

# Stored memories: only those whose content carries a time are rewritten (the others keep the
# columns' defaults, NULL and false, which are already right); setting names_time to NULL
# makes the trigger derive both columns.
BACKFILL = ("UPDATE memdb.memories SET names_time = NULL"
            " WHERE memdb.time_range(content, valid_from) IS NOT NULL OR memdb.time_words(content)")
# memdb.temporal_boost over the content, before this revision.
_OLD_FUNCTION = "memdb.temporal_boost(text, timestamptz, boolean, tstzrange, double precision)"
# The signatures of sql/functions this revision brought. A memdb release at revision 0016
# makes its own (temporal_boost over the content) when it migrates (its objects' digest differs).
_FUNCTIONS = (
    "memdb.temporal_boost(tstzrange, boolean, timestamptz, boolean, tstzrange, double precision)",
    "memdb.time_words(text)",
)


def upgrade() -> None:
    conn = op.get_bind().connection.driver_connection
    one_connection_per_node(conn)
    apply_schema_file(conn, SCHEMA_FILE, SCHEMA_SHA256)
    conn.execute(f"DROP FUNCTION IF EXISTS {_OLD_FUNCTION}")
    if conn.execute("SELECT EXISTS (SELECT 1 FROM memdb.memories)").fetchone()[0]:
        apply_objects(conn)
        conn.execute(BACKFILL)


def downgrade() -> None:
    conn = op.get_bind().connection.driver_connection
    one_connection_per_node(conn)
    for signature in _FUNCTIONS:
        conn.execute(f"DROP FUNCTION IF EXISTS {signature}")
    conn.execute("ALTER TABLE memdb.memories DROP COLUMN event_time, DROP COLUMN names_time")
