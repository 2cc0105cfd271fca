-- memdb.time_range(p_text text, p_ref timestamptz) -> tstzrange
-- The time that p_text speaks of, resolved against p_ref (the time the text was said: a
-- memory's valid_from, or a query's reference time, as_of or now()), as a range of UTC days;
-- NULL when the text names no time it can place. English and Chinese; the first rule that
-- matches wins, in this order:
--   a full date: "7 May 2023", "May 7, 2023", "2023-05-07", "2023年5月7日" -> that day;
--   a month of a year: "May 2023", "2023年5月" -> that month; "5月7日" -> that day of p_ref's year;
--   yesterday / last night / 昨天 / 昨晚 -> the day before; the day before yesterday / 前天;
--   today / tonight / this morning / 今天 / 今晚 -> that day; tomorrow / 明天; 后天;
--   N days ago / N天前 (N a digit or a number word: two, a couple of, 三, 两);
--   last Friday / last fri / 上周五 -> the latest such weekday before p_ref;
--   N weeks (or weekends) ago / N周前 / N个星期前 -> the seven days around that day;
--   last weekend / 上周末, this weekend / 这周末 / 周末; last week / the week before / 上周 /
--   上个星期, this week / 本周 / 这周, next week / 下周 -> that calendar week (Monday first);
--   N months ago / N个月前, last month / 上个月, this month / 本月 / 这个月, next month / 下个月;
--   N years ago / N年前, last year / 去年, this year / 今年, next year / 明年, 前年;
--   last / this / next summer (winter, spring, fall, autumn), 去年夏天, 今年夏天, 夏天 -> that season;
--   a year: "in 2022", "since 2016", "2022年" -> that year;
--   a month named after in / last / this / next / early / late / since / during / of
--   ("in June", "last May") or 6月 / 六月 -> that month of p_ref's year (the year before when the
--   month is still to come and the word is not next; the year after for next when past).
-- Used by memdb.temporal_boost for memories (against their own time) and for the query.
-- Cost: called for every fused candidate of a temporal search, so one LIKE ANY first
-- rejects text without a digit or a word the rules start from (most text), substring tests
-- guard the few regular expressions of the rules, and there are fewer of them than
-- PostgreSQL's cache of compiled expressions holds (32): cycling through more recompiled
-- each one per row (5 ms a LoCoMo turn under load, against ~0.1 ms now).
-- Example: SELECT memdb.time_range('I went to a support group yesterday', '2023-05-08 13:56+00');
--          -> ["2023-05-07 00:00:00+00","2023-05-08 00:00:00+00")
CREATE OR REPLACE FUNCTION memdb.time_range(p_text text, p_ref timestamptz)
RETURNS tstzrange
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    t text := lower(p_text);
    d timestamp;  -- p_ref's day (UTC), midnight
    m text[];
    n integer;
    s timestamp;
    e timestamp;
    mon integer;
    has_digit boolean;
    has_month boolean;
    months constant text := 'jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t|tember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?';
    num constant text := '\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|a few|several|[一二两三四五六七八九十]+';
