-- Named queries of memdb.families.keys (loaded by memdb.core.sql): API keys of the HTTP door, kept by the
-- admin login (the application role has no privilege on memdb.api_keys).

-- name: key_create
INSERT INTO memdb.api_keys (key_id, secret_sha256, tenant, key_subject, is_admin, name)
VALUES (%(key_id)s, %(sha256)s, %(tenant)s, %(subject)s, %(is_admin)s, %(name)s)
RETURNING id, key_id, tenant, key_subject AS subject, is_admin, name, created_by, created_at,
          revoked_at, last_used_at;

-- name: key_list
SELECT id, key_id, tenant, key_subject AS subject, is_admin, name, created_by, created_at,
       revoked_at, last_used_at
  FROM memdb.api_keys
 WHERE (%(tenant)s::text IS NULL OR tenant = %(tenant)s)
   AND (%(include_revoked)s OR revoked_at IS NULL)
 ORDER BY id;

-- name: key_revoke
-- By key_id (the visible part), or by the numeric id when the text is all digits; a key already
-- revoked keeps its first revocation time.
UPDATE memdb.api_keys
   SET revoked_at = coalesce(revoked_at, now())
 WHERE key_id = %(ref)s OR (%(ref)s ~ '^[0-9]{1,18}$' AND id = %(ref)s::bigint)
RETURNING id, key_id, tenant, key_subject AS subject, is_admin, name, created_by, created_at,
          revoked_at, last_used_at;

-- name: key_lookup
SELECT id, key_id, tenant, subject, is_admin, name FROM memdb.api_key_lookup(%(sha256)s);
