-- memdb.write_lock_key(p_tenant_name text, p_subject text, p_category text) -> bigint
-- The transaction-level advisory lock key that orders writes to one (tenant, subject,
-- category): memdb.write_memories takes it for every group it writes, and a caller that reads
-- before it writes (the LangGraph store's puts: read the items, then upsert them) takes the
-- same lock first, so the two queue on one key and the last writer wins.
-- Example: SELECT pg_advisory_xact_lock(memdb.write_lock_key('acme', 'alice', 'general'));
CREATE OR REPLACE FUNCTION memdb.write_lock_key(p_tenant_name text, p_subject text,
                                                p_category text)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT hashtextextended(concat_ws(chr(31), p_tenant_name, p_subject, p_category), 0)
$$;
