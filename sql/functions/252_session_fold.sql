-- memdb.session_fold(p_tenant text, p_subject text, p_session text, p_expected_through bigint,
--                    p_through bigint, p_summary text, p_summary_tokens integer, p_path text)
--   -> boolean
-- Replaces a session's running summary with p_summary (made by the caller from the previous
-- summary and the turns that scrolled out of the window) and deletes the turns up to and
-- including message id p_through. Optimistic: it only applies when the session's
-- summarized_through is still p_expected_through (the value the caller read before
-- summarizing); otherwise another worker folded meanwhile, nothing changes and it returns
-- false (the caller re-reads the window and tries again).
CREATE OR REPLACE FUNCTION memdb.session_fold(p_tenant text, p_subject text, p_session text,
                                              p_expected_through bigint, p_through bigint,
                                              p_summary text, p_summary_tokens integer,
                                              p_path text)
RETURNS boolean
LANGUAGE plpgsql
AS $$
BEGIN
    IF p_through < p_expected_through THEN
        RAISE EXCEPTION 'session_fold: p_through (%) is before p_expected_through (%)',
            p_through, p_expected_through USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE memdb.sessions s
       SET summary = p_summary, summary_tokens = p_summary_tokens, summary_path = p_path,
           summarized_through = p_through, updated_at = now()
     WHERE s.tenant = p_tenant AND s.subject = p_subject AND s.session_id = p_session
       AND s.summarized_through = p_expected_through;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    DELETE FROM memdb.session_messages m
     WHERE m.tenant = p_tenant AND m.subject = p_subject AND m.session_id = p_session
       AND m.id <= p_through;
    RETURN true;
END
$$;
