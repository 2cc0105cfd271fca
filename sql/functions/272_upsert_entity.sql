-- memdb.upsert_entity(p_tenant text, p_subject text, p_name text, p_type text DEFAULT 'other',
--                     p_aliases text[] DEFAULT '{}') -> bigint
-- The id of the subject's entity named p_name (deduplicated by memdb.entity_norm(name) and
-- type), created if missing. Rules, in order: the same normalized name and type; an entity
-- that has the name as an alias (any type); for p_type 'other', an entity of the same name of
-- any type (the oldest); an 'other' entity of the same name is given the more specific
-- p_type. p_aliases (normalized) are merged into the entity's aliases.
-- Example: SELECT memdb.upsert_entity('default', 'alice', 'PostgreSQL', 'tool', '{postgres}');
CREATE OR REPLACE FUNCTION memdb.upsert_entity(p_tenant text, p_subject text, p_name text,
                                               p_type text DEFAULT 'other',
                                               p_aliases text[] DEFAULT '{}')
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_norm text := memdb.entity_norm(p_name);
    v_type text := coalesce(p_type, 'other');
    v_aliases text[];
    v_id bigint;
BEGIN
    IF p_tenant IS NULL OR p_subject IS NULL THEN
        RAISE EXCEPTION 'upsert_entity needs a tenant and a subject' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF v_norm IS NULL OR length(v_norm) > 200 THEN
        RAISE EXCEPTION 'entity name must have 1 to 200 characters, got %', p_name
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT coalesce(array_agg(DISTINCT a), '{}') INTO v_aliases
    FROM (SELECT memdb.entity_norm(x) AS a FROM unnest(coalesce(p_aliases, '{}')) x) s
    WHERE a IS NOT NULL AND a <> v_norm AND length(a) <= 200;

    SELECT e.id INTO v_id FROM memdb.entities e
    WHERE e.tenant = p_tenant AND e.subject = p_subject AND e.norm_name = v_norm AND e.type = v_type;
    IF v_id IS NULL THEN
        SELECT e.id INTO v_id FROM memdb.entities e
        WHERE e.tenant = p_tenant AND e.subject = p_subject
          AND (e.aliases @> ARRAY[v_norm]
               OR (e.norm_name = v_norm AND (v_type = 'other' OR e.type = 'other')))
        ORDER BY (e.type = v_type) DESC, e.id
        LIMIT 1;
        IF v_id IS NOT NULL AND v_type <> 'other' THEN
            UPDATE memdb.entities e SET type = v_type
            WHERE e.tenant = p_tenant AND e.id = v_id AND e.type = 'other' AND e.norm_name = v_norm
              AND NOT EXISTS (SELECT 1 FROM memdb.entities o
                              WHERE o.tenant = p_tenant AND o.subject = p_subject
                                AND o.norm_name = v_norm AND o.type = v_type);
        END IF;
    END IF;
    IF v_id IS NULL THEN
        INSERT INTO memdb.entities AS e (tenant, subject, name, norm_name, type, aliases)
        VALUES (p_tenant, p_subject, btrim(p_name), v_norm, v_type, v_aliases)
        ON CONFLICT ON CONSTRAINT entities_name_key DO UPDATE SET updated_at = excluded.updated_at
        RETURNING e.id INTO v_id;
    END IF;
    IF cardinality(v_aliases) > 0 THEN
        UPDATE memdb.entities e
        SET aliases = ARRAY(SELECT DISTINCT x FROM unnest(e.aliases || v_aliases) x
                            WHERE x <> e.norm_name ORDER BY x),
            updated_at = now()
        WHERE e.tenant = p_tenant AND e.id = v_id AND NOT e.aliases @> v_aliases;
    END IF;
    RETURN v_id;
END
$$;
