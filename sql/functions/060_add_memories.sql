-- memdb.add_memories(p_items jsonb, p_embeddings vector[] DEFAULT NULL, p_space_id integer DEFAULT NULL)
--   -> TABLE(ord integer, id uuid, created boolean)
-- Adds a batch of memories in one statement: memdb.write_memories with its default options
-- (exact dedup, supersession by norm_key and by correction_of; no near-duplicate merging),
-- reduced to whether each item made a new row. p_items is a JSON array of objects with the
-- memories columns (content required; tenant, subject, agent, scope, project_id, session_id,
-- kind, category, uri, search_context, norm_key, importance, confidence, source_type,
-- source_id, created_by, metadata, tags, created_at, expires_at or ttl_seconds, status,
-- tag_version (the classification rules' version when the category was classified) optional;
-- created_by defaults to the actor, as history's). p_embeddings[i] is item i's vector (or
-- NULL) in space p_space_id. The items are checked first, as memdb.write_memories does: an
-- unknown key, a content that is no JSON string, a text key that is no string, or a
-- ttl_seconds <= 0 raises invalid_parameter_value (22023) naming the item and key, and
-- nothing is written.
-- Dedup: content whose normal form (memdb.normalize_text) already has a current row in the
-- same scope (tenant, subject, scope, project_id, session_id) does not make a second row:
-- the existing row is bumped (memdb.bump_memory: access_count, last_accessed_at, the higher
-- importance, confidence by source strength, the new tags, the later expiry - none beats
-- any). A later duplicate inside one batch bumps the first. Safe under concurrent writers
-- (advisory locks per subject and category, then the unique index).
-- Returns, per input position (1-based ord), the memory id and whether it was created.
CREATE OR REPLACE FUNCTION memdb.add_memories(p_items jsonb, p_embeddings vector[] DEFAULT NULL,
                                              p_space_id integer DEFAULT NULL)
RETURNS TABLE (ord integer, id uuid, created boolean)
LANGUAGE sql
AS $$
    SELECT w.ord, w.id, w.outcome IN ('created', 'hypothesis', 'superseded')
    FROM memdb.write_memories(p_items, p_embeddings, p_space_id, '{}'::jsonb) w
    ORDER BY w.ord
$$;
