-- memdb.review_approve(p_tenant text, p_id uuid, p_decided_by text DEFAULT NULL,
--                      p_embedding vector DEFAULT NULL, p_space_id integer DEFAULT NULL) -> uuid
-- Approves a pending review-queue entry (a rule or system entry proposed by sedimentation):
-- creates its memory (the entry's kind and category, default procedural/system; tag 'rule'
-- for a rule; source_type 'system', source_id 'review:<entry id>', created_by p_decided_by,
-- metadata {"review_id", "review_reason", "source_ids"}) through memdb.add_memories, and marks
-- the entry approved with decided_by/decided_at and memory_id. p_embedding (in space
-- p_space_id) is the memory's vector, if the caller has one. Returns the memory id.
-- Raises no_data_found (P0002) for an unknown entry, invalid_parameter_value unless pending.
-- History reason: 'review: approved by <who>'.
CREATE OR REPLACE FUNCTION memdb.review_approve(p_tenant text, p_id uuid,
                                                p_decided_by text DEFAULT NULL,
                                                p_embedding vector DEFAULT NULL,
                                                p_space_id integer DEFAULT NULL)
RETURNS uuid
LANGUAGE plpgsql
AS $$
DECLARE
    prev_reason text := current_setting('memdb.reason', true);
    q memdb.review_queue;
    v_who text := coalesce(nullif(p_decided_by, ''), nullif(current_setting('memdb.actor', true), ''),
                           session_user);
    v_memory uuid;
BEGIN
    SELECT * INTO q FROM memdb.review_queue r WHERE r.tenant = p_tenant AND r.id = p_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no review entry %', p_id USING ERRCODE = 'no_data_found';
    END IF;
    IF q.status <> 'pending' THEN
        RAISE EXCEPTION 'review entry % is already %', p_id, q.status
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM memdb.set_local('memdb.reason', format('review: approved by %s', v_who));
    SELECT a.id INTO v_memory
    FROM memdb.add_memories(
        jsonb_build_array(jsonb_build_object(
            'tenant', q.tenant, 'subject', q.subject, 'kind', q.kind, 'category', q.category,
            'content', q.content, 'importance', 0.8, 'confidence', 1.0,
            'source_type', 'system', 'source_id', 'review:' || q.id, 'created_by', v_who,
            'tags', CASE WHEN q.reason = 'rule' THEN jsonb_build_array('rule') ELSE '[]'::jsonb END,
            'metadata', jsonb_build_object('review_id', q.id, 'review_reason', q.reason,
                                           'source_ids', to_jsonb(q.source_ids)))),
        CASE WHEN p_embedding IS NULL THEN NULL ELSE ARRAY[p_embedding] END,
        p_space_id) a;
    UPDATE memdb.review_queue r
    SET status = 'approved', decided_by = v_who, decided_at = now(), memory_id = v_memory
    WHERE r.tenant = p_tenant AND r.id = q.id;
    PERFORM memdb.set_local('memdb.reason', coalesce(prev_reason, ''));
    RETURN v_memory;
END
$$;
