-- Named queries of memdb.families.lifecycle (loaded by memdb.core.sql). Parameters are %(name)s placeholders.

-- name: run_maintenance
SELECT memdb.run_maintenance(%(tenant)s::text, %(options)s::jsonb, %(dry_run)s::boolean) AS result;

-- name: forget_by_importance
SELECT id FROM memdb.forget_by_importance(%(tenant)s::text, %(threshold)s::real, %(limit)s::integer, %(dry_run)s::boolean) AS f(id);

-- name: forget_by_age
SELECT id FROM memdb.forget_by_age(%(tenant)s::text, %(days)s::double precision, %(max_uses)s::integer, %(limit)s::integer, %(dry_run)s::boolean) AS f(id);

-- name: forget_by_capacity
SELECT id FROM memdb.forget_by_capacity(%(tenant)s::text, %(max_per_session)s::integer, %(half_life_days)s::double precision,
                                        %(limit)s::integer, %(dry_run)s::boolean) AS f(id);

-- name: decay_hypotheses
SELECT id, old_confidence, new_confidence, action
FROM memdb.decay_hypotheses(%(tenant)s::text, %(half_life_days)s::double precision, %(floor)s::real, %(min_step)s::real, %(limit)s::integer,
                            %(dry_run)s::boolean);

-- name: consolidate_session
SELECT id, old_importance, new_importance
FROM memdb.consolidate_session(%(tenant)s::text, %(session_id)s::text, %(threshold)s::real, %(subject)s::text, %(dry_run)s::boolean);

-- name: session_memories
SELECT m.id, m.subject, m.content, m.importance
FROM memdb.memories m
WHERE m.tenant = %(tenant)s::text AND m.session_id = %(session_id)s::text AND m.kind = 'working'
  AND (%(subject)s::text IS NULL OR m.subject = %(subject)s::text)
  AND m.valid_to IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())
ORDER BY m.created_at, m.id
LIMIT %(limit)s::integer;

-- name: recent_summaries
SELECT m.id, m.subject, m.content, m.version
FROM memdb.memories m
WHERE m.tenant = %(tenant)s::text AND m.tags @> ARRAY['session-summary']
  AND (%(subject)s::text IS NULL OR m.subject = %(subject)s::text)
  AND m.valid_to IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())
  AND m.created_at >= now() - %(days)s::double precision * interval '1 day'
ORDER BY m.subject, m.created_at, m.id;

-- name: recurring_terms
-- Latin-script lexemes (stemmed) in at least min_sessions of the given summaries; CJK n-grams
-- are left out (bigrams across word boundaries are noise), as are the stop text's lexemes
SELECT u.lexeme AS term, count(DISTINCT m.id) AS sessions
FROM memdb.memories m CROSS JOIN LATERAL unnest(m.tsv) u
WHERE m.tenant = %(tenant)s::text AND m.id = ANY (%(ids)s)
  AND char_length(u.lexeme) >= 4 AND u.lexeme ~ '^[a-z]' AND u.lexeme !~ '[^a-z0-9.+#_-]'
  AND NOT (u.lexeme = ANY (tsvector_to_array(memdb.tokenize(%(stop)s::text))))
GROUP BY u.lexeme
HAVING count(DISTINCT m.id) >= %(min_sessions)s::integer
ORDER BY count(DISTINCT m.id) DESC, u.lexeme
LIMIT %(limit)s::integer;

-- name: sediment_run_exists
SELECT EXISTS (SELECT 1 FROM memdb.sediment_runs r
               WHERE r.tenant = %(tenant)s AND r.subject = %(subject)s
                 AND r.run_date = current_date AND r.source_hash = %(source_hash)s) AS done;

-- name: sediment_run_insert
INSERT INTO memdb.sediment_runs (tenant, subject, run_date, source_hash, written)
VALUES (%(tenant)s, %(subject)s, current_date, %(source_hash)s, %(written)s)
ON CONFLICT DO NOTHING
RETURNING run_date;

-- name: known_contents
-- which of the texts the subject already has: a current long-term memory in the scope
-- sedimentation writes to (user, no project, no session) or a review entry
SELECT t.content
FROM unnest(%(contents)s::text[]) AS t(content)
WHERE EXISTS (SELECT 1 FROM memdb.memories m
              WHERE m.tenant = %(tenant)s::text AND m.subject = %(subject)s::text
                AND m.scope = 'user' AND m.project_id IS NULL AND m.session_id IS NULL
                AND m.valid_to IS NULL AND m.content_hash = memdb.content_hash(t.content))
   OR EXISTS (SELECT 1 FROM memdb.review_queue q
              WHERE q.tenant = %(tenant)s::text AND q.subject = %(subject)s::text
                AND q.content_hash = memdb.content_hash(t.content));

-- name: review_propose
INSERT INTO memdb.review_queue (tenant, subject, kind, category, content, content_hash, reason,
                                source_ids)
VALUES (%(tenant)s, %(subject)s, %(kind)s, %(category)s, %(content)s,
        memdb.content_hash(%(content)s), %(reason)s, %(source_ids)s)
ON CONFLICT (tenant, subject, content_hash) DO NOTHING
RETURNING id;

-- name: review_list
SELECT q.id, q.subject, q.kind, q.category, q.content, q.reason, q.source_ids, q.status,
       q.memory_id, q.decided_by, q.decided_at, q.created_at
FROM memdb.review_queue q
WHERE q.tenant = %(tenant)s::text AND (%(status)s::text IS NULL OR q.status = %(status)s)
  AND (%(subject)s::text IS NULL OR q.subject = %(subject)s::text)
ORDER BY q.created_at, q.id
LIMIT %(limit)s::integer;

-- name: review_content
SELECT q.content FROM memdb.review_queue q WHERE q.tenant = %(tenant)s AND q.id = %(id)s;

-- name: review_approve
SELECT memdb.review_approve(%(tenant)s::text, %(id)s, %(decided_by)s::text, %(embedding)s, %(space_id)s::integer) AS memory_id;

-- name: review_reject
SELECT memdb.review_reject(%(tenant)s::text, %(id)s, %(decided_by)s::text) AS rejected;

-- name: export_subject
SELECT memdb.export_subject(%(tenant)s::text, %(subject)s::text) AS export;

-- name: forget_subject
SELECT memdb.forget_subject(%(tenant)s::text, %(subject)s::text, %(dry_run)s::boolean) AS counts;

-- name: sediment_run_written
UPDATE memdb.sediment_runs SET written = %(written)s
WHERE tenant = %(tenant)s AND subject = %(subject)s AND run_date = current_date
  AND source_hash = %(source_hash)s;
