-- memdb.session_window(p_tenant text, p_subject text, p_session text, p_max_tokens integer,
--                      p_max_messages integer)
--   -> TABLE(id bigint, role text, content text, tokens integer, created_at timestamptz,
--            in_window boolean)
-- A session's buffered turns, oldest first, each marked whether it is inside the sliding
-- window: the newest turns whose running token total (newest first) stays within p_max_tokens
-- and whose count stays within p_max_messages. The newest turn is always inside, even when it
-- alone is larger than p_max_tokens, so the last thing said is never summarized away. A NULL
-- limit is no limit. Turns outside the window are the ones memdb.session_fold folds into the
-- running summary.
CREATE OR REPLACE FUNCTION memdb.session_window(p_tenant text, p_subject text, p_session text,
                                                p_max_tokens integer, p_max_messages integer)
RETURNS TABLE (id bigint, role text, content text, tokens integer, created_at timestamptz,
               in_window boolean)
LANGUAGE sql STABLE
AS $$
    SELECT r.id, r.role, r.content, r.tokens, r.created_at,
           r.pos = 1 OR ((p_max_tokens IS NULL OR r.running <= p_max_tokens)
                         AND (p_max_messages IS NULL OR r.pos <= p_max_messages))
    FROM (SELECT m.id, m.role, m.content, m.tokens, m.created_at,
                 row_number() OVER w AS pos,
                 sum(m.tokens) OVER w AS running
          FROM memdb.session_messages m
          WHERE m.tenant = p_tenant AND m.subject = p_subject AND m.session_id = p_session
          WINDOW w AS (ORDER BY m.id DESC ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)) r
    ORDER BY r.id
$$;
