-- Queries of the user profile and the task-end write trigger (memdb/retrieval/profile.py,
-- memdb/families/task_end.py).

-- name: subject_profile
SELECT memdb.subject_profile(%(tenant)s, %(subject)s, %(limit)s) AS profile;

-- name: agent_meta
-- An agent's meta memory (memdb/families/meta.py; sql/functions/261_agent_meta.sql).
SELECT memdb.agent_meta(%(tenant)s, %(agent)s, %(limit)s) AS meta;
