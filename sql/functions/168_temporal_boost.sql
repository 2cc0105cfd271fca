-- memdb.temporal_boost(p_content text, p_time timestamptz, p_intent boolean,
--                      p_range tstzrange, p_weight double precision) -> double precision
-- The temporal factor of a memory in memdb.search_hybrid (option temporal = p_weight > 0):
--   1 + p_weight when the query asks about time (p_intent, memdb.temporal_intent) and the
--     memory's content carries a time: one memdb.time_range can place against the memory's
--     own time p_time (its valid_from: "yesterday", "last week", "two years ago", 昨天, 上周,
--     去年, "7 May 2023"), or a duration or date word ("for 4 years", "since", "2019",
--     "Friday", 三年, 周五, 以来);
--   + p_weight more when the query names a time p_range (memdb.time_range of the query
--     against the search's as_of or now()) and the memory's event time overlaps it: the time
--     its content names, else its own time;
--   1 otherwise (and whenever p_weight <= 0). Only the content is read, never search_context.
-- Example: SELECT memdb.temporal_boost('I went there yesterday', '2023-05-08', true, NULL, 0.5);  -> 1.5
CREATE OR REPLACE FUNCTION memdb.temporal_boost(p_content text, p_time timestamptz, p_intent boolean,
                                                p_range tstzrange, p_weight double precision)
RETURNS double precision
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    r tstzrange;
    f double precision := 1;
BEGIN
    IF coalesce(p_weight, 0) <= 0 OR (NOT coalesce(p_intent, false) AND p_range IS NULL) THEN
        RETURN 1;
    END IF;
    r := memdb.time_range(p_content, p_time);
    IF p_intent AND (r IS NOT NULL OR (lower(p_content) LIKE ANY (ARRAY[
                                           '%0%', '%1%', '%2%', '%3%', '%4%', '%5%', '%6%', '%7%', '%8%',
                                           '%9%', '%day%', '%week%', '%month%', '%year%', '%decade%',
                                           '%since%', '%ago%', '%年%', '%月%', '%天%', '%周%', '%星期%',
                                           '%礼拜%', '%以来%'])
                                       AND lower(p_content) ~ (
            '\m(?:for|about|over|nearly|almost|around) (?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few|several) (?:days?|weeks?|months?|years?|decades?)\M'
            '|\msince\M|\m(?:19|20)\d\d\M|\m(?:mon|tues|wednes|thurs|fri|satur|sun)days?\M|\mago\M'
            '|(?:\d+|[一二两三四五六七八九十]+)(?:个)?(?:年|月|天|周|星期)|(?:星期|周|礼拜)[一二三四五六日天]|以来'))) THEN
        f := f + p_weight;
    END IF;
    IF p_range IS NOT NULL AND coalesce(r, tstzrange(p_time, p_time, '[]')) && p_range THEN
        f := f + p_weight;
    END IF;
    RETURN f;
END
$$;
