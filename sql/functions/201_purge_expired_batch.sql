-- memdb.purge_expired_batch(p_tenant text DEFAULT NULL, p_limit integer DEFAULT 1000,
--                           p_dry_run boolean DEFAULT false) -> SETOF uuid
-- Bounded memdb.purge_expired for scheduled maintenance: deletes at most p_limit memories whose
-- expires_at has passed (oldest expiry first; of one tenant, or of every tenant visible to the
-- caller when NULL) and returns their ids. Rows locked by other transactions are skipped.
-- Dry run: the ids it would delete, nothing changed. History reason: 'expired'.
CREATE OR REPLACE FUNCTION memdb.purge_expired_batch(p_tenant text DEFAULT NULL,
                                                     p_limit integer DEFAULT 1000,
                                                     p_dry_run boolean DEFAULT false)
RETURNS SETOF uuid
LANGUAGE plpgsql
AS $$
DECLARE
    prev_reason text := current_setting('memdb.reason', true);
    v_ids uuid[];
    v_tenant text;
BEGIN
    SELECT coalesce(array_agg(c.id ORDER BY c.expires_at, c.id), '{}') INTO v_ids
    FROM (SELECT m.id, m.expires_at FROM memdb.memories m
          WHERE m.expires_at <= now() AND (p_tenant IS NULL OR m.tenant = p_tenant)
          ORDER BY m.expires_at, m.id
          LIMIT greatest(coalesce(p_limit, 1000), 0)) c;
    IF p_dry_run THEN
        RETURN QUERY SELECT unnest(v_ids);
        RETURN;
    END IF;
    PERFORM memdb.set_local('memdb.reason', 'expired');
    -- one tenant at a time: locks and deletes by (tenant, id) (on Citus, one shard each)
    FOR v_tenant IN SELECT DISTINCT m.tenant FROM memdb.memories m WHERE m.id = ANY (v_ids)
                    ORDER BY 1 LOOP
        RETURN QUERY
        WITH locked AS (
            SELECT m.id FROM memdb.memories m WHERE m.tenant = v_tenant AND m.id = ANY (v_ids)
            ORDER BY m.id FOR UPDATE SKIP LOCKED
        ), gone AS (
            DELETE FROM memdb.memories m USING locked l
            WHERE m.tenant = v_tenant AND m.id = l.id RETURNING m.id
        )
        SELECT g.id FROM gone g;
    END LOOP;
    PERFORM memdb.set_local('memdb.reason', coalesce(prev_reason, ''));
END
$$;
