"""tenant keys: every foreign key between tenant-owned tables includes the tenant

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01

Upgrading refuses (foreign_key_violation, naming each key and its row count) when a row
already references another tenant's row, and changes nothing: see sql/schema/0011.
"""
from __future__ import annotations

from alembic import op
from memdb.core.migrations import apply_schema_file

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

# The frozen DDL this revision applies (sql/schema/) and its sha256.
SCHEMA_FILE = "0011_tenant_keys.sql"
SCHEMA_SHA256 = "1809aa51d8bc8ede5766a3dd00515ba89a38feba7ae592d95b39f14cf97a7f48"

# The keys as revisions 0001-0009 made them, on id alone, under the same names (rows written
# since reference rows of their own tenant, so they satisfy these too); then the (tenant, id)
# keys those used.
_DOWNGRADE = """
ALTER TABLE memdb.memories
    DROP CONSTRAINT memories_superseded_by_fkey,
    DROP CONSTRAINT memories_document_id_fkey,
    ADD CONSTRAINT memories_superseded_by_fkey FOREIGN KEY (superseded_by)
        REFERENCES memdb.memories (id) ON DELETE SET NULL,
    ADD CONSTRAINT memories_document_id_fkey FOREIGN KEY (document_id)
        REFERENCES memdb.documents (id) ON DELETE CASCADE;
ALTER TABLE memdb.memory_usage
    DROP CONSTRAINT memory_usage_memory_id_fkey,
    ADD CONSTRAINT memory_usage_memory_id_fkey FOREIGN KEY (memory_id)
        REFERENCES memdb.memories (id) ON DELETE CASCADE;
ALTER TABLE memdb.review_queue
    DROP CONSTRAINT review_queue_memory_id_fkey,
    ADD CONSTRAINT review_queue_memory_id_fkey FOREIGN KEY (memory_id)
        REFERENCES memdb.memories (id) ON DELETE SET NULL;
ALTER TABLE memdb.document_chunks
    DROP CONSTRAINT document_chunks_document_id_fkey,
    DROP CONSTRAINT document_chunks_memory_id_fkey,
    ADD CONSTRAINT document_chunks_document_id_fkey FOREIGN KEY (document_id)
        REFERENCES memdb.documents (id) ON DELETE CASCADE,
    ADD CONSTRAINT document_chunks_memory_id_fkey FOREIGN KEY (memory_id)
        REFERENCES memdb.memories (id) ON DELETE CASCADE;
ALTER TABLE memdb.entity_mentions
    DROP CONSTRAINT entity_mentions_entity_id_fkey,
    DROP CONSTRAINT entity_mentions_memory_id_fkey,
    ADD CONSTRAINT entity_mentions_entity_id_fkey FOREIGN KEY (entity_id)
        REFERENCES memdb.entities (id) ON DELETE CASCADE,
    ADD CONSTRAINT entity_mentions_memory_id_fkey FOREIGN KEY (memory_id)
        REFERENCES memdb.memories (id) ON DELETE CASCADE;
ALTER TABLE memdb.entity_relations
    DROP CONSTRAINT entity_relations_from_id_fkey,
    DROP CONSTRAINT entity_relations_to_id_fkey,
    DROP CONSTRAINT entity_relations_memory_id_fkey,
    ADD CONSTRAINT entity_relations_from_id_fkey FOREIGN KEY (from_id)
        REFERENCES memdb.entities (id) ON DELETE CASCADE,
    ADD CONSTRAINT entity_relations_to_id_fkey FOREIGN KEY (to_id)
        REFERENCES memdb.entities (id) ON DELETE CASCADE,
    ADD CONSTRAINT entity_relations_memory_id_fkey FOREIGN KEY (memory_id)
        REFERENCES memdb.memories (id) ON DELETE CASCADE;
ALTER TABLE memdb.memories DROP CONSTRAINT memories_tenant_id_key;
ALTER TABLE memdb.documents DROP CONSTRAINT documents_tenant_id_key;
ALTER TABLE memdb.entities DROP CONSTRAINT entities_tenant_id_key;
"""


def upgrade() -> None:
    apply_schema_file(op.get_bind().connection.driver_connection, SCHEMA_FILE, SCHEMA_SHA256)


def downgrade() -> None:
    op.execute(_DOWNGRADE)
