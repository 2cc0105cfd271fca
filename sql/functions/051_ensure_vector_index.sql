-- memdb.hnsw_min_rows() -> bigint
-- The setting memdb.hnsw_min_rows: how many current memories the database holds before memdb
-- builds an embedding space's HNSW index (default 10000; 0: with the space). A value that is
-- not a whole number raises invalid_parameter_value (22023).
-- Example: SELECT memdb.hnsw_min_rows();
CREATE OR REPLACE FUNCTION memdb.hnsw_min_rows()
RETURNS bigint
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_setting text := nullif(btrim(current_setting('memdb.hnsw_min_rows', true)), '');
BEGIN
    IF v_setting IS NOT NULL AND v_setting !~ '^[0-9]{1,12}$' THEN
        RAISE EXCEPTION 'memdb.hnsw_min_rows must be a whole number of memories (0 or more), got "%"', v_setting
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN coalesce(v_setting::bigint, 10000);
END
$$;

-- memdb.ensure_vector_index(p_space_id integer, p_force boolean DEFAULT false) -> boolean
-- The HNSW index of an embedding space (memories_hnsw_space_{id}: a partial expression index
-- on embedding::vector(dims), cosine), built when a search could use it. memdb.search_vector
-- ranks a search's rows exactly (no index) while at most 10,000 memories pass its filter, so a
-- database holding fewer memories than that never reads the index, and keeping it would cost
-- every write its HNSW insertion (1.4 ms of a 3.95 ms add at 1,000 memories,
-- benchmarks/call_breakdown.py). So the index is built once the database holds
-- memdb.hnsw_min_rows() current memories (a setting, default 10000; 0 builds it with the space):
-- memdb.write_memories and memdb.ingest_documents call this after their inserts, and
-- memdb.ensure_embedding_space when it registers a space. The write that crosses the
-- threshold builds it (about 2 s at 10,000 memories on 2 cores; other writers wait for it,
-- searches do not), and every write after it maintains it.
-- Returns whether the index exists after the call: true at once when it does (a catalog
-- look-up); false while the database holds fewer memories than the threshold, on a Citus
-- coordinator or worker (there the space's index is built when the space is registered: a
-- build inside a distributed write would nest DDL in it), and when the build had to give way:
-- the table in use by the calling statement itself, or another transaction writing it at
-- that moment (the build takes its lock without waiting: waiting for writers that queue behind
-- this transaction's own locks would deadlock). Then a NOTICE says so and the next write tries
-- again; the write itself goes on.
-- p_force: build it now whatever the count, waiting for the writers inside the table (the
-- admin's call, e.g. before a bulk import; a caller that row-level security confines gets
-- insufficient_privilege, 42501).
-- SECURITY DEFINER: the application role cannot create indexes; this runs as the schema owner
-- with a fixed search_path and every name qualified.
-- Example: SELECT memdb.ensure_vector_index(1, true);
CREATE OR REPLACE FUNCTION memdb.ensure_vector_index(p_space_id integer, p_force boolean DEFAULT false)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_index text := 'memories_hnsw_space_' || p_space_id;
    v_min bigint;
    v_rows bigint;
    v_dims integer;
    v_ext text;
BEGIN
    IF p_space_id IS NULL THEN
        RETURN false;
    END IF;
    IF to_regclass('memdb.' || v_index) IS NOT NULL THEN
        RETURN true;
    END IF;
    v_min := memdb.hnsw_min_rows();
    SELECT es.dims INTO v_dims FROM memdb.embedding_spaces es WHERE es.id = p_space_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no embedding space %', p_space_id USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_force AND memdb.confine(NULL, NULL) IS NULL THEN  -- a confined caller: not the admin
        RAISE EXCEPTION 'only the admin may build the HNSW index of embedding space % now '
                        '(memdb builds it by itself once the database holds % memories)', p_space_id, v_min
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL AND NOT p_force THEN
        RETURN false;  -- Citus: built when the space is registered (memdb.ensure_embedding_space)
    END IF;
    IF NOT p_force THEN
        SELECT coalesce(sum(s.doc_count), 0) INTO v_rows FROM memdb.bm25_stats s;
        IF v_rows < v_min THEN
            RETURN false;
        END IF;
    END IF;
    SELECT n.nspname INTO v_ext
    FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
    WHERE e.extname = 'vector';
    BEGIN
        -- NOWAIT: a build that waited for the writers now inside memdb.memories could wait in
        -- a cycle with them (they queue behind this transaction's locks, e.g. its tenant's
        -- BM25 statistics); while any of them is there, a later write builds it instead
        IF p_force THEN
            LOCK TABLE memdb.memories IN SHARE MODE;  -- the admin's call: waits for the writers
        ELSE
            LOCK TABLE memdb.memories IN SHARE MODE NOWAIT;
        END IF;
        EXECUTE format(
            'CREATE INDEX IF NOT EXISTS %I ON memdb.memories USING hnsw ((embedding::%I.vector(%s)) %I.vector_cosine_ops) WHERE space_id = %s',
            v_index, v_ext, v_dims, v_ext, p_space_id);
    EXCEPTION WHEN object_in_use OR lock_not_available THEN
        RAISE NOTICE 'memdb: the HNSW index of embedding space % was not built now (%); a later write builds it',
            p_space_id, SQLERRM;
        RETURN false;
    END;
    RETURN true;
END
$$;
