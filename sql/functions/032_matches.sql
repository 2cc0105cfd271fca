-- memdb.matches(m anyelement, p_filter jsonb) -> boolean
-- True when memory m (a row of memdb.memories) passes filter p_filter (keys documented in
-- memdb.check_filter). A single SQL expression, so the planner inlines it and, with the filter
-- known at plan time, folds every absent key away and uses the scope indexes for the rest.
-- m is polymorphic (revision 0013 dropped matches(memdb.memories, jsonb)): on a Citus worker
-- a function's query reads a shard of memories, whose rows have the shard's own row type.
CREATE OR REPLACE FUNCTION memdb.matches(m anyelement, p_filter jsonb)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT memdb.check_filter(p_filter)
       AND (NOT (p_filter ? 'subject') OR m.subject = ANY (memdb.jtext_array(p_filter -> 'subject')))
       AND (NOT (p_filter ? 'agent') OR m.agent = ANY (memdb.jtext_array(p_filter -> 'agent')))
       AND (NOT (p_filter ? 'scope') OR m.scope = ANY (memdb.jtext_array(p_filter -> 'scope')))
       AND (NOT (p_filter ? 'project_id') OR m.project_id = ANY (memdb.jtext_array(p_filter -> 'project_id')))
       AND (NOT (p_filter ? 'session_id') OR m.session_id = ANY (memdb.jtext_array(p_filter -> 'session_id')))
       AND (NOT (p_filter ? 'kind') OR m.kind = ANY (memdb.jtext_array(p_filter -> 'kind')))
       AND (NOT (p_filter ? 'category') OR m.category = ANY (memdb.jtext_array(p_filter -> 'category')))
       AND (NOT (p_filter ? 'source_type') OR m.source_type = ANY (memdb.jtext_array(p_filter -> 'source_type')))
       AND (NOT (p_filter ? 'status') OR m.status = ANY (memdb.jtext_array(p_filter -> 'status')))
       AND (NOT (p_filter ? 'tags') OR m.tags @> memdb.jtext_array(p_filter -> 'tags'))
       AND (NOT (p_filter ? 'tags_any') OR m.tags && memdb.jtext_array(p_filter -> 'tags_any'))
       AND (NOT (p_filter ? 'uri_prefix')
            OR m.uri LIKE ANY (memdb.like_prefixes(memdb.jtext_array(p_filter -> 'uri_prefix'))))
       AND (NOT (p_filter ? 'created_after') OR m.created_at >= (p_filter ->> 'created_after')::timestamptz)
       AND (NOT (p_filter ? 'created_before') OR m.created_at < (p_filter ->> 'created_before')::timestamptz)
       AND (NOT (p_filter ? 'min_importance') OR m.importance >= (p_filter ->> 'min_importance')::real)
       AND (NOT (p_filter ? 'metadata') OR m.metadata @> (p_filter -> 'metadata'))
       AND CASE
               WHEN p_filter ? 'as_of' THEN
                   m.valid_from <= (p_filter ->> 'as_of')::timestamptz
                   AND m.created_at <= (p_filter ->> 'as_of')::timestamptz
                   AND (m.valid_to IS NULL OR m.valid_to > (p_filter ->> 'as_of')::timestamptz)
                   AND (m.expires_at IS NULL OR m.expires_at > (p_filter ->> 'as_of')::timestamptz)
               ELSE
                   m.valid_to IS NULL
                   AND (coalesce((p_filter ->> 'include_expired')::boolean, false)
                        OR m.expires_at IS NULL OR m.expires_at > now())
           END
$$;
