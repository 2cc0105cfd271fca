-- Queries of the user profile and the task-end write trigger (memdb/profile.py,
-- memdb/task_end.py).

-- name: subject_profile
SELECT memdb.subject_profile(%(tenant)s, %(subject)s, %(limit)s) AS profile;
