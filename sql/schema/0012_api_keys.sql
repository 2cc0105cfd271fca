-- memdb schema, revision 0012 (frozen): API keys of the HTTP door (`memdb serve`).
--   * memdb.api_keys: one row per key. A key is `mdb_<key_id>_<secret>`; only its sha256
--     (secret_sha256, of the whole key) is stored, never the key. key_id is the visible part
--     (list, revoke, logs name a key by it). A key is bound to one tenant and optionally one
--     subject (key_subject: not named `subject`, so memdb.subject_tables() does not take the
--     keys for a subject's rows to export or erase), or is an admin key (tenant NULL): the
--     all-tenant operations (maintenance) and nothing of a tenant's memories;
--   * revoked_at set: the key no longer authenticates (rows are kept: list shows them);
--     last_used_at is refreshed by memdb.api_key_lookup at most once a minute.
-- The application role (memdb_app) gets no privilege on the table and a policy that shows it
-- no row: the admin login (the owner) creates, lists and revokes keys; the data path checks a
-- presented key only through memdb.api_key_lookup (SECURITY DEFINER, sql/functions), which takes
-- the key's hash and returns the row's binding, never a hash.

CREATE TABLE memdb.api_keys (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key_id        text        NOT NULL CHECK (key_id ~ '^[a-z0-9]{8,32}$'),
    secret_sha256 bytea       NOT NULL CHECK (length(secret_sha256) = 32),
    tenant        text        CHECK (length(tenant) BETWEEN 1 AND 256),
    key_subject   text        CHECK (length(key_subject) BETWEEN 1 AND 256),
    is_admin      boolean     NOT NULL DEFAULT false,
    name          text        NOT NULL DEFAULT '' CHECK (length(name) <= 256),
    created_by    text        NOT NULL DEFAULT current_user,
    created_at    timestamptz NOT NULL DEFAULT now(),
    revoked_at    timestamptz,
    last_used_at  timestamptz,
    CONSTRAINT api_keys_key_id_key UNIQUE (key_id),
    CONSTRAINT api_keys_secret_sha256_key UNIQUE (secret_sha256),
    CONSTRAINT api_keys_binding_check CHECK (
        (is_admin AND tenant IS NULL AND key_subject IS NULL)
        OR (NOT is_admin AND tenant IS NOT NULL))
);
CREATE INDEX api_keys_tenant_idx ON memdb.api_keys (tenant);

REVOKE ALL ON memdb.api_keys FROM PUBLIC;
ALTER TABLE memdb.api_keys ENABLE ROW LEVEL SECURITY;
CREATE POLICY api_keys_none ON memdb.api_keys TO memdb_app USING (false) WITH CHECK (false);
