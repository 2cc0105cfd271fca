-- memdb.list_memories(p_tenant text, p_filter jsonb DEFAULT '{}', p_limit integer DEFAULT 100,
--                     p_offset integer DEFAULT 0) -> SETOF memdb.memories
-- The tenant's memories that pass p_filter (keys in memdb.check_filter), newest first.
-- Example: SELECT id, content FROM memdb.list_memories('default', '{"subject": "alice", "kind": ["semantic", "episodic"]}');
CREATE OR REPLACE FUNCTION memdb.list_memories(p_tenant text, p_filter jsonb DEFAULT '{}',
                                               p_limit integer DEFAULT 100, p_offset integer DEFAULT 0)
RETURNS SETOF memdb.memories
LANGUAGE sql STABLE
AS $$
    SELECT m.*
    FROM memdb.memories m
    WHERE m.tenant = p_tenant AND memdb.matches(m, coalesce(p_filter, '{}'::jsonb))
    ORDER BY m.created_at DESC, m.id
    LIMIT p_limit OFFSET p_offset
$$;
