-- Named queries of the memory browser (memdb.ui, loaded by memdb.core.sql). Parameters are
-- %(name)s placeholders; row-level security confines them like every other query.

-- name: ui_subject_counts
SELECT m.subject, m.kind, m.category, count(*) AS n
FROM memdb.list_memories(%(tenant)s, %(filter)s, 1000000, 0) m
GROUP BY m.subject, m.kind, m.category
ORDER BY m.subject, m.kind, m.category;

-- name: ui_memory_entities
SELECT e.name, e.type
FROM memdb.entity_mentions x
JOIN memdb.entities e ON e.id = x.entity_id
WHERE x.memory_id = %(id)s::uuid AND e.tenant = %(tenant)s::text
ORDER BY e.name, e.type;

-- name: ui_superseded_by
SELECT m.id
FROM memdb.memories m
WHERE m.tenant = %(tenant)s::text AND m.superseded_by = %(id)s::uuid
ORDER BY m.valid_from DESC
LIMIT 1;

-- name: ui_expiring
SELECT m.id, m.subject, m.content, m.expires_at
FROM memdb.list_memories(%(tenant)s, %(filter)s, 1000000, 0) m
WHERE m.expires_at IS NOT NULL AND m.expires_at <= now() + make_interval(days => %(days)s)
ORDER BY m.expires_at
LIMIT %(limit)s;

-- name: ui_entity_sample
-- The tenant's most mentioned entities (the Graph page's suggestions), with how many it has.
SELECT e.name, e.type, count(x.memory_id) AS mentions, count(*) OVER () AS total
FROM memdb.entities e
LEFT JOIN memdb.entity_mentions x ON x.entity_id = e.id
WHERE e.tenant = %(tenant)s::text
GROUP BY e.id, e.name, e.type
ORDER BY count(x.memory_id) DESC, e.name
LIMIT %(limit)s;

-- name: ui_entity_memories
-- The current memories that mention any of the given entities.
SELECT DISTINCT m.id, m.content, m.created_at
FROM memdb.entity_mentions x
JOIN memdb.memories m ON m.id = x.memory_id AND m.tenant = x.tenant
WHERE x.tenant = %(tenant)s::text AND x.entity_id = ANY (%(ids)s::bigint[])
  AND m.valid_to IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())
ORDER BY m.created_at, m.id
LIMIT %(limit)s;
