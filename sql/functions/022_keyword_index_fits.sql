-- memdb.keyword_index_fits(p_content text, p_search_context text DEFAULT NULL) -> boolean
-- Whether a memory's keyword index (memdb.tokenize(content || ' ' || search_context), as
-- memdb.memories_before_write builds it) stays within PostgreSQL's tsvector limit: 1 MB of
-- distinct lexemes. Two texts within their 65,536-character limits can exceed it (mostly
-- distinct CJK bigrams); the write would then fail with program_limit_exceeded (54000).
-- MemoryStore asks this before classifying, gating or embedding a text big enough to come
-- near the limit, and refuses it with a typed error (InvalidInput) that names the limit.
-- Example: SELECT memdb.keyword_index_fits('我喜欢喝绿茶', 'chat 2024-05-03');  -- true
CREATE OR REPLACE FUNCTION memdb.keyword_index_fits(p_content text, p_search_context text DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    PERFORM memdb.tokenize(coalesce(p_content, '') || ' ' || coalesce(p_search_context, ''));
    RETURN true;
EXCEPTION WHEN program_limit_exceeded THEN
    RETURN false;
END
$$;
