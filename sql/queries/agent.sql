-- Queries of the agent interface (memdb/families/tool.py, memdb/write/remember.py). Both read through
-- memdb.list_memories, so "current, unexpired, visible to this tenant/subject" means exactly
-- what it means for store.list().

-- name: summary_counts
SELECT m.kind, m.category, count(*) AS n
FROM memdb.list_memories(%(tenant)s, %(filter)s, 1000000, 0) m
GROUP BY m.kind, m.category
ORDER BY m.kind, m.category;

-- name: summary_top
SELECT m.id, m.kind, m.category, m.content, m.importance
FROM memdb.list_memories(%(tenant)s, %(filter)s, 1000000, 0) m
ORDER BY m.importance DESC, m.updated_at DESC
LIMIT %(limit)s;
