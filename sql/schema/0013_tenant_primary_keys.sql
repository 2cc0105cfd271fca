-- memdb schema, revision 0013 (frozen): every primary key and unique constraint of a
-- tenant-owned table includes the tenant.
--   Revision 0011 put the tenant into every foreign key; the primary keys and one unique
--   constraint were still on id alone. A table distributed by tenant (Citus) can only enforce
--   a key that contains its distribution column, so each of them becomes (tenant, ...):
--   * memories, documents, entities: the primary key is (tenant, id) and replaces the
--     UNIQUE (tenant, id) of 0011 (one btree instead of two); the foreign keys that referred
--     to that unique constraint are made again, under the same names and ON DELETE actions,
--     referring to the primary key;
--   * memory_history, review_queue, session_messages, retrieval_traces, entity_relations:
--     primary key (tenant, id);
--   * memory_usage (tenant, memory_id, subject), document_chunks (tenant, document_id,
--     position), entity_mentions (tenant, entity_id, memory_id): the tenant first;
--   * entity_relations_edge_key: (tenant, from_id, type, to_id, memory_id).
--   Every key keeps its name, so ON CONFLICT ON CONSTRAINT <name> works before and after.
--   Ids stay unique on their own (uuids, identity sequences): no row can violate a new key.
-- Shared tables (embedding_spaces, api_keys) have no tenant column to distribute by and are
-- unchanged (on Citus they become reference tables).
-- Two functions change signature (sql/functions re-creates them after the migration), so
-- the old ones go, which would otherwise stay beside the new ones:
--   * memdb.matches(memdb.memories, jsonb) becomes memdb.matches(anyelement, jsonb) (a shard
--     of memories on a Citus worker has its own row type), or the old one would stay
--     preferred for memories rows;
--   * memdb.mmr(uuid[], double precision[], integer, double precision) gains a last argument,
--     the tenant of the ids (a call with four arguments would match both).
--   * memdb.chunk_provenance(memdb.documents, ...) becomes chunk_provenance(anyelement, ...),
--     for the same reason as matches.

DROP FUNCTION IF EXISTS memdb.matches(memdb.memories, jsonb);
DROP FUNCTION IF EXISTS memdb.mmr(uuid[], double precision[], integer, double precision);
DROP FUNCTION IF EXISTS memdb.chunk_provenance(memdb.documents, integer, text[], integer, integer,
                                                integer, integer);

ALTER TABLE memdb.memories
    DROP CONSTRAINT memories_superseded_by_fkey,
    DROP CONSTRAINT memories_document_id_fkey;
ALTER TABLE memdb.memory_usage DROP CONSTRAINT memory_usage_memory_id_fkey;
ALTER TABLE memdb.review_queue DROP CONSTRAINT review_queue_memory_id_fkey;
ALTER TABLE memdb.document_chunks
    DROP CONSTRAINT document_chunks_document_id_fkey,
    DROP CONSTRAINT document_chunks_memory_id_fkey;
ALTER TABLE memdb.entity_mentions
    DROP CONSTRAINT entity_mentions_entity_id_fkey,
    DROP CONSTRAINT entity_mentions_memory_id_fkey;
ALTER TABLE memdb.entity_relations
    DROP CONSTRAINT entity_relations_from_id_fkey,
    DROP CONSTRAINT entity_relations_to_id_fkey,
    DROP CONSTRAINT entity_relations_memory_id_fkey;

ALTER TABLE memdb.memories
    DROP CONSTRAINT memories_tenant_id_key,
    DROP CONSTRAINT memories_pkey,
    ADD CONSTRAINT memories_pkey PRIMARY KEY (tenant, id);
ALTER TABLE memdb.documents
    DROP CONSTRAINT documents_tenant_id_key,
    DROP CONSTRAINT documents_pkey,
    ADD CONSTRAINT documents_pkey PRIMARY KEY (tenant, id);
ALTER TABLE memdb.entities
    DROP CONSTRAINT entities_tenant_id_key,
    DROP CONSTRAINT entities_pkey,
    ADD CONSTRAINT entities_pkey PRIMARY KEY (tenant, id);

