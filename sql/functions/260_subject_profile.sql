-- memdb.subject_profile(p_tenant text, p_subject text, p_limit integer DEFAULT 20) -> jsonb
-- A subject's profile as one JSON document, derived on read from its current memories (so it
-- is always as current as they are, and inspectable from psql):
--   {"subject", "tenant", "preferences": [...], "habits": [...], "expertise": [...],
--    "communication_style": [...], "lessons": [...], "facts": [...], "memory_ids": [...],
--    "counts": {...}, "updated_at"}
-- Each item is {"content", "memory_ids", "category", "importance", "confidence",
-- "updated_at"}: memories with the same normalized text (content_hash) are one item that
-- lists every memory it came from, most important first. Sections, by the first rule that
-- applies (Chinese and English cues, case-insensitive):
--   communication_style  a style cue (回答/回复/语气/简洁/用中文…, answer/reply/tone/concise/
--                        language/format…) in category preferences, system, patterns, general;
--   lessons              category patterns tagged 'reflection' (or metadata reflection=true);
--   habits               category patterns; preferences or entities/general with a habit cue
--                        (习惯/通常/每天/经常…, usually/every morning/routine/habit…);
--   expertise            category skills; entities/general with an expertise cue
--                        (擅长/精通/工程师/经验…, expert/engineer/experienced/proficient…);
--   preferences          category preferences;
--   facts                stable facts about the subject that no section above took: a stable
--                        personal cue (the write gate's profile cues: 过敏/生日是/名字叫/住在/
--                        老家/来自…, allergic/birthday is/name is/lives in/is from…) in any of
--                        these categories but system, or in events (a birthday is one),
--                        else a semantic memory of category entities or general; never a
--                        document chunk, at most 500 characters; cue facts first.
-- Only current (valid_to IS NULL), active (not hypotheses), unexpired, non-working,
-- non-session-scoped memories; other system rules are left out (the context builder renders
-- them as rules). At most p_limit items per section, by importance, then recency. Runs with
-- the caller's rights, so row-level security confines it like every other read.
CREATE OR REPLACE FUNCTION memdb.subject_profile(p_tenant text, p_subject text,
                                                 p_limit integer DEFAULT 20)
