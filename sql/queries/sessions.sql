-- Named queries of memdb.families.session and memdb.families.context (loaded by memdb.core.sql).
-- Parameters are %(name)s placeholders.

-- name: session_append
SELECT memdb.session_append(%(tenant)s::text, %(subject)s::text, %(session)s::text, %(role)s::text,
                            %(content)s::text, %(tokens)s::integer) AS id;

-- name: session_window
SELECT id, role, content, tokens, created_at, in_window
FROM memdb.session_window(%(tenant)s::text, %(subject)s::text, %(session)s::text,
                          %(max_tokens)s::integer, %(max_messages)s::integer);

-- name: session_fold
SELECT memdb.session_fold(%(tenant)s::text, %(subject)s::text, %(session)s::text,
                          %(expected_through)s::bigint, %(through)s::bigint, %(summary)s::text,
                          %(summary_tokens)s::integer, %(path)s::text) AS applied;

-- name: session_set_state
SELECT applied, version
FROM memdb.session_set_state(%(tenant)s::text, %(subject)s::text, %(session)s::text,
                             %(state)s::jsonb, %(expected_version)s::integer);

-- name: session_get
SELECT s.session_id, s.subject, s.summary, s.summary_tokens, s.summary_path,
       s.summarized_through, s.state, s.state_version, s.created_at, s.updated_at,
       (SELECT count(*) FROM memdb.session_messages m
        WHERE m.tenant = %(tenant)s::text AND m.tenant = s.tenant AND m.subject = s.subject
          AND m.session_id = s.session_id)
         AS buffered
FROM memdb.sessions s
WHERE s.tenant = %(tenant)s::text AND s.subject = %(subject)s::text
  AND s.session_id = %(session)s::text;

-- name: session_delete
DELETE FROM memdb.sessions s
WHERE s.tenant = %(tenant)s::text AND s.subject = %(subject)s::text
  AND s.session_id = %(session)s::text
RETURNING s.session_id;

-- name: session_list
SELECT s.session_id, s.subject, s.state_version, s.updated_at,
       (SELECT count(*) FROM memdb.session_messages m
        WHERE m.tenant = %(tenant)s::text AND m.tenant = s.tenant AND m.subject = s.subject
          AND m.session_id = s.session_id)
         AS buffered
FROM memdb.sessions s
WHERE s.tenant = %(tenant)s::text AND (%(subject)s::text IS NULL OR s.subject = %(subject)s::text)
ORDER BY s.updated_at DESC, s.session_id
LIMIT %(limit)s::integer;

-- name: system_rules
SELECT m.id, m.content, m.importance
FROM memdb.memories m
WHERE m.tenant = %(tenant)s::text AND m.subject = %(subject)s::text AND m.category = 'system'
  AND m.valid_to IS NULL AND m.status = 'active'
  AND (m.expires_at IS NULL OR m.expires_at > now())
ORDER BY m.importance DESC, m.created_at, m.id
LIMIT %(limit)s::integer;
