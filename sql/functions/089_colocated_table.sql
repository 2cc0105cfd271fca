-- memdb.colocated_table(p_trigger_table text, p_table text) -> text
-- The table a trigger on memdb.memories writes, as a qualified, quoted name, and the row
-- expression of its transition tables. p_trigger_table is the trigger's TG_TABLE_NAME.
-- On plain PostgreSQL (and on a Citus coordinator's own table) that is 'memories', and the
-- answer is memdb.<p_table>, with no query at all. On a Citus worker the trigger fires on a
-- shard, memories_<shardid>: the answer is the shard of memdb.<p_table> co-located with it
-- (same hash range, so on this node and holding the rows of exactly the same tenants). A
-- trigger there must not write the distributed table: that would be a distributed query
-- nested inside a shard's query, which Citus refuses, and its transition tables (new_rows,
-- old_rows) cannot travel to another node.
CREATE OR REPLACE FUNCTION memdb.colocated_table(p_trigger_table text, p_table text)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_shard  bigint := substring(p_trigger_table FROM '^memories_([0-9]+)$')::bigint;
    v_target text;
BEGIN
    IF p_trigger_table = 'memories' THEN
        RETURN format('memdb.%I', p_table);
    END IF;
    IF v_shard IS NOT NULL THEN  -- only Citus names tables so; its catalog exists then
        EXECUTE 'SELECT shard_name($1::regclass, s2.shardid)
                 FROM pg_dist_shard s1
                 JOIN pg_dist_shard s2 ON s2.logicalrelid = $1::regclass
                                      AND s2.shardminvalue = s1.shardminvalue
                 WHERE s1.shardid = $2'
            INTO v_target USING format('memdb.%I', p_table), v_shard;
    END IF;
    IF v_target IS NULL THEN
        RAISE EXCEPTION 'memdb.colocated_table: no table % beside %', p_table, p_trigger_table;
    END IF;
    RETURN v_target;
END
$$;
