-- memdb.temporal_boost(p_event_time tstzrange, p_names_time boolean, p_time timestamptz,
--                      p_intent boolean, p_range tstzrange, p_weight double precision)
--   -> double precision
-- The temporal factor of a memory in memdb.search_hybrid (option temporal = p_weight > 0),
-- from the memory's stored columns (revision 0017, kept by memdb.memories_before_write at
-- write time, so a search resolves no text): p_event_time = memories.event_time (the time its
-- content names, memdb.time_range(content, valid_from); NULL: none), p_names_time =
-- memories.names_time (its content carries a time: event_time set, or a duration or date word,
-- memdb.time_words: "for 4 years", "since", "2019", "Friday", 三年, 周五, 以来),
-- p_time = memories.valid_from:
--   1 + p_weight when the query asks about time (p_intent, memdb.temporal_intent) and
--     p_names_time;
--   + p_weight more when the query names a time p_range (memdb.time_range of the query
--     against the search's as_of or now()) and the memory's event time overlaps it:
--     p_event_time, else its own time p_time;
--   1 otherwise (and whenever p_weight <= 0). Only the content counts, never search_context.
-- One SQL expression: inlined into the search's query.
-- Example: SELECT memdb.temporal_boost(event_time, names_time, valid_from, true,
--                                      '[2023-06-01,2023-07-01)', 0.5), content
--          FROM memdb.memories WHERE tenant = 'default' AND subject = 'mel-temporal';
--          -> 2 for "we went camping last week" said on 27 June 2023, 1 for "Melanie loves camping"
CREATE OR REPLACE FUNCTION memdb.temporal_boost(p_event_time tstzrange, p_names_time boolean,
                                                p_time timestamptz, p_intent boolean,
                                                p_range tstzrange, p_weight double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN coalesce(p_weight, 0) <= 0 THEN 1::double precision
                ELSE 1 + CASE WHEN coalesce(p_intent, false) AND coalesce(p_names_time, false)
                              THEN p_weight ELSE 0 END
                       + CASE WHEN p_range IS NOT NULL
                                   AND coalesce(p_event_time, tstzrange(p_time, p_time, '[]')) && p_range
                              THEN p_weight ELSE 0 END
           END
$$;
