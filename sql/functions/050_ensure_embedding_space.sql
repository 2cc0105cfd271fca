-- memdb.ensure_embedding_space(p_model text, p_dims integer, p_distance text DEFAULT 'cosine') -> integer
-- Registers an embedding model (or finds it) and returns its space id. The space's HNSW cosine
-- index (memories_hnsw_space_{id}, a partial expression index on embedding::vector(dims)) is
-- built by memdb.ensure_vector_index: at the first registration when the database already holds
-- memdb.hnsw_min_rows memories (default 10000; 0: always) or is a Citus database, else by the
-- write that brings it there. A model registered before with other dimensions raises
-- MD001 (dimension mismatch): vectors of different models never share a space.
-- Only the admin registers a new space: each one adds an index on memdb.memories, the table
-- every tenant shares (its build locks out their writes, and every index slows every insert).
-- A caller that row-level security confines (memdb_app, or any login that is not a superuser,
-- BYPASSRLS or a member of the table owner: the test of memdb.confine) may look up a registered
-- model and gets its id, but for a model not yet registered gets insufficient_privilege (42501)
-- naming the model: the admin registers it (`memdb migrate` with that embedder configured
-- does, or this function called by the admin).
-- SECURITY DEFINER: the application role may only read the registry and cannot create indexes;
-- this function runs as the schema owner, with a fixed search_path and every name qualified
-- (pgvector's type and operator class in the extension's own schema).
CREATE OR REPLACE FUNCTION memdb.ensure_embedding_space(p_model text, p_dims integer,
                                                        p_distance text DEFAULT 'cosine')
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s memdb.embedding_spaces;
BEGIN
    IF p_model IS NULL OR btrim(p_model) = '' THEN
        RAISE EXCEPTION 'embedding model name must not be empty' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_dims IS NULL OR p_dims < 1 OR p_dims > 2000 THEN
        RAISE EXCEPTION 'embedding dimensions must be between 1 and 2000 (HNSW limit), got %', p_dims
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT * INTO s FROM memdb.embedding_spaces WHERE model = p_model;
    IF NOT FOUND THEN
        PERFORM pg_advisory_xact_lock(hashtext('memdb.embedding_spaces'));
        SELECT * INTO s FROM memdb.embedding_spaces WHERE model = p_model;
    END IF;
    IF FOUND THEN
        IF s.dims <> p_dims OR s.distance <> p_distance THEN
            RAISE EXCEPTION 'embedding space "%" holds % dimensions (%), not % (%)',
                p_model, s.dims, s.distance, p_dims, p_distance
                USING ERRCODE = 'MD001';
        END IF;
        RETURN s.id;
    END IF;
    IF memdb.confine(NULL, NULL) IS NULL THEN  -- a confined caller: no tenant is NULL's tenant
        RAISE EXCEPTION 'embedding model "%" (% dimensions) has no embedding space in this database, '
                        'and only the admin may register one (it builds an index on the shared '
                        'memories table): run `memdb migrate` as the admin with this embedder '
                        'configured', p_model, p_dims
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    INSERT INTO memdb.embedding_spaces (model, dims, distance)
    VALUES (p_model, p_dims, p_distance)
    RETURNING * INTO s;
    -- Citus: now, on the coordinator (a build inside a distributed write would nest DDL in it)
    PERFORM memdb.ensure_vector_index(s.id, to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL);
    RETURN s.id;
END
$$;
