-- memdb.temporal_intent(p_query text) -> boolean
-- Whether a query asks about time: when / what time, date, day, week, month or year / which
-- year ... / how long (ago) / how many days, weeks, months, years / how old / since when /
-- before / after / until / ago, or in Chinese 什么时候, 何时, 哪天, 哪年, 哪个月, 几月, 几号,
-- 几点, 多久, 多长时间, 多少年 / 天 / 个月, 之前, 以前, 之后, 以后, 日期. A query that names a
-- time ("last week", "in May 2023", 上周) is treated by memdb.temporal_boost on its own.
-- Example: SELECT memdb.temporal_intent('When did Caroline go to the support group?');  -> true
CREATE OR REPLACE FUNCTION memdb.temporal_intent(p_query text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT coalesce(lower(p_query) ~ ('\m(?:when|what (?:time|date|day|week|month|year)|which (?:year|month|day|date|week|weekend)'
                                      '|how long|how many (?:days|weeks|months|years)|how old|since when|before|after|until|ago)\M'
                                      '|什么时候|何时|哪天|哪一天|哪年|哪一年|哪个月|几月|几号|几点|多久|多长时间'
                                      '|多少(?:年|天|个月|周)|之前|以前|之后|以后|日期'), false)
$$;
