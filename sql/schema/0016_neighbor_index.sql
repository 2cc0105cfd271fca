-- memdb schema, revision 0016 (frozen): the index of neighbour expansion.
-- memdb.search_neighbors finds the memory before and after a hit in its subject's session
-- (the same session_id, or both without one), in (created_at, id) order. This index makes
-- that a short descent per hit (one shard on Citus: tenant first) instead of a walk through
-- the tenant's memories by time.

CREATE INDEX memories_stream_idx ON memdb.memories
    (tenant, subject, (coalesce(session_id, '')), created_at, id);
