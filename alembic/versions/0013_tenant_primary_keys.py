"""tenant primary keys: every primary key and unique constraint of a tenant-owned table
includes the tenant (what a table distributed by tenant on Citus can enforce)

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0013_tenant_primary_keys.sql"
SCHEMA_SHA256 = "aee98ad8373bfa1671a0a924232b04fc35c47ddbf877094efaf6531bf5c315e6"

# The foreign keys of revision 0011, which must go while the keys they refer to change.
_FKEYS = """
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
"""

# The keys as revisions 0001-0012 left them, under the same names; then the foreign keys.
_DOWNGRADE = """
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
ALTER TABLE memdb.memories DROP CONSTRAINT memories_pkey,
    ADD CONSTRAINT memories_pkey PRIMARY KEY (id),
    ADD CONSTRAINT memories_tenant_id_key UNIQUE (tenant, id);
ALTER TABLE memdb.documents DROP CONSTRAINT documents_pkey,
    ADD CONSTRAINT documents_pkey PRIMARY KEY (id),
    ADD CONSTRAINT documents_tenant_id_key UNIQUE (tenant, id);
ALTER TABLE memdb.entities DROP CONSTRAINT entities_pkey,
    ADD CONSTRAINT entities_pkey PRIMARY KEY (id),
    ADD CONSTRAINT entities_tenant_id_key UNIQUE (tenant, id);
ALTER TABLE memdb.memory_history DROP CONSTRAINT memory_history_pkey,
    ADD CONSTRAINT memory_history_pkey PRIMARY KEY (id);
ALTER TABLE memdb.review_queue DROP CONSTRAINT review_queue_pkey,
    ADD CONSTRAINT review_queue_pkey PRIMARY KEY (id);
ALTER TABLE memdb.session_messages DROP CONSTRAINT session_messages_pkey,
    ADD CONSTRAINT session_messages_pkey PRIMARY KEY (id);
ALTER TABLE memdb.retrieval_traces DROP CONSTRAINT retrieval_traces_pkey,
    ADD CONSTRAINT retrieval_traces_pkey PRIMARY KEY (id);
ALTER TABLE memdb.memory_usage DROP CONSTRAINT memory_usage_pkey,
    ADD CONSTRAINT memory_usage_pkey PRIMARY KEY (memory_id, subject);
ALTER TABLE memdb.document_chunks DROP CONSTRAINT document_chunks_pkey,
    ADD CONSTRAINT document_chunks_pkey PRIMARY KEY (document_id, position);
ALTER TABLE memdb.entity_mentions DROP CONSTRAINT entity_mentions_pkey,
    ADD CONSTRAINT entity_mentions_pkey PRIMARY KEY (entity_id, memory_id);
ALTER TABLE memdb.entity_relations DROP CONSTRAINT entity_relations_pkey,
    DROP CONSTRAINT entity_relations_edge_key,
    ADD CONSTRAINT entity_relations_pkey PRIMARY KEY (id),
    ADD CONSTRAINT entity_relations_edge_key UNIQUE (from_id, type, to_id, memory_id);
""" + _FKEYS


def upgrade() -> None:
    apply_schema_file(op.get_bind().connection.driver_connection, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    op.execute(_DOWNGRADE)