RETURNS jsonb
LANGUAGE sql STABLE
AS $$
    WITH cues AS (
        SELECT '回答|回复|答复|语气|口吻|简洁|简短|简明|详细|啰嗦|用中文|用英文|中文回|英文回|称呼|格式|'
               '表情|措辞|风格|解释|\m(answers?|repl(y|ies)|respon(d|se|ses)|tone|concise|brief|'
               'verbose|terse|detailed|language|format(ted|ting)?|formal|informal|bullet|'
               'emojis?|explanations?|wording|style|markdown)\M' AS style,
               '习惯|通常|一般会|经常|常常|每天|每晚|每早|每周|每个月|总会|惯于|\m(usually|'
               'habits?|routines?|often|typically|every (day|morning|evening|night|week|month)|'
               'daily|weekly|tends? to)\M' AS habit,
               '擅长|精通|熟悉|熟练|专家|工程师|开发者|程序员|研究员|设计师|经验|专业|资深|'
               '\m(expert|expertise|experienced|proficient|skilled|engineer|developer|'
               'programmer|researcher|designer|specialist|fluent|professional|senior)\M'
               AS expertise,
               '过敏|不耐受|生日(是|在|为|[:：])|出生(于|在|日期)|(?<![产发])生于|名字(是|叫)|名叫|'
               '叫做|住在|家住|住址|家在|老家|籍贯|来自|血型|母语|国籍|\m(allergic|allerg(y|ies)|'
               'intolerant|birthday( is|''s| falls)|born (on|in)|date of birth|birth ?date|'
               'name( is|''s)|named|goes by|lives? (in|at)|living in|home ?town|grew up in|'
               '(is|am|are) from|comes? from|blood type|nationality|native language|'
               'mother tongue)\M' AS stable
    ), current_memories AS (
        SELECT m.id, m.content, m.content_hash, m.category, m.importance, m.confidence,
               m.updated_at,
               CASE
                   WHEN m.category IN ('preferences', 'system', 'patterns', 'general')
                        AND m.content ~* c.style
                        AND NOT (m.category = 'patterns' AND ('reflection' = ANY (m.tags)
                                 OR m.metadata @> '{"reflection": true}'))
                       THEN 'communication_style'
                   WHEN m.category = 'patterns' AND ('reflection' = ANY (m.tags)
                                                    OR m.metadata @> '{"reflection": true}')
                       THEN 'lessons'
                   WHEN m.category = 'patterns' THEN 'habits'
                   WHEN m.category = 'skills' THEN 'expertise'
                   WHEN m.category = 'preferences' AND m.content ~* c.habit THEN 'habits'
                   WHEN m.category = 'preferences' THEN 'preferences'
                   WHEN m.category IN ('entities', 'general') AND m.content ~* c.expertise
                       THEN 'expertise'
                   WHEN m.category IN ('entities', 'general') AND m.content ~* c.habit
                       THEN 'habits'
                   WHEN m.category = 'system' OR m.source_type = 'document'
                        OR char_length(m.content) > 500 THEN NULL
                   WHEN m.content ~* c.stable THEN 'facts'
                   WHEN m.kind = 'semantic' AND m.category IN ('entities', 'general')
                       THEN 'facts'
               END AS section,
               (m.content ~* c.stable)::int AS cue
        FROM memdb.memories m CROSS JOIN cues c
        WHERE m.tenant = p_tenant AND m.subject = p_subject
          AND m.valid_to IS NULL AND m.status = 'active'
          AND (m.expires_at IS NULL OR m.expires_at > now())
          AND m.kind <> 'working' AND m.scope <> 'session'
          AND m.category IN ('preferences', 'skills', 'patterns', 'system', 'entities',
                             'general', 'events')
    ), grouped AS (
        SELECT g.section,
               (array_agg(g.content ORDER BY g.importance DESC, g.updated_at DESC, g.id))[1]
                   AS content,
               (array_agg(g.category ORDER BY g.importance DESC, g.updated_at DESC, g.id))[1]
                   AS category,
               array_agg(g.id::text ORDER BY g.importance DESC, g.updated_at DESC, g.id)
                   AS memory_ids,
               max(g.importance) AS importance, max(g.confidence) AS confidence,
               max(g.updated_at) AS updated_at, max(g.cue) AS cue
        FROM current_memories g
        WHERE g.section IS NOT NULL
        GROUP BY g.section, g.content_hash
    ), ranked AS (
        SELECT r.*, row_number() OVER (PARTITION BY r.section
                                      ORDER BY CASE WHEN r.section = 'facts' THEN r.cue END
                                                   DESC NULLS LAST,
                                               r.importance DESC, r.updated_at DESC,
                                               r.memory_ids[1]) AS pos
        FROM grouped r
    ), kept AS (
        SELECT k.* FROM ranked k WHERE k.pos <= greatest(coalesce(p_limit, 20), 0)
    ), sections AS (
        SELECT k.section,
               jsonb_agg(jsonb_build_object(
                   'content', k.content, 'memory_ids', to_jsonb(k.memory_ids),
                   'category', k.category, 'importance', round(k.importance::numeric, 2),
                   'confidence', round(k.confidence::numeric, 2), 'updated_at', k.updated_at)
                   ORDER BY k.pos) AS items,
               count(*) AS n
        FROM kept k
        GROUP BY k.section
    )
    SELECT jsonb_build_object(
        'subject', p_subject, 'tenant', p_tenant,
        'preferences', coalesce((SELECT s.items FROM sections s
                                 WHERE s.section = 'preferences'), '[]'::jsonb),
        'habits', coalesce((SELECT s.items FROM sections s WHERE s.section = 'habits'),
                           '[]'::jsonb),
        'expertise', coalesce((SELECT s.items FROM sections s WHERE s.section = 'expertise'),
                              '[]'::jsonb),
        'communication_style', coalesce((SELECT s.items FROM sections s
                                         WHERE s.section = 'communication_style'),
                                        '[]'::jsonb),
        'lessons', coalesce((SELECT s.items FROM sections s WHERE s.section = 'lessons'),
                            '[]'::jsonb),
        'facts', coalesce((SELECT s.items FROM sections s WHERE s.section = 'facts'),
                          '[]'::jsonb),
        'memory_ids', coalesce((SELECT jsonb_agg(DISTINCT i.mid)
                                FROM kept k, unnest(k.memory_ids) AS i(mid)), '[]'::jsonb),
        'counts', coalesce((SELECT jsonb_object_agg(s.section, s.n) FROM sections s),
                           '{}'::jsonb),
        'updated_at', (SELECT max(k.updated_at) FROM kept k))
$$;
