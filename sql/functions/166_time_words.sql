-- memdb.time_words(p_text text) -> boolean
-- Whether p_text holds a duration or a date word, a time memdb.time_range cannot place on a
-- calendar: "for 4 years", "about a month", "since", "2019", "Friday", "ago", 三年, 六个月,
-- 周五, 星期天, 以来. With time_range it decides a memory's names_time (its content carries a
-- time; sql/functions/090_memories_before_write.sql): names_time = event_time IS NOT NULL
-- OR memdb.time_words(content). A LIKE ANY over the words the expression starts from rejects
-- most text before the regular expression runs.
-- Example: SELECT memdb.time_words('I have known them for 4 years'), memdb.time_words('我们是三年的朋友');
--          -> true, true
CREATE OR REPLACE FUNCTION memdb.time_words(p_text text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT coalesce(lower(p_text) LIKE ANY (ARRAY[
                        '%0%', '%1%', '%2%', '%3%', '%4%', '%5%', '%6%', '%7%', '%8%', '%9%',
                        '%day%', '%week%', '%month%', '%year%', '%decade%', '%since%', '%ago%',
                        '%年%', '%月%', '%天%', '%周%', '%星期%', '%礼拜%', '%以来%'])
                    AND lower(p_text) ~ (
            '\m(?:for|about|over|nearly|almost|around) (?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few|several) (?:days?|weeks?|months?|years?|decades?)\M'
            '|\msince\M|\m(?:19|20)\d\d\M|\m(?:mon|tues|wednes|thurs|fri|satur|sun)days?\M|\mago\M'
            '|(?:\d+|[一二两三四五六七八九十]+)(?:个)?(?:年|月|天|周|星期)|(?:星期|周|礼拜)[一二三四五六日天]|以来'),
                    false)
$$;
