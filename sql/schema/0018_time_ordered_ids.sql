-- memdb schema, revision 0018 (frozen): time-ordered memory ids. On PostgreSQL 18 and later the
-- default of memdb.memories.id is uuidv7() (ids one backend makes are strictly increasing), as
-- is memdb.new_memory_id(), which memdb's own writes call; before 18 both stay random
-- (gen_random_uuid()). Rankings break equal scores by id: with time-ordered ids they come out
-- in the order the memories were written, the same on every run. Stored ids are kept.
-- alembic/versions/0018_time_ordered_ids.py. One statement: Citus passes it on as text.

DO $$
BEGIN
    IF current_setting('server_version_num')::integer >= 180000 THEN
        ALTER TABLE memdb.memories ALTER COLUMN id SET DEFAULT uuidv7();
    END IF;
END
$$;
