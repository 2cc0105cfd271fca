-- memdb schema, revision 0020 (frozen): per-field vectors of LangGraph store items.
-- LangGraph's stores embed each text an item's index fields extract (index_config["fields"],
-- or a put's index=[...]) on its own and score an item by its best field. memdb's LangGraph
-- store (memdb.integrations.langgraph) keeps those vectors here, one row per extracted text,
-- beside the memory that holds the item; the memory keeps its own one vector for memdb's
-- searches. Rows go with their memory (ON DELETE CASCADE) and are rewritten by each put.
-- On a Citus coordinator alembic/versions/0020_item_vectors.py distributes the table by tenant,
-- co-located with memdb.memories, right after it is made and before its foreign keys (Citus
-- refuses a key from a local table to a distributed one); nothing here is Citus-specific.

CREATE TABLE memdb.item_vectors (
    tenant    text    NOT NULL,
    subject   text    NOT NULL,
    memory_id uuid    NOT NULL,
    path      text    NOT NULL,
    ordinal   integer NOT NULL CHECK (ordinal >= 0),
    space_id  integer NOT NULL,
    embedding vector  NOT NULL,
    CONSTRAINT item_vectors_pkey PRIMARY KEY (tenant, memory_id, path, ordinal)
);

ALTER TABLE memdb.item_vectors ADD CONSTRAINT item_vectors_space_id_fkey FOREIGN KEY (space_id)
    REFERENCES memdb.embedding_spaces (id);
ALTER TABLE memdb.item_vectors ADD CONSTRAINT item_vectors_memory_id_fkey
    FOREIGN KEY (tenant, memory_id) REFERENCES memdb.memories (tenant, id) ON DELETE CASCADE;

GRANT SELECT, INSERT, UPDATE, DELETE ON memdb.item_vectors TO memdb_app;

ALTER TABLE memdb.item_vectors ENABLE ROW LEVEL SECURITY;

CREATE POLICY item_vectors_isolation ON memdb.item_vectors TO memdb_app
    USING (tenant = current_setting('memdb.tenant', true)
           AND (coalesce(current_setting('memdb.subject', true), '') = ''
                OR subject = current_setting('memdb.subject', true)))
    WITH CHECK (tenant = current_setting('memdb.tenant', true)
                AND (coalesce(current_setting('memdb.subject', true), '') = ''
                     OR subject = current_setting('memdb.subject', true)));
