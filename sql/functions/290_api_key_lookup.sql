-- memdb.api_key_lookup(p_sha256 bytea)
--     -> TABLE(id bigint, key_id text, tenant text, subject text, is_admin boolean, name text)
-- The binding of the API key whose sha256 is p_sha256 (the HTTP door hashes the presented key
-- and asks here): its tenant and optional subject, or is_admin for an admin key. No row: no such
-- key, or it was revoked. Runs as its owner (SECURITY DEFINER): the application role has no
-- privilege on memdb.api_keys and so can never read a stored hash; it can only ask whether the
-- hash of a key it holds is a live key. The lookup is by the unique hash (an index probe; a
-- sha256 preimage is what would have to be guessed). Refreshes last_used_at at most once a
-- minute, so a busy key does not write on every request.
CREATE OR REPLACE FUNCTION memdb.api_key_lookup(p_sha256 bytea)
RETURNS TABLE (id bigint, key_id text, tenant text, subject text, is_admin boolean, name text)
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_sha256 IS NULL OR length(p_sha256) <> 32 THEN
        RETURN;
    END IF;
    UPDATE memdb.api_keys k SET last_used_at = now()
     WHERE k.secret_sha256 = p_sha256 AND k.revoked_at IS NULL
       AND (k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute');
    RETURN QUERY
        SELECT k.id, k.key_id, k.tenant, k.key_subject, k.is_admin, k.name
          FROM memdb.api_keys k
         WHERE k.secret_sha256 = p_sha256 AND k.revoked_at IS NULL;
END
$$;
