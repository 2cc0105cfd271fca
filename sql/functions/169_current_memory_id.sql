-- memdb.current_memory_id(p_tenant text, p_subject text, p_scope text, p_project_id text,
--                         p_session_id text, p_content_hash bytea) -> uuid
-- The current memory (valid_to IS NULL) with this normalized-content hash in this scope, or
-- NULL: the row memories_dedup_key allows. One index probe whatever the plan: each NULL scope
-- id is asked for as IS NULL (IS NOT DISTINCT FROM is not an index condition, and a scan of
-- the whole scope per chunk made ingesting a folder quadratic).
CREATE OR REPLACE FUNCTION memdb.current_memory_id(p_tenant text, p_subject text, p_scope text,
                                                   p_project_id text, p_session_id text,
                                                   p_content_hash bytea)
RETURNS uuid
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_id uuid;
BEGIN
    IF p_project_id IS NULL AND p_session_id IS NULL THEN
        SELECT m.id INTO v_id FROM memdb.memories m
        WHERE m.tenant = p_tenant AND m.subject = p_subject AND m.scope = p_scope
          AND m.project_id IS NULL AND m.session_id IS NULL
          AND m.content_hash = p_content_hash AND m.valid_to IS NULL;
    ELSIF p_session_id IS NULL THEN
        SELECT m.id INTO v_id FROM memdb.memories m
        WHERE m.tenant = p_tenant AND m.subject = p_subject AND m.scope = p_scope
          AND m.project_id = p_project_id AND m.session_id IS NULL
          AND m.content_hash = p_content_hash AND m.valid_to IS NULL;
    ELSIF p_project_id IS NULL THEN
        SELECT m.id INTO v_id FROM memdb.memories m
        WHERE m.tenant = p_tenant AND m.subject = p_subject AND m.scope = p_scope
          AND m.project_id IS NULL AND m.session_id = p_session_id
          AND m.content_hash = p_content_hash AND m.valid_to IS NULL;
    ELSE
        SELECT m.id INTO v_id FROM memdb.memories m
        WHERE m.tenant = p_tenant AND m.subject = p_subject AND m.scope = p_scope
          AND m.project_id = p_project_id AND m.session_id = p_session_id
          AND m.content_hash = p_content_hash AND m.valid_to IS NULL;
    END IF;
    RETURN v_id;
END
$$;
