"""citus distribution: on a Citus coordinator, tables distributed by tenant (co-located with
memdb.memories) and shared registries as reference tables; nothing on plain PostgreSQL

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01

See sql/schema/0014_citus_distribution.sql. The functions taking p_tenant are distributed by
memdb.core.migrations.apply_objects after every migration (they are re-created then). Downgrading
on Citus makes every table local to the coordinator again (undistribute_table, which copies
the rows back) and restores the two ON DELETE SET NULL keys Citus could not hold.
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import (
    CITUS_SCHEMA_FILE,
    apply_objects,
    apply_schema_file,
    has_citus,
    split_statements,
)

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies on Citus (sql/schema/) and its sha256.
SCHEMA_FILE = CITUS_SCHEMA_FILE
SCHEMA_SHA256 = "c4fd15a28cd7aea02a041185b26fecbd47dc1620f6c6c8cb1b8a8bc2ad4f7029"

# Each table back to a plain table on the coordinator: distributed functions first (they are
# co-located with memories); identity columns lose their identity meanwhile (undistribute_table
# refuses them) and get it back after, with their sequence past the largest id; every table
# still in Citus's metadata is undistributed (one call brings back the tables its foreign keys
# connect); then the keys and the role as revision 0013 had them.
_DOWNGRADE = """
SET LOCAL citus.enable_unsafe_triggers = on;
SET LOCAL citus.multi_shard_modify_mode = 'sequential';
DO $$
DECLARE
    r record;
BEGIN  -- the triggers would fire on the rows copied back; apply_objects makes them again
    FOR r IN SELECT t.tgname FROM pg_trigger t
             WHERE t.tgrelid = 'memdb.memories'::regclass AND NOT t.tgisinternal LOOP
        EXECUTE format('DROP TRIGGER %I ON memdb.memories', r.tgname);
    END LOOP;
END
$$;
DELETE FROM pg_catalog.pg_dist_object o
USING pg_catalog.pg_proc p
WHERE o.classid = 'pg_proc'::regclass AND o.objid = p.oid
  AND p.pronamespace = 'memdb'::regnamespace AND o.distribution_argument_index IS NOT NULL;
CREATE TEMP TABLE memdb_0014_identity ON COMMIT DROP AS
    SELECT a.attrelid::regclass::text AS tbl, a.attname AS col, a.attidentity AS kind
    FROM pg_attribute a
    JOIN pg_class c ON c.oid = a.attrelid
    WHERE c.relnamespace = 'memdb'::regnamespace AND c.relkind = 'r' AND a.attidentity <> '';
SET LOCAL citus.enable_ddl_propagation = off;
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT * FROM memdb_0014_identity LOOP
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', r.tbl, r.col);
    END LOOP;
END
$$;
SET LOCAL citus.enable_ddl_propagation = on;
DO $$
DECLARE
    t regclass;
BEGIN
    LOOP
        SELECT d.logicalrelid INTO t
        FROM pg_dist_partition d
        JOIN pg_class c ON c.oid = d.logicalrelid
        WHERE c.relnamespace = 'memdb'::regnamespace
        ORDER BY d.logicalrelid::text
        LIMIT 1;
        EXIT WHEN t IS NULL;
        PERFORM undistribute_table(t, cascade_via_foreign_keys => true);
    END LOOP;
END
$$;
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT * FROM memdb_0014_identity LOOP
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I ADD GENERATED %s AS IDENTITY', r.tbl, r.col,
                       CASE r.kind WHEN 'a' THEN 'ALWAYS' ELSE 'BY DEFAULT' END);
        EXECUTE format('SELECT setval(pg_get_serial_sequence(%L, %L),'
                       ' coalesce(max(%I), 0) + 1, false) FROM %s', r.tbl, r.col, r.col, r.tbl);
    END LOOP;
END
$$;
ALTER TABLE memdb.memories
    ADD CONSTRAINT memories_superseded_by_fkey FOREIGN KEY (tenant, superseded_by)
        REFERENCES memdb.memories (tenant, id) ON DELETE SET NULL (superseded_by);
ALTER TABLE memdb.review_queue
    ADD CONSTRAINT review_queue_memory_id_fkey FOREIGN KEY (tenant, memory_id)
        REFERENCES memdb.memories (tenant, id) ON DELETE SET NULL (memory_id);
ALTER ROLE memdb_app RESET citus.allow_nested_distributed_execution;
ALTER ROLE memdb_app NOLOGIN;
"""


def upgrade() -> None:
    driver = op.get_bind().connection.driver_connection
    if has_citus(driver):
        apply_schema_file(driver, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    driver = op.get_bind().connection.driver_connection
    if has_citus(driver):
        for statement in split_statements(_DOWNGRADE):  # Citus passes DDL on as its text
            driver.execute(statement)
        # undistribute_table makes each table anew: functions taking its row type went with
        # the old one (history_row, bump_memory...); the same sql/ objects serve revision 0013
        apply_objects(driver)
