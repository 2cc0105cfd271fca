-- memdb.purge_expired(p_tenant text DEFAULT NULL) -> bigint
-- Deletes every memory whose expires_at has passed (of one tenant, or of all when NULL)
-- and returns how many. Expired rows are already invisible to every read; this frees them.
-- History rows record the deletions with reason 'expired'. Called as the application role
-- (memdb_app), row-level security confines it to the tenant in memdb.tenant even when
-- p_tenant is NULL; purging every tenant is a maintenance job for the admin (the owner).
CREATE OR REPLACE FUNCTION memdb.purge_expired(p_tenant text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    n bigint;
    prev_reason text := current_setting('memdb.reason', true);
BEGIN
    PERFORM memdb.set_local('memdb.reason', 'expired');
    DELETE FROM memdb.memories
    WHERE expires_at <= now() AND (p_tenant IS NULL OR tenant = p_tenant);
    GET DIAGNOSTICS n = ROW_COUNT;
    PERFORM memdb.set_local('memdb.reason', coalesce(prev_reason, ''));
    RETURN n;
END
$$;