ALTER TABLE memdb.memory_history
    DROP CONSTRAINT memory_history_pkey,
    ADD CONSTRAINT memory_history_pkey PRIMARY KEY (tenant, id);
ALTER TABLE memdb.review_queue
    DROP CONSTRAINT review_queue_pkey,
    ADD CONSTRAINT review_queue_pkey PRIMARY KEY (tenant, id);
ALTER TABLE memdb.session_messages
    DROP CONSTRAINT session_messages_pkey,
    ADD CONSTRAINT session_messages_pkey PRIMARY KEY (tenant, id);
ALTER TABLE memdb.retrieval_traces
    DROP CONSTRAINT retrieval_traces_pkey,
    ADD CONSTRAINT retrieval_traces_pkey PRIMARY KEY (tenant, id);
ALTER TABLE memdb.memory_usage
    DROP CONSTRAINT memory_usage_pkey,
    ADD CONSTRAINT memory_usage_pkey PRIMARY KEY (tenant, memory_id, subject);
ALTER TABLE memdb.document_chunks
    DROP CONSTRAINT document_chunks_pkey,
    ADD CONSTRAINT document_chunks_pkey PRIMARY KEY (tenant, document_id, position);
ALTER TABLE memdb.entity_mentions
    DROP CONSTRAINT entity_mentions_pkey,
    ADD CONSTRAINT entity_mentions_pkey PRIMARY KEY (tenant, entity_id, memory_id);
ALTER TABLE memdb.entity_relations
    DROP CONSTRAINT entity_relations_pkey,
    DROP CONSTRAINT entity_relations_edge_key,
    ADD CONSTRAINT entity_relations_pkey PRIMARY KEY (tenant, id),
    ADD CONSTRAINT entity_relations_edge_key UNIQUE (tenant, from_id, type, to_id, memory_id);

ALTER TABLE memdb.memories
    ADD CONSTRAINT memories_superseded_by_fkey FOREIGN KEY (tenant, superseded_by)
        REFERENCES memdb.memories (tenant, id) ON DELETE SET NULL (superseded_by),
    ADD CONSTRAINT memories_document_id_fkey FOREIGN KEY (tenant, document_id)
        REFERENCES memdb.documents (tenant, id) ON DELETE CASCADE;
ALTER TABLE memdb.memory_usage
    ADD CONSTRAINT memory_usage_memory_id_fkey FOREIGN KEY (tenant, memory_id)
        REFERENCES memdb.memories (tenant, id) ON DELETE CASCADE;
ALTER TABLE memdb.review_queue
    ADD CONSTRAINT review_queue_memory_id_fkey FOREIGN KEY (tenant, memory_id)
        REFERENCES memdb.memories (tenant, id) ON DELETE SET NULL (memory_id);
ALTER TABLE memdb.document_chunks
    ADD CONSTRAINT document_chunks_document_id_fkey FOREIGN KEY (tenant, document_id)
        REFERENCES memdb.documents (tenant, id) ON DELETE CASCADE,
    ADD CONSTRAINT document_chunks_memory_id_fkey FOREIGN KEY (tenant, memory_id)
        REFERENCES memdb.memories (tenant, id) ON DELETE CASCADE;
ALTER TABLE memdb.entity_mentions
    ADD CONSTRAINT entity_mentions_entity_id_fkey FOREIGN KEY (tenant, entity_id)
        REFERENCES memdb.entities (tenant, id) ON DELETE CASCADE,
    ADD CONSTRAINT entity_mentions_memory_id_fkey FOREIGN KEY (tenant, memory_id)
        REFERENCES memdb.memories (tenant, id) ON DELETE CASCADE;
ALTER TABLE memdb.entity_relations
    ADD CONSTRAINT entity_relations_from_id_fkey FOREIGN KEY (tenant, from_id)
        REFERENCES memdb.entities (tenant, id) ON DELETE CASCADE,
    ADD CONSTRAINT entity_relations_to_id_fkey FOREIGN KEY (tenant, to_id)
        REFERENCES memdb.entities (tenant, id) ON DELETE CASCADE,
    ADD CONSTRAINT entity_relations_memory_id_fkey FOREIGN KEY (tenant, memory_id)
        REFERENCES memdb.memories (tenant, id) ON DELETE CASCADE;
