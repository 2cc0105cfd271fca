-- memdb.new_memory_id() -> uuid
-- A new memory's id: time-ordered on PostgreSQL 18 and later (uuidv7(), whose ids one backend
-- makes are strictly increasing), random before 18 (gen_random_uuid(); memdb supports 15+).
-- Rankings break equal scores by id, so with time-ordered ids equal scores come out in the
-- order the memories were written (the same on every run that writes them in the same
-- order), and memories written in one batch, which share created_at, keep their batch order
-- wherever (created_at, id) orders them (neighbour expansion, lists). New ids also land at
-- the right-hand end of the primary key's b-tree instead of on a random page. The column
-- default of memdb.memories.id is uuidv7() on 18 as well (revision 0018).
-- plpgsql: the branch not taken is never parsed, so the function is the same on every
-- version, and a server upgraded to 18 switches over without a migration.
-- Example: SELECT memdb.new_memory_id();  -- 019...-7...: the version digit 7 on PostgreSQL 18
CREATE OR REPLACE FUNCTION memdb.new_memory_id()
RETURNS uuid
LANGUAGE plpgsql VOLATILE PARALLEL SAFE
AS $$
BEGIN
    IF current_setting('server_version_num')::integer >= 180000 THEN
        RETURN uuidv7();
    END IF;
    RETURN gen_random_uuid();
END
$$;
