-- memdb.session_append(p_tenant text, p_subject text, p_session text, p_role text,
--                      p_content text, p_tokens integer) -> bigint
-- Appends one turn to a session's conversation buffer (creating the session row on first use)
-- and returns the message id; ids grow with insertion order, which is the buffer's order.
-- p_tokens is counted by the caller (memdb.families.session uses the embedding model's tokenizer
-- offline), so the window arithmetic in memdb.session_window needs no tokenizer in SQL.
CREATE OR REPLACE FUNCTION memdb.session_append(p_tenant text, p_subject text, p_session text,
                                                p_role text, p_content text, p_tokens integer)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_id bigint;
BEGIN
    INSERT INTO memdb.sessions (tenant, subject, session_id)
    VALUES (p_tenant, p_subject, p_session)
    ON CONFLICT (tenant, subject, session_id) DO UPDATE SET updated_at = excluded.updated_at;
    INSERT INTO memdb.session_messages (tenant, subject, session_id, role, content, tokens)
    VALUES (p_tenant, p_subject, p_session, p_role, p_content, p_tokens)
    RETURNING id INTO v_id;
    RETURN v_id;
END
$$;
