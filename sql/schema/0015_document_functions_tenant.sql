-- memdb schema, revision 0015 (frozen): the document functions that release chunk memories
-- take the tenant.
--   memdb.release_documents_memories and memdb.release_document_memories looked rows up by
--   document and memory id alone. They now take p_tenant first and read and write only that
--   tenant's rows (the primary keys are (tenant, id) since revision 0013), so on Citus they
--   are distributed by p_tenant like the other tenant-scoped functions (after every
--   migration, memdb.migrations.apply_objects) and a delegated memdb.ingest_documents or
--   memdb.remove_documents, which call them, stays on its tenant's shards.
-- sql/functions re-creates them with the new signatures after the migration; the old ones go,
-- which would otherwise stay beside the new ones.
DROP FUNCTION IF EXISTS memdb.release_document_memories(uuid, uuid[]);
DROP FUNCTION IF EXISTS memdb.release_documents_memories(uuid[], uuid[]);
