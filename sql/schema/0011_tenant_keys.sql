-- memdb schema, revision 0011 (frozen): every foreign key between tenant-owned tables includes
-- the tenant.
--   PostgreSQL checks a foreign key without row-level security. With keys on id alone, a login
--   granted memdb_app and confined to tenant A could write rows of A that point at tenant B's
--   memory, document or entity by its id (a memory_usage row of A made forgetting count B's
--   memory as used; any such row proved that B's id exists). Now each key is (tenant, column)
--   and references (tenant, id), so another tenant's id is refused like an id that exists
--   nowhere (foreign_key_violation), for the application role and the admin alike. The same
--   shape is what Citus needs to distribute these tables by tenant.
--   * memories, documents and entities get UNIQUE (tenant, id) (the referenced key; each is a
--     second btree index beside the primary key);
--   * the eleven keys below are replaced, under their old names, by composite ones with the
--     same ON DELETE action; SET NULL names its column (PostgreSQL 15+: ON DELETE SET NULL
--     (memory_id)), so the NOT NULL tenant column is never nulled;
--   * memories.space_id -> embedding_spaces (a registry shared by all tenants) and
--     session_messages -> sessions (already (tenant, subject, session_id)) are unchanged.
-- Existing references across tenants: memdb itself never writes one, so a database that holds
-- one was written around memdb (by hand, or by an application login probing the old keys).
-- The upgrade refuses (foreign_key_violation) naming each key and how many rows cross tenants,
-- and changes nothing: it deletes and nulls nothing on its own, since the row that crosses may
-- be the one the operator wants to keep. Delete (or, for a SET NULL key, null) those rows as
-- the admin and upgrade again; the HINT gives the query that lists them.

DO $$
DECLARE
    r       record;
    v_n     bigint;
    v_found text := '';
BEGIN
    FOR r IN SELECT * FROM (VALUES
            ('memories', 'superseded_by', 'memories'),
            ('memories', 'document_id', 'documents'),
            ('memory_usage', 'memory_id', 'memories'),
            ('review_queue', 'memory_id', 'memories'),
            ('document_chunks', 'document_id', 'documents'),
            ('document_chunks', 'memory_id', 'memories'),
            ('entity_mentions', 'entity_id', 'entities'),
            ('entity_mentions', 'memory_id', 'memories'),
            ('entity_relations', 'from_id', 'entities'),
            ('entity_relations', 'to_id', 'entities'),
            ('entity_relations', 'memory_id', 'memories')) AS k (child, col, parent)
    LOOP
        EXECUTE format('SELECT count(*) FROM memdb.%I c JOIN memdb.%I p ON p.id = c.%I'
                       ' WHERE p.tenant <> c.tenant', r.child, r.parent, r.col)
            INTO v_n;
        IF v_n > 0 THEN
            v_found := v_found || format(E'\n  memdb.%s.%s -> memdb.%s: %s row(s)',
                                         r.child, r.col, r.parent, v_n);
        END IF;
    END LOOP;
    IF v_found <> '' THEN
        RAISE EXCEPTION 'memdb revision 0011: rows reference another tenant''s row; nothing was changed:%',
            v_found
            USING ERRCODE = 'foreign_key_violation',
                  HINT = 'memdb never writes such rows. List them as the admin, e.g. SELECT c.*'
                      || ' FROM memdb.memory_usage c JOIN memdb.memories p ON p.id = c.memory_id'
                      || ' WHERE p.tenant <> c.tenant; delete them (or set the reference to NULL)'
                      || ' and run the upgrade again.';
    END IF;
END
$$;

ALTER TABLE memdb.memories ADD CONSTRAINT memories_tenant_id_key UNIQUE (tenant, id);
ALTER TABLE memdb.documents ADD CONSTRAINT documents_tenant_id_key UNIQUE (tenant, id);
ALTER TABLE memdb.entities ADD CONSTRAINT entities_tenant_id_key UNIQUE (tenant, id);

ALTER TABLE memdb.memories
    DROP CONSTRAINT memories_superseded_by_fkey,
    DROP CONSTRAINT memories_document_id_fkey,
    ADD CONSTRAINT memories_superseded_by_fkey FOREIGN KEY (tenant, superseded_by)
        REFERENCES memdb.memories (tenant, id) ON DELETE SET NULL (superseded_by),
    ADD CONSTRAINT memories_document_id_fkey FOREIGN KEY (tenant, document_id)
        REFERENCES memdb.documents (tenant, id) ON DELETE CASCADE;

ALTER TABLE memdb.memory_usage
    DROP CONSTRAINT memory_usage_memory_id_fkey,
    ADD CONSTRAINT memory_usage_memory_id_fkey FOREIGN KEY (tenant, memory_id)
        REFERENCES memdb.memories (tenant, id) ON DELETE CASCADE;

ALTER TABLE memdb.review_queue
    DROP CONSTRAINT review_queue_memory_id_fkey,
    ADD CONSTRAINT review_queue_memory_id_fkey FOREIGN KEY (tenant, memory_id)
        REFERENCES memdb.memories (tenant, id) ON DELETE SET NULL (memory_id);

ALTER TABLE memdb.document_chunks
    DROP CONSTRAINT document_chunks_document_id_fkey,
    DROP CONSTRAINT document_chunks_memory_id_fkey,
    ADD CONSTRAINT document_chunks_document_id_fkey FOREIGN KEY (tenant, document_id)
        REFERENCES memdb.documents (tenant, id) ON DELETE CASCADE,
    ADD CONSTRAINT document_chunks_memory_id_fkey FOREIGN KEY (tenant, memory_id)
        REFERENCES memdb.memories (tenant, id) ON DELETE CASCADE;

ALTER TABLE memdb.entity_mentions
    DROP CONSTRAINT entity_mentions_entity_id_fkey,
    DROP CONSTRAINT entity_mentions_memory_id_fkey,
    ADD CONSTRAINT entity_mentions_entity_id_fkey FOREIGN KEY (tenant, entity_id)
        REFERENCES memdb.entities (tenant, id) ON DELETE CASCADE,
    ADD CONSTRAINT entity_mentions_memory_id_fkey FOREIGN KEY (tenant, memory_id)
        REFERENCES memdb.memories (tenant, id) ON DELETE CASCADE;

ALTER TABLE memdb.entity_relations
    DROP CONSTRAINT entity_relations_from_id_fkey,
    DROP CONSTRAINT entity_relations_to_id_fkey,
    DROP CONSTRAINT entity_relations_memory_id_fkey,
    ADD CONSTRAINT entity_relations_from_id_fkey FOREIGN KEY (tenant, from_id)
        REFERENCES memdb.entities (tenant, id) ON DELETE CASCADE,
    ADD CONSTRAINT entity_relations_to_id_fkey FOREIGN KEY (tenant, to_id)
        REFERENCES memdb.entities (tenant, id) ON DELETE CASCADE,
    ADD CONSTRAINT entity_relations_memory_id_fkey FOREIGN KEY (tenant, memory_id)
        REFERENCES memdb.memories (tenant, id) ON DELETE CASCADE;
