-- memdb.link_memories(p_tenant text, p_items jsonb)
--   -> TABLE(memory_id uuid, linked boolean, entities integer, relations integer)
-- Writes the entity graph of some memories, in the caller's transaction (one round trip for a
-- batch). p_items is a JSON array of
--   {"memory_id": uuid,
--    "entities": [{"name": text, "type": text, "aliases": [text]}],
--    "relations": [{"from": name, "to": name, "type": text, "strength": (0, 1],
--                   "valid_from": timestamptz, "valid_to": timestamptz}]}
-- (what memdb.families.graph's extractors produce). For each current memory of the tenant: its old
-- mentions and relations are deleted (re-linking replaces them), the entities are upserted
-- under the memory's subject (memdb.upsert_entity) and mentioned, relations are recorded with
-- the memory as evidence, valid from the relation's valid_from or else the memory's
-- (memdb.upsert_relation; an endpoint not among "entities" is upserted
-- as type 'other'). A memory that is missing, superseded or expired is skipped (linked false).
-- entities: how many entities the memory now mentions. Call memdb.match_mentions afterwards
-- to link the memories to known entities they name without a pattern.
CREATE OR REPLACE FUNCTION memdb.link_memories(p_tenant text, p_items jsonb)
RETURNS TABLE (memory_id uuid, linked boolean, entities integer, relations integer)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    item jsonb;
    ent jsonb;
    rel jsonb;
    m record;
    v_ids jsonb;
    v_id bigint;
    v_from bigint;
    v_to bigint;
    n_ent integer;
    n_rel integer;
BEGIN
    IF p_items IS NULL OR jsonb_typeof(p_items) <> 'array' THEN
        RAISE EXCEPTION 'link items must be a JSON array' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR item IN SELECT jsonb_array_elements(p_items) LOOP
        memory_id := (item ->> 'memory_id')::uuid;
        SELECT x.id, x.subject, x.content, x.valid_from INTO m FROM memdb.memories x
        WHERE x.tenant = p_tenant AND x.id = memory_id AND x.valid_to IS NULL
          AND (x.expires_at IS NULL OR x.expires_at > now());
        IF NOT FOUND THEN
            linked := false; entities := 0; relations := 0;
            RETURN NEXT;
            CONTINUE;
        END IF;
        DELETE FROM memdb.entity_mentions x WHERE x.memory_id = m.id;
        DELETE FROM memdb.entity_relations x WHERE x.memory_id = m.id;
        v_ids := '{}'::jsonb;
        FOR ent IN SELECT jsonb_array_elements(coalesce(item -> 'entities', '[]')) LOOP
            v_id := memdb.upsert_entity(p_tenant, m.subject, ent ->> 'name',
                                        coalesce(ent ->> 'type', 'other'),
                                        ARRAY(SELECT jsonb_array_elements_text(coalesce(ent -> 'aliases', '[]'))));
            v_ids := v_ids || jsonb_build_object(memdb.entity_norm(ent ->> 'name'), v_id);
            INSERT INTO memdb.entity_mentions (entity_id, memory_id, tenant, subject)
            VALUES (v_id, m.id, p_tenant, m.subject) ON CONFLICT DO NOTHING;
        END LOOP;
        n_rel := 0;
        FOR rel IN SELECT jsonb_array_elements(coalesce(item -> 'relations', '[]')) LOOP
            v_from := coalesce((v_ids ->> memdb.entity_norm(rel ->> 'from'))::bigint,
                               memdb.upsert_entity(p_tenant, m.subject, rel ->> 'from'));
            v_to := coalesce((v_ids ->> memdb.entity_norm(rel ->> 'to'))::bigint,
                             memdb.upsert_entity(p_tenant, m.subject, rel ->> 'to'));
            CONTINUE WHEN v_from = v_to;
            INSERT INTO memdb.entity_mentions (entity_id, memory_id, tenant, subject)
            VALUES (v_from, m.id, p_tenant, m.subject), (v_to, m.id, p_tenant, m.subject)
            ON CONFLICT DO NOTHING;
            PERFORM memdb.upsert_relation(p_tenant, m.subject, v_from, v_to, rel ->> 'type', m.id,
                                          coalesce((rel ->> 'strength')::real, 0.5),
                                          coalesce((rel ->> 'valid_from')::timestamptz, m.valid_from),
                                          (rel ->> 'valid_to')::timestamptz);
            n_rel := n_rel + 1;
        END LOOP;
        SELECT count(*) INTO n_ent FROM memdb.entity_mentions x WHERE x.memory_id = m.id;
        linked := true; entities := n_ent; relations := n_rel;
        RETURN NEXT;
    END LOOP;
END
$$;
