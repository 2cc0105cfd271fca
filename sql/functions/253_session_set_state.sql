-- memdb.session_set_state(p_tenant text, p_subject text, p_session text, p_state jsonb,
--                         p_expected_version integer)
--   -> TABLE(applied boolean, version integer)
-- Writes a session's working state (the JSON object of the current task: goal, constraints,
-- steps done, plan, budget) with optimistic concurrency: it applies only when the stored
-- version equals p_expected_version (0 for a session with no state yet, including one that
-- does not exist), and then returns (true, the new version = p_expected_version + 1).
-- Otherwise nothing changes and it returns (false, the current version), so of two workers
-- that read the same version only the first one's write lands; the caller raises Conflict.
CREATE OR REPLACE FUNCTION memdb.session_set_state(p_tenant text, p_subject text,
                                                   p_session text, p_state jsonb,
                                                   p_expected_version integer)
RETURNS TABLE (applied boolean, version integer)
LANGUAGE plpgsql
AS $$
DECLARE
    v_version integer;
BEGIN
    IF p_state IS NULL OR jsonb_typeof(p_state) <> 'object' THEN
        RAISE EXCEPTION 'working state must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO memdb.sessions (tenant, subject, session_id)
    VALUES (p_tenant, p_subject, p_session)
    ON CONFLICT (tenant, subject, session_id) DO NOTHING;
    UPDATE memdb.sessions s
       SET state = p_state, state_version = s.state_version + 1, updated_at = now()
     WHERE s.tenant = p_tenant AND s.subject = p_subject AND s.session_id = p_session
       AND s.state_version = p_expected_version
    RETURNING s.state_version INTO v_version;
    IF FOUND THEN
        RETURN QUERY SELECT true, v_version;
        RETURN;
    END IF;
    RETURN QUERY SELECT false, s.state_version FROM memdb.sessions s
     WHERE s.tenant = p_tenant AND s.subject = p_subject AND s.session_id = p_session;
END
$$;
