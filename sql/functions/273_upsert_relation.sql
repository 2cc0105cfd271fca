-- memdb.upsert_relation(p_tenant text, p_subject text, p_from bigint, p_to bigint, p_type text,
--                       p_memory_id uuid, p_strength real DEFAULT 0.5,
--                       p_valid_from timestamptz DEFAULT NULL, p_valid_to timestamptz DEFAULT NULL)
--   -> bigint
-- Records the edge p_from -[p_type]-> p_to of one subject, evidenced by memory p_memory_id
-- (deleted with it), valid over [p_valid_from (default now()), p_valid_to (NULL: open)).
-- One row per (from, type, to, memory): recording the same edge from the same memory again
-- keeps the stronger strength and the new interval. Returns the relation's id.
-- p_type: lower-case snake case (works_with, uses, manages, works_at, related_to, ...).
-- Example: SELECT memdb.upsert_relation('default', 'alice', 1, 2, 'works_with', '…'::uuid, 0.8);
CREATE OR REPLACE FUNCTION memdb.upsert_relation(p_tenant text, p_subject text, p_from bigint,
                                                 p_to bigint, p_type text, p_memory_id uuid,
                                                 p_strength real DEFAULT 0.5,
                                                 p_valid_from timestamptz DEFAULT NULL,
                                                 p_valid_to timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_id bigint;
BEGIN
    IF p_from IS NULL OR p_to IS NULL OR p_memory_id IS NULL THEN
        RAISE EXCEPTION 'a relation needs two entities and an evidence memory' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_from = p_to THEN
        RAISE EXCEPTION 'a relation needs two different entities' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO memdb.entity_relations AS r (tenant, subject, from_id, to_id, type, strength,
                                             memory_id, valid_from, valid_to)
    VALUES (p_tenant, p_subject, p_from, p_to, p_type, coalesce(p_strength, 0.5), p_memory_id,
            coalesce(p_valid_from, now()), p_valid_to)
    ON CONFLICT ON CONSTRAINT entity_relations_edge_key DO UPDATE
        SET strength = greatest(r.strength, excluded.strength),
            valid_from = excluded.valid_from, valid_to = excluded.valid_to
    RETURNING r.id INTO v_id;
    RETURN v_id;
END
$$;
