-- memdb.review_reject(p_tenant text, p_id uuid, p_decided_by text DEFAULT NULL) -> boolean
-- Rejects a pending review-queue entry: status 'rejected' with decided_by/decided_at; no
-- memory is made, and the same content is not proposed again (one entry per content per
-- subject). Raises no_data_found (P0002) for an unknown entry, invalid_parameter_value unless
-- pending. Returns true.
CREATE OR REPLACE FUNCTION memdb.review_reject(p_tenant text, p_id uuid,
                                               p_decided_by text DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql
AS $$
DECLARE
    v_status text;
    -- computed here: Citus refuses non-immutable calls inside an UPDATE's coalesce
    v_who text := coalesce(nullif(p_decided_by, ''), nullif(current_setting('memdb.actor', true), ''),
                           session_user);
BEGIN
    SELECT r.status INTO v_status FROM memdb.review_queue r
    WHERE r.tenant = p_tenant AND r.id = p_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no review entry %', p_id USING ERRCODE = 'no_data_found';
    END IF;
    IF v_status <> 'pending' THEN
        RAISE EXCEPTION 'review entry % is already %', p_id, v_status
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE memdb.review_queue r
    SET status = 'rejected', decided_at = now(), decided_by = v_who
    WHERE r.tenant = p_tenant AND r.id = p_id;
    RETURN true;
END
$$;
