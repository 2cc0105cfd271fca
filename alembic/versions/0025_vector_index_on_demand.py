"""an embedding space's HNSW index is built when a search could use it (memdb.hnsw_min_rows
memories in the database, default 10000), not when the space is registered

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-06

See sql/functions/051_ensure_vector_index.sql: memdb.search_vector ranks exactly while at most
10,000 memories pass a search's filter, so a smaller database never reads the index and
keeping it cost every write its HNSW insertion. No table changes. On plain PostgreSQL the
upgrade drops the index of every space while the database holds fewer memories than the
threshold (the write that brings it there builds it again); on Citus nothing changes (the index
is built with the space there). The downgrade builds every space's missing index, as the memdb
of revision 0024 expects one from the space's registration on.
"""
from __future__ import annotations

from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

_DROP_UNUSED = """
DO $$
DECLARE
    v_setting text := nullif(btrim(current_setting('memdb.hnsw_min_rows', true)), '');
    v_min bigint := CASE WHEN v_setting ~ '^[0-9]{1,12}$' THEN v_setting::bigint ELSE 10000 END;
    r record;
BEGIN
    IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL
       OR (SELECT coalesce(sum(s.doc_count), 0) FROM memdb.bm25_stats s) >= v_min THEN
        RETURN;
    END IF;
    FOR r IN SELECT es.id FROM memdb.embedding_spaces es ORDER BY es.id LOOP
        EXECUTE format('DROP INDEX IF EXISTS memdb.%I', 'memories_hnsw_space_' || r.id);
    END LOOP;
END
$$"""

_BUILD_ALL = """
DO $$
DECLARE
    v_ext text := (SELECT n.nspname FROM pg_catalog.pg_extension e
                   JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
                   WHERE e.extname = 'vector');
    r record;
BEGIN
    FOR r IN SELECT es.id, es.dims FROM memdb.embedding_spaces es ORDER BY es.id LOOP
        EXECUTE format(
            'CREATE INDEX IF NOT EXISTS %I ON memdb.memories USING hnsw ((embedding::%I.vector(%s)) %I.vector_cosine_ops) WHERE space_id = %s',
            'memories_hnsw_space_' || r.id, v_ext, r.dims, v_ext, r.id);
    END LOOP;
END
$$"""


def upgrade() -> None:
    op.execute(_DROP_UNUSED)


def downgrade() -> None:
    op.execute(_BUILD_ALL)
