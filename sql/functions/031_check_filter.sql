-- memdb.check_filter(p_filter jsonb) -> boolean
-- Validates a memory filter and returns true, or raises invalid_parameter_value (22023)
-- naming the bad key. Keys (all optional):
--   subject, agent, scope, project_id, session_id, kind, category, source_type:
--       a string or an array of strings (exact match, never prefix);
--   uri_prefix: a string or an array of strings; the memory's uri must start with one of them
--       (compared as text: '%', '_' and quotes are plain characters), e.g. 'mem://alice/preferences/';
--   status: 'active' or 'hypothesis' (or an array of them);
--   tags: array, memory must carry all; tags_any: array, memory must carry one;
--   created_after, created_before, as_of: ISO timestamps;
--   min_importance: number in [0, 1]; metadata: object the memory's metadata must contain;
--   include_expired: boolean (default false).
-- Without as_of only current rows (valid_to IS NULL) are seen; with it, the rows valid then.
-- The filters searches use most (none, one subject) pass in a plain SQL expression, which the
-- statements calling it inline (every route of a search checks its filter: a PL/pgSQL call
-- each cost ~25 us); any other filter is checked key by key by memdb.check_filter_keys.
CREATE OR REPLACE FUNCTION memdb.check_filter_keys(p_filter jsonb)
RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    k text;
    v jsonb;
    e jsonb;
BEGIN
    IF p_filter IS NULL THEN
        RETURN true;
    END IF;
    IF jsonb_typeof(p_filter) <> 'object' THEN
        RAISE EXCEPTION 'memdb filter must be a JSON object, got %', jsonb_typeof(p_filter)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR k, v IN SELECT * FROM jsonb_each(p_filter) LOOP
        CASE
            WHEN k IN ('subject', 'agent', 'scope', 'project_id', 'session_id', 'kind',
                       'category', 'source_type', 'tags', 'tags_any', 'uri_prefix', 'status') THEN
                IF jsonb_typeof(v) = 'array' THEN
                    IF jsonb_array_length(v) = 0 AND k NOT IN ('tags', 'tags_any') THEN
                        RAISE EXCEPTION 'memdb filter key "%" is an empty list', k
                            USING ERRCODE = 'invalid_parameter_value';
                    END IF;
                    FOR e IN SELECT jsonb_array_elements(v) LOOP
                        IF jsonb_typeof(e) <> 'string' THEN
                            RAISE EXCEPTION 'memdb filter key "%" must hold strings, got %', k, jsonb_typeof(e)
                                USING ERRCODE = 'invalid_parameter_value';
                        END IF;
                    END LOOP;
                ELSIF jsonb_typeof(v) <> 'string' THEN
                    RAISE EXCEPTION 'memdb filter key "%" must be a string or a list of strings, got %', k, jsonb_typeof(v)
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
                IF k = 'status' AND NOT memdb.jtext_array(v) <@ ARRAY['active', 'hypothesis'] THEN
                    RAISE EXCEPTION 'memdb filter key "status" must be active or hypothesis'
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
                IF k = 'uri_prefix' AND '' = ANY (memdb.jtext_array(v)) THEN
                    RAISE EXCEPTION 'memdb filter key "uri_prefix" holds an empty string'
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
            WHEN k IN ('created_after', 'created_before', 'as_of') THEN
                IF jsonb_typeof(v) <> 'string' THEN
                    RAISE EXCEPTION 'memdb filter key "%" must be an ISO timestamp string', k
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
                BEGIN
                    PERFORM (v #>> '{}')::timestamptz;
                EXCEPTION WHEN others THEN
                    RAISE EXCEPTION 'memdb filter key "%" is not a timestamp: %', k, v #>> '{}'
                        USING ERRCODE = 'invalid_parameter_value';
                END;
            WHEN k = 'min_importance' THEN
                IF jsonb_typeof(v) <> 'number' OR (v::text)::numeric < 0 OR (v::text)::numeric > 1 THEN
                    RAISE EXCEPTION 'memdb filter key "min_importance" must be a number in [0, 1]'
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
            WHEN k = 'metadata' THEN
                IF jsonb_typeof(v) <> 'object' THEN
                    RAISE EXCEPTION 'memdb filter key "metadata" must be a JSON object'
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
            WHEN k = 'include_expired' THEN
                IF jsonb_typeof(v) <> 'boolean' THEN
                    RAISE EXCEPTION 'memdb filter key "include_expired" must be true or false'
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
            ELSE
                RAISE EXCEPTION 'unknown memdb filter key "%"', k
                    USING ERRCODE = 'invalid_parameter_value';
        END CASE;
    END LOOP;
    RETURN true;
END
$$;

CREATE OR REPLACE FUNCTION memdb.check_filter(p_filter jsonb)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN p_filter IS NULL OR p_filter = '{}'::jsonb THEN true
                WHEN jsonb_typeof(p_filter) <> 'object' THEN memdb.check_filter_keys(p_filter)
                WHEN p_filter - 'subject' <> '{}'::jsonb THEN memdb.check_filter_keys(p_filter)
                WHEN jsonb_typeof(p_filter -> 'subject') = 'string' THEN true
                WHEN jsonb_typeof(p_filter -> 'subject') = 'array'
                     AND jsonb_array_length(p_filter -> 'subject') = 1
                     AND jsonb_typeof(p_filter -> 'subject' -> 0) = 'string' THEN true
                ELSE memdb.check_filter_keys(p_filter) END
$$;
