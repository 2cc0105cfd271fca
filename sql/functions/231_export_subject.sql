-- memdb.export_subject(p_tenant text, p_subject text) -> jsonb
-- Everything memdb holds about one subject of a tenant, as one JSON document (for a data
-- subject's access request, or before memdb.forget_subject):
--   {"tenant", "subject", "exported_at", "tables": {"memories": [...], "<table>": [...]}}
-- memories: every row of the subject (all versions, expired ones too) without the derived
-- columns (embedding, tsv, doc_len, event_time, names_time); then every table of
-- memdb.subject_tables(): its rows of the subject or about the subject's memories. Rows in a
-- stable order (by their key columns).
CREATE OR REPLACE FUNCTION memdb.export_subject(p_tenant text, p_subject text)
RETURNS jsonb
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_ids uuid[];
    v_tables jsonb;
    v_rows jsonb;
    t record;
BEGIN
    IF p_tenant IS NULL OR p_subject IS NULL THEN
        RAISE EXCEPTION 'export_subject needs a tenant and a subject' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT coalesce(array_agg(m.id ORDER BY m.id), '{}') INTO v_ids
    FROM memdb.memories m WHERE m.tenant = p_tenant AND m.subject = p_subject;
    SELECT coalesce(jsonb_agg(to_jsonb(m) - 'embedding' - 'tsv' - 'doc_len' - 'event_time'
                              - 'names_time' ORDER BY m.created_at, m.id), '[]'::jsonb)
      INTO v_rows
      FROM memdb.memories m WHERE m.tenant = p_tenant AND m.subject = p_subject;
    v_tables := jsonb_build_object('memories', v_rows);
    FOR t IN SELECT * FROM memdb.subject_tables() LOOP
        EXECUTE format(
            'SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY to_jsonb(x)::text), ''[]''::jsonb)
             FROM memdb.%I x WHERE %s',
            t.table_name,
            format('x.tenant = $1 AND (%s)', concat_ws(' OR ',
                      CASE WHEN t.has_subject THEN 'x.subject = $2' END,
                      CASE WHEN t.has_memory_id THEN 'x.memory_id = ANY ($3)' END)))
          INTO v_rows USING p_tenant, p_subject, v_ids;
        v_tables := v_tables || jsonb_build_object(t.table_name, v_rows);
    END LOOP;
    RETURN jsonb_build_object('tenant', p_tenant, 'subject', p_subject, 'exported_at', now(),
                              'tables', v_tables);
END
$$;