BEGIN
    IF p_text IS NULL OR p_ref IS NULL THEN
        RETURN NULL;
    END IF;
    -- text that names no time (most text) leaves here, after plain substring tests (a
    -- regular expression over the whole text costs more than all of them): no digit and
    -- none of the words or characters the rules below start from
    IF translate(t, '0123456789', '') = t
       AND NOT t LIKE ANY (ARRAY[
           '%yesterday%', '%today%', '%tonight%', '%tomorrow%', '% ago%', '%last night%',
           '%last week%', '%last month%', '%last year%', '%last mon%', '%last tue%', '%last wed%',
           '%last thu%', '%last fri%', '%last sat%', '%last sun%', '%this morning%',
           '%this afternoon%', '%this evening%', '%this week%', '%this month%', '%this year%',
           '%next week%', '%next month%', '%next year%', '%the week before%', '%the previous week%',
           '% jan%', '% feb%', '% mar%', '% apr%', '% jun%', '% jul%', '% aug%', '% sep%', '% oct%',
           '% nov%', '% dec%', '%in may%', '%of may%', '%last may%', '%next may%', '%early may%',
           '%late may%', '%mid may%', '%since may%', '%during may%', '%spring%', '%summer%',
           '%fall%', '%autumn%', '%winter%',
           '%昨%', '%今%', '%明%', '%后天%', '%前%', '%上周%', '%上个%', '%上星期%', '%上礼拜%',
           '%上月%', '%这周%', '%本周%', '%这个%', '%这星期%', '%下周%', '%下个%', '%下星期%', '%下月%',
           '%本月%', '%去年%', '%春天%', '%夏天%', '%秋天%', '%冬天%', '%月%']) THEN
        RETURN NULL;
    END IF;
    d := date_trunc('day', p_ref AT TIME ZONE 'UTC');
    has_digit := translate(t, '0123456789', '') <> t;
    has_month := t LIKE ANY (ARRAY['%jan%', '%feb%', '%mar%', '%apr%', '%may%', '%jun%', '%jul%',
                                   '%aug%', '%sep%', '%oct%', '%nov%', '%dec%']);

    IF has_digit THEN
        -- full dates
        IF has_month THEN
            m := regexp_match(t, '\m(\d{1,2})(?:st|nd|rd|th)? (?:of )?(' || months || ')\M,? (\d{4})\M');
            IF m IS NOT NULL THEN
                m := ARRAY[m[2], m[1], m[3]];
            ELSE
                m := regexp_match(t, '\m(' || months || ')\M\.? (\d{1,2})(?:st|nd|rd|th)?,? (\d{4})\M');
            END IF;
        END IF;
        IF m IS NULL THEN
            m := regexp_match(t, '\m(\d{4})-(\d{1,2})-(\d{1,2})\M');
            IF m IS NULL AND strpos(t, '年') > 0 THEN
                m := regexp_match(t, '(\d{4})年(\d{1,2})月(\d{1,2})[日号]');
            END IF;
            IF m IS NOT NULL THEN
                m := ARRAY[m[2], m[3], m[1]];
            END IF;
        END IF;
        IF m IS NOT NULL AND coalesce(memdb.month_number(m[1]), m[1]::integer) BETWEEN 1 AND 12 THEN
            s := make_timestamp(m[3]::integer, coalesce(memdb.month_number(m[1]), m[1]::integer), 1, 0, 0, 0)
                 + (least(m[2]::integer, 31) - 1) * interval '1 day';
            RETURN tstzrange((s AT TIME ZONE 'UTC'), ((s + interval '1 day') AT TIME ZONE 'UTC'));
        END IF;
        -- a month of a year
        m := NULL;
        IF has_month THEN
            m := regexp_match(t, '\m(' || months || ')\M,? (\d{4})\M');
        END IF;
        IF m IS NULL AND strpos(t, '年') > 0 THEN
            m := regexp_match(t, '(\d{4})年(\d{1,2})月');
            m := CASE WHEN m[2]::integer BETWEEN 1 AND 12 THEN ARRAY[m[2], m[1]] END;
        END IF;
        IF m IS NOT NULL THEN
            s := make_timestamp(m[2]::integer, coalesce(memdb.month_number(m[1]), m[1]::integer), 1, 0, 0, 0);
            RETURN tstzrange((s AT TIME ZONE 'UTC'), ((s + interval '1 month') AT TIME ZONE 'UTC'));
        END IF;
        IF strpos(t, '月') > 0 THEN
            m := regexp_match(t, '(?:^|[^\d])(\d{1,2})月(\d{1,2})[日号]');
            IF m IS NOT NULL AND m[1]::integer BETWEEN 1 AND 12 THEN
                s := make_timestamp(extract(year FROM d)::integer, m[1]::integer, 1, 0, 0, 0)
                     + (least(m[2]::integer, 31) - 1) * interval '1 day';
                RETURN tstzrange((s AT TIME ZONE 'UTC'), ((s + interval '1 day') AT TIME ZONE 'UTC'));
            END IF;
        END IF;
    END IF;

    -- days
    IF strpos(t, 'day before yesterday') > 0 OR strpos(t, '前天') > 0 THEN
        s := d - interval '2 days'; e := s + interval '1 day';
    ELSIF strpos(t, 'yesterday') > 0 OR strpos(t, 'last night') > 0 OR strpos(t, '昨天') > 0
          OR strpos(t, '昨晚') > 0 OR strpos(t, '昨日') > 0 THEN
        s := d - interval '1 day'; e := d;
    ELSIF strpos(t, 'today') > 0 OR strpos(t, 'tonight') > 0 OR strpos(t, 'this morning') > 0
          OR strpos(t, 'this afternoon') > 0 OR strpos(t, 'this evening') > 0
          OR strpos(t, '今天') > 0 OR strpos(t, '今晚') > 0 OR strpos(t, '今早') > 0 OR strpos(t, '今日') > 0 THEN
        s := d; e := d + interval '1 day';
    ELSIF strpos(t, 'day after tomorrow') > 0 OR strpos(t, '后天') > 0 THEN
        s := d + interval '2 days'; e := s + interval '1 day';
    ELSIF strpos(t, 'tomorrow') > 0 OR strpos(t, '明天') > 0 THEN
        s := d + interval '1 day'; e := s + interval '1 day';
    END IF;
    IF s IS NOT NULL THEN
        RETURN tstzrange((s AT TIME ZONE 'UTC'), (e AT TIME ZONE 'UTC'));
    END IF;
    -- N days / weeks / weekends / months / years ago, N天前, N周前, N个月前, N年前
    IF strpos(t, 'ago') > 0 THEN
        m := regexp_match(t, '\m(' || num || ') (day|week|weekend|month|year)s? ago\M');
    END IF;
    IF m IS NULL AND strpos(t, '前') > 0 THEN
        m := regexp_match(t, '(\d+|[一二两三四五六七八九十]+)(?:个)?(天|周|星期|礼拜|月|年)(?:前|以前|之前)');
    END IF;
    IF m IS NOT NULL AND memdb.number_word(m[1]) IS NOT NULL THEN
        n := memdb.number_word(m[1]);
        CASE m[2]
            WHEN 'day', '天' THEN
                s := d - n * interval '1 day'; e := s + interval '1 day';
            WHEN 'month', '月' THEN
                s := date_trunc('month', d) - n * interval '1 month'; e := s + interval '1 month';
            WHEN 'year', '年' THEN
                s := date_trunc('year', d) - n * interval '1 year'; e := s + interval '1 year';
            ELSE  -- weeks: the week around that day
                s := d - n * interval '7 days' - interval '3 days'; e := s + interval '7 days';
        END CASE;
        RETURN tstzrange((s AT TIME ZONE 'UTC'), (e AT TIME ZONE 'UTC'));
    END IF;
    -- weekdays: the latest such day before d
    m := NULL;
    IF strpos(t, 'last ') > 0 THEN
        m := regexp_match(t, '\mlast (mon|tue|wed|thu|fri|sat|sun)[a-z]*\M');
    END IF;
    IF m IS NULL AND strpos(t, '上') > 0 THEN
        m := regexp_match(t, '上(?:个)?(?:周|星期|礼拜)([一二三四五六日天])');
        m := CASE m[1] WHEN '一' THEN '{mon}' WHEN '二' THEN '{tue}' WHEN '三' THEN '{wed}'
                       WHEN '四' THEN '{thu}' WHEN '五' THEN '{fri}' WHEN '六' THEN '{sat}'
                       WHEN '日' THEN '{sun}' WHEN '天' THEN '{sun}' END;
    END IF;
    IF m IS NOT NULL THEN
        n := array_position(ARRAY['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'], m[1]) - 1;
        s := d - ((((extract(dow FROM d)::integer - n + 6) % 7) + 1) * interval '1 day');
        RETURN tstzrange((s AT TIME ZONE 'UTC'), ((s + interval '1 day') AT TIME ZONE 'UTC'));
    END IF;
    -- calendar weeks (Monday first) and months
    IF strpos(t, 'last weekend') > 0 OR strpos(t, '上周末') > 0 OR strpos(t, '上个周末') > 0 THEN
        s := date_trunc('week', d) - interval '2 days'; e := date_trunc('week', d);
    ELSIF strpos(t, 'this weekend') > 0 OR strpos(t, '这周末') > 0 OR strpos(t, '这个周末') > 0
          OR strpos(t, '本周末') > 0 THEN
        s := date_trunc('week', d) + interval '5 days'; e := s + interval '2 days';
    ELSIF strpos(t, 'last week') > 0 OR strpos(t, 'the week before') > 0
          OR strpos(t, 'the previous week') > 0 OR t LIKE ANY (ARRAY['%上周%', '%上个星期%', '%上星期%',
                                                                    '%上个礼拜%', '%上礼拜%']) THEN
        s := date_trunc('week', d) - interval '7 days'; e := date_trunc('week', d);
    ELSIF strpos(t, 'this week') > 0 OR t LIKE ANY (ARRAY['%本周%', '%这周%', '%这个星期%', '%这星期%',
                                                          '%这个礼拜%']) THEN
        s := date_trunc('week', d); e := s + interval '7 days';
    ELSIF strpos(t, 'next week') > 0 OR t LIKE ANY (ARRAY['%下周%', '%下个星期%', '%下星期%', '%下个礼拜%']) THEN
        s := date_trunc('week', d) + interval '7 days'; e := s + interval '7 days';
    ELSIF strpos(t, 'last month') > 0 OR strpos(t, '上个月') > 0 OR strpos(t, '上月') > 0 THEN
        s := date_trunc('month', d) - interval '1 month'; e := date_trunc('month', d);
    ELSIF strpos(t, 'this month') > 0 OR strpos(t, '本月') > 0 OR strpos(t, '这个月') > 0 THEN
        s := date_trunc('month', d); e := s + interval '1 month';
    ELSIF strpos(t, 'next month') > 0 OR strpos(t, '下个月') > 0 OR strpos(t, '下月') > 0 THEN
        s := date_trunc('month', d) + interval '1 month'; e := s + interval '1 month';
    END IF;
    IF s IS NOT NULL THEN
        RETURN tstzrange((s AT TIME ZONE 'UTC'), (e AT TIME ZONE 'UTC'));
    END IF;
    -- seasons (northern hemisphere: spring March-May, summer June-August, ...)
    IF t LIKE ANY (ARRAY['%spring%', '%summer%', '%fall%', '%autumn%', '%winter%']) THEN
        m := regexp_match(t, '\m(last|this|next|the) (spring|summer|fall|autumn|winter)\M');
    ELSIF t LIKE ANY (ARRAY['%春天%', '%夏天%', '%秋天%', '%冬天%']) THEN
        m := regexp_match(t, '(去年|今年|明年)?(春|夏|秋|冬)天');
        m := ARRAY[CASE m[1] WHEN '去年' THEN 'last' WHEN '明年' THEN 'next' ELSE 'this' END,
                   CASE m[2] WHEN '春' THEN 'spring' WHEN '夏' THEN 'summer' WHEN '秋' THEN 'fall' ELSE 'winter' END];
    END IF;
    IF m IS NOT NULL THEN
        mon := CASE m[2] WHEN 'spring' THEN 3 WHEN 'summer' THEN 6 WHEN 'winter' THEN 12 ELSE 9 END;
        s := make_timestamp(extract(year FROM d)::integer, mon, 1, 0, 0, 0)
             - CASE WHEN m[2] = 'winter' THEN interval '1 year' ELSE interval '0' END
             + CASE m[1] WHEN 'last' THEN interval '-1 year' WHEN 'next' THEN interval '1 year' ELSE interval '0' END;
        RETURN tstzrange((s AT TIME ZONE 'UTC'), ((s + interval '3 months') AT TIME ZONE 'UTC'));
    END IF;
    -- years
    IF strpos(t, 'last year') > 0 OR strpos(t, '去年') > 0 THEN
        s := date_trunc('year', d) - interval '1 year'; e := date_trunc('year', d);
    ELSIF strpos(t, '前年') > 0 THEN
        s := date_trunc('year', d) - interval '2 years'; e := s + interval '1 year';
    ELSIF strpos(t, 'this year') > 0 OR strpos(t, '今年') > 0 THEN
        s := date_trunc('year', d); e := s + interval '1 year';
    ELSIF strpos(t, 'next year') > 0 OR strpos(t, '明年') > 0 THEN
        s := date_trunc('year', d) + interval '1 year'; e := s + interval '1 year';
    END IF;
    IF s IS NOT NULL THEN
        RETURN tstzrange((s AT TIME ZONE 'UTC'), (e AT TIME ZONE 'UTC'));
    END IF;
    IF has_digit THEN
        m := regexp_match(t, '\m(?:in|since|during|of|from|by|before|after|until) ((?:19|20)\d\d)\M');
        IF m IS NULL AND strpos(t, '年') > 0 THEN
            m := regexp_match(t, '((?:19|20)\d\d)年');
        END IF;
        IF m IS NOT NULL THEN
            s := make_timestamp(m[1]::integer, 1, 1, 0, 0, 0);
            RETURN tstzrange((s AT TIME ZONE 'UTC'), ((s + interval '1 year') AT TIME ZONE 'UTC'));
        END IF;
    END IF;
    -- a month without a year
    IF has_month THEN
        m := regexp_match(t, '\m(in|last|this|next|early|late|mid|since|during|of) (' || months || ')\M');
    END IF;
    IF m IS NULL AND strpos(t, '月') > 0 THEN
        m := CASE WHEN has_digit THEN regexp_match(t, '(?:^|[^\d])(\d{1,2})月') END;
        IF m IS NULL THEN
            m := regexp_match(t, '(十[一二]?|[一二三四五六七八九])月');
        END IF;
        m := CASE WHEN memdb.number_word(m[1]) BETWEEN 1 AND 12 THEN ARRAY['in', memdb.number_word(m[1])::text] END;
    END IF;
    IF m IS NOT NULL AND NOT (m[1] IN ('this', 'of') AND m[2] = 'may') THEN  -- "this may be": the verb
        mon := coalesce(memdb.month_number(m[2]), m[2]::integer);
        s := make_timestamp(extract(year FROM d)::integer, mon, 1, 0, 0, 0);
        IF m[1] = 'next' AND mon <= extract(month FROM d) THEN
            s := s + interval '1 year';
        ELSIF m[1] <> 'next' AND (mon > extract(month FROM d) OR (m[1] = 'last' AND mon = extract(month FROM d))) THEN
            s := s - interval '1 year';
        END IF;
        RETURN tstzrange((s AT TIME ZONE 'UTC'), ((s + interval '1 month') AT TIME ZONE 'UTC'));
    END IF;
    RETURN NULL;
END
$$;
