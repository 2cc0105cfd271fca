-- memdb.source_strength(p_source_type text, p_order jsonb DEFAULT NULL) -> integer
-- How much a provenance is trusted: p_order lists the source types strongest first (default
-- system > user_statement > document > tool_observation > model_inference); the strongest
-- gets cardinality - 1, the weakest 0, an unlisted type -1. A duplicate from a stronger (or
-- equally strong) source may raise a memory's confidence; only a strictly stronger one takes
-- over its provenance (memdb.bump_memory).
-- Example: SELECT memdb.source_strength('document');  -- 2
CREATE OR REPLACE FUNCTION memdb.source_strength(p_source_type text, p_order jsonb DEFAULT NULL)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT coalesce(
        (SELECT (jsonb_array_length(o.arr) - s.pos)::integer
         FROM jsonb_array_elements_text(o.arr) WITH ORDINALITY AS s(source_type, pos)
         WHERE s.source_type = p_source_type),
        -1)
    FROM (SELECT coalesce(p_order, '["system", "user_statement", "document", "tool_observation",
                                     "model_inference"]'::jsonb) AS arr) o
$$;
