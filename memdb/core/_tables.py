"""SQLAlchemy Core description of memdb's tables, for ``alembic check`` (no drift between the
SQL in sql/schema and what the code believes). Not used to build queries: those live in sql/."""

from __future__ import annotations

import sqlalchemy as sa
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import ARRAY, BYTEA, JSONB, TSTZRANGE, TSVECTOR, UUID

__all__ = ["metadata", "embedding_spaces", "memories", "memory_history", "bm25_terms", "bm25_stats",
           "memory_usage", "review_queue", "sediment_runs", "retrieval_traces"]

metadata = sa.MetaData(schema="memdb")
TS = sa.TIMESTAMP(timezone=True)


def _tenant_fk(column: str, parent: str, name: str, ondelete: str) -> sa.ForeignKeyConstraint:
    """(tenant, column) REFERENCES memdb.parent (tenant, id): a row never points at another
    tenant's row (revision 0011; PostgreSQL checks foreign keys without row-level security)."""
    return sa.ForeignKeyConstraint(["tenant", column],
                                   [f"memdb.{parent}.tenant", f"memdb.{parent}.id"],
                                   name=name, ondelete=ondelete)

embedding_spaces = sa.Table(
    "embedding_spaces", metadata,
    sa.Column("id", sa.Integer, sa.Identity(always=False), primary_key=True),
    sa.Column("model", sa.Text, nullable=False),
    sa.Column("dims", sa.Integer, nullable=False),
    sa.Column("distance", sa.Text, nullable=False),
    sa.Column("created_at", TS, nullable=False),
    sa.UniqueConstraint("model", name="embedding_spaces_model_key"),
)

memories = sa.Table(
    "memories", metadata,
    sa.Column("id", UUID(as_uuid=True), nullable=False),
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("subject", sa.Text, nullable=False),
    sa.Column("agent", sa.Text),
    sa.Column("scope", sa.Text, nullable=False),
    sa.Column("project_id", sa.Text),
    sa.Column("session_id", sa.Text),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("category", sa.Text, nullable=False),
    sa.Column("uri", sa.Text, nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("search_context", sa.Text),
    sa.Column("content_hash", BYTEA, nullable=False),
    sa.Column("norm_key", sa.Text),
    sa.Column("space_id", sa.Integer, sa.ForeignKey("memdb.embedding_spaces.id")),
    sa.Column("embedding", Vector()),
    sa.Column("tsv", TSVECTOR, nullable=False),
    sa.Column("importance", sa.REAL, nullable=False),
    sa.Column("confidence", sa.REAL, nullable=False),
    sa.Column("source_type", sa.Text, nullable=False),
    sa.Column("source_id", sa.Text),
    sa.Column("created_by", sa.Text),
    sa.Column("metadata", JSONB, nullable=False),
    sa.Column("tags", ARRAY(sa.Text), nullable=False),
    sa.Column("created_at", TS, nullable=False),
    sa.Column("updated_at", TS, nullable=False),
    sa.Column("expires_at", TS),
    sa.Column("access_count", sa.Integer, nullable=False),
    sa.Column("last_accessed_at", TS),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("valid_from", TS, nullable=False),
    sa.Column("valid_to", TS),
    sa.Column("superseded_by", UUID(as_uuid=True)),
    sa.Column("doc_len", sa.Integer, nullable=False),  # revision 0002
    sa.Column("status", sa.Text, nullable=False),  # revision 0004
    sa.Column("tag_version", sa.Integer),  # revision 0008
    sa.Column("document_id", UUID(as_uuid=True)),  # revision 0005
    sa.Column("event_time", TSTZRANGE),  # revision 0017
    sa.Column("names_time", sa.Boolean, nullable=False),  # revision 0017
    # revision 0011: keys between tenant-owned tables include the tenant
    # revision 0013: every primary key of a tenant-owned table includes the tenant
    sa.PrimaryKeyConstraint("tenant", "id", name="memories_pkey"),
    _tenant_fk("superseded_by", "memories", "memories_superseded_by_fkey",
               "SET NULL (superseded_by)"),
    _tenant_fk("document_id", "documents", "memories_document_id_fkey", "CASCADE"),
    sa.Index("memories_dedup_key", "tenant", "subject", "scope", "project_id", "session_id",
             "content_hash", unique=True, postgresql_where=sa.text("valid_to IS NULL"),
             postgresql_nulls_not_distinct=True),
    sa.Index("memories_scope_idx", "tenant", "subject", "kind", "category"),
    sa.Index("memories_session_idx", "tenant", "session_id",
             postgresql_where=sa.text("session_id IS NOT NULL")),
    sa.Index("memories_project_idx", "tenant", "project_id",
             postgresql_where=sa.text("project_id IS NOT NULL")),
    sa.Index("memories_created_idx", "tenant", "created_at"),
    sa.Index("memories_expires_idx", "expires_at",
             postgresql_where=sa.text("expires_at IS NOT NULL")),
    sa.Index("memories_norm_key_idx", "tenant", "subject", "category", "norm_key",
             postgresql_where=sa.text("norm_key IS NOT NULL AND valid_to IS NULL")),
    sa.Index("memories_tsv_idx", "tsv", postgresql_using="gin"),
    sa.Index("memories_tags_idx", "tags", postgresql_using="gin"),
    sa.Index("memories_metadata_idx", "metadata", postgresql_using="gin",
             postgresql_ops={"metadata": "jsonb_path_ops"}),
    sa.Index("memories_hypothesis_idx", "tenant", "created_at",
             postgresql_where=sa.text("status = 'hypothesis'")),  # revision 0004
    sa.Index("memories_superseded_by_idx", "superseded_by",
             postgresql_where=sa.text("superseded_by IS NOT NULL")),  # revision 0006
    sa.Index("memories_document_idx", "document_id",
             postgresql_where=sa.text("document_id IS NOT NULL")),  # revision 0005
)

# revision 0002: trigram index for the exact-match route (an expression index binds to the table
# through its column, so it is declared after it; the label names the operator class's key)
sa.Index("memories_content_trgm_idx", sa.func.lower(memories.c.content).label("content_lower"),
         postgresql_using="gin", postgresql_ops={"content_lower": "gin_trgm_ops"})
# revision 0016: a hit's session neighbours (memdb.search_neighbors)
sa.Index("memories_stream_idx", memories.c.tenant, memories.c.subject,
         sa.func.coalesce(memories.c.session_id, sa.literal_column("''")),
         memories.c.created_at, memories.c.id)

memory_history = sa.Table(
    "memory_history", metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(always=True), nullable=False),
    sa.Column("memory_id", UUID(as_uuid=True), nullable=False),
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("subject", sa.Text, nullable=False),
    sa.Column("op", sa.Text, nullable=False),
    sa.Column("before", JSONB),
    sa.Column("after", JSONB),
    sa.Column("actor", sa.Text),
    sa.Column("reason", sa.Text),
    sa.Column("at", TS, nullable=False),
    sa.PrimaryKeyConstraint("tenant", "id", name="memory_history_pkey"),
    sa.Index("memory_history_memory_idx", "memory_id", "id"),
    sa.Index("memory_history_subject_idx", "tenant", "subject"),
)

bm25_terms = sa.Table(
    "bm25_terms", metadata,
    sa.Column("tenant", sa.Text, primary_key=True),
    sa.Column("term", sa.Text, primary_key=True),
    sa.Column("df", sa.BigInteger, nullable=False),
)

bm25_stats = sa.Table(
    "bm25_stats", metadata,
    sa.Column("tenant", sa.Text, primary_key=True),
    sa.Column("doc_count", sa.BigInteger, nullable=False),
    sa.Column("total_len", sa.BigInteger, nullable=False),
)

memory_usage = sa.Table(
    "memory_usage", metadata,
    sa.Column("memory_id", UUID(as_uuid=True), nullable=False),
    sa.Column("subject", sa.Text, nullable=False),
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("use_count", sa.Integer, nullable=False),
    sa.Column("last_used_at", TS, nullable=False),
    sa.PrimaryKeyConstraint("tenant", "memory_id", "subject", name="memory_usage_pkey"),
    _tenant_fk("memory_id", "memories", "memory_usage_memory_id_fkey", "CASCADE"),
    sa.Index("memory_usage_subject_idx", "tenant", "subject"),
)

# revision 0004: the lifecycle's review queue and sedimentation runs
review_queue = sa.Table(
    "review_queue", metadata,
    sa.Column("id", UUID(as_uuid=True), nullable=False),
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("subject", sa.Text, nullable=False),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("category", sa.Text, nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("content_hash", BYTEA, nullable=False),
    sa.Column("reason", sa.Text),
    sa.Column("source_ids", ARRAY(UUID(as_uuid=True)), nullable=False),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("memory_id", UUID(as_uuid=True)),
    sa.Column("decided_by", sa.Text),
    sa.Column("decided_at", TS),
    sa.Column("created_at", TS, nullable=False),
    sa.PrimaryKeyConstraint("tenant", "id", name="review_queue_pkey"),
    sa.UniqueConstraint("tenant", "subject", "content_hash", name="review_queue_content_key"),
    _tenant_fk("memory_id", "memories", "review_queue_memory_id_fkey",
               "SET NULL (memory_id)"),
    sa.Index("review_queue_status_idx", "tenant", "status", "created_at"),
)

sediment_runs = sa.Table(
    "sediment_runs", metadata,
    sa.Column("tenant", sa.Text, primary_key=True),
    sa.Column("subject", sa.Text, primary_key=True),
    sa.Column("run_date", sa.Date, primary_key=True),
    sa.Column("source_hash", BYTEA, primary_key=True),
    sa.Column("written", JSONB, nullable=False),
    sa.Column("created_at", TS, nullable=False),
)

# revision 0005: ingested documents and their chunk maps
documents = sa.Table(
    "documents", metadata,
    sa.Column("id", UUID(as_uuid=True), nullable=False),
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("subject", sa.Text, nullable=False),
    sa.Column("scope", sa.Text, nullable=False),
    sa.Column("project_id", sa.Text),
    sa.Column("session_id", sa.Text),
    sa.Column("uri", sa.Text, nullable=False),
    sa.Column("title", sa.Text),
    sa.Column("format", sa.Text, nullable=False),
    sa.Column("content_hash", BYTEA, nullable=False),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("chunking", JSONB, nullable=False),
    sa.Column("chunk_count", sa.Integer, nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("metadata", JSONB, nullable=False),
    sa.Column("created_at", TS, nullable=False),
    sa.Column("ingested_at", TS, nullable=False),
    sa.PrimaryKeyConstraint("tenant", "id", name="documents_pkey"),
    sa.UniqueConstraint("tenant", "uri", name="documents_uri_key"),
    sa.Index("documents_subject_idx", "tenant", "subject"),
)

document_chunks = sa.Table(
    "document_chunks", metadata,
    sa.Column("document_id", UUID(as_uuid=True), nullable=False),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("subject", sa.Text, nullable=False),
    sa.Column("memory_id", UUID(as_uuid=True), nullable=False),
    sa.Column("heading_path", ARRAY(sa.Text), nullable=False),
    sa.Column("char_start", sa.Integer, nullable=False),
    sa.Column("char_end", sa.Integer, nullable=False),
    sa.Column("parent_start", sa.Integer, nullable=False),
    sa.Column("parent_end", sa.Integer, nullable=False),
    sa.Column("tokens", sa.Integer, nullable=False),
    sa.PrimaryKeyConstraint("tenant", "document_id", "position", name="document_chunks_pkey"),
    _tenant_fk("document_id", "documents", "document_chunks_document_id_fkey", "CASCADE"),
    _tenant_fk("memory_id", "memories", "document_chunks_memory_id_fkey", "CASCADE"),
    sa.Index("document_chunks_memory_idx", "memory_id"),
)

# revision 0007: sessions (running summary, working state) and their conversation buffers
sessions = sa.Table(
    "sessions", metadata,
    sa.Column("tenant", sa.Text, primary_key=True),
    sa.Column("subject", sa.Text, primary_key=True),
    sa.Column("session_id", sa.Text, primary_key=True),
    sa.Column("summary", sa.Text, nullable=False),
    sa.Column("summary_tokens", sa.Integer, nullable=False),
    sa.Column("summary_path", sa.Text),
    sa.Column("summarized_through", sa.BigInteger, nullable=False),
    sa.Column("state", JSONB, nullable=False),
    sa.Column("state_version", sa.Integer, nullable=False),
    sa.Column("created_at", TS, nullable=False),
    sa.Column("updated_at", TS, nullable=False),
)

session_messages = sa.Table(
    "session_messages", metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(always=True), nullable=False),
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("subject", sa.Text, nullable=False),
    sa.Column("session_id", sa.Text, nullable=False),
    sa.Column("role", sa.Text, nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("tokens", sa.Integer, nullable=False),
    sa.Column("created_at", TS, nullable=False),
    sa.PrimaryKeyConstraint("tenant", "id", name="session_messages_pkey"),
    sa.ForeignKeyConstraint(["tenant", "subject", "session_id"],
                            ["memdb.sessions.tenant", "memdb.sessions.subject",
                             "memdb.sessions.session_id"],
                            name="session_messages_session_fkey", ondelete="CASCADE"),
    sa.Index("session_messages_session_idx", "tenant", "subject", "session_id", "id"),
)

# revision 0008: one row per planned search (MemoryStore.recall)
retrieval_traces = sa.Table(
    "retrieval_traces", metadata,
    sa.Column("id", UUID(as_uuid=True), nullable=False),
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("subject", sa.Text, nullable=False),
    sa.Column("query", sa.Text, nullable=False),
    sa.Column("intent", sa.Text, nullable=False),
    sa.Column("plan_source", sa.Text, nullable=False),
    sa.Column("fallback", sa.Boolean, nullable=False),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("reasons", ARRAY(sa.Text), nullable=False),
    sa.Column("categories", ARRAY(sa.Text), nullable=False),
    sa.Column("plan", JSONB, nullable=False),
    sa.Column("candidates", JSONB, nullable=False),
    sa.Column("chosen_ids", ARRAY(UUID(as_uuid=True)), nullable=False),
    sa.Column("result_subjects", ARRAY(sa.Text), nullable=False),
    sa.Column("k", sa.Integer, nullable=False),
    sa.Column("latency_ms", sa.REAL, nullable=False),
    sa.Column("timings", JSONB, nullable=False),
    sa.Column("created_at", TS, nullable=False),
    sa.PrimaryKeyConstraint("tenant", "id", name="retrieval_traces_pkey"),
    sa.Index("retrieval_traces_created_idx", "tenant", "created_at"),
    sa.Index("retrieval_traces_subject_idx", "tenant", "subject"),
    sa.Index("retrieval_traces_result_subjects_idx", "result_subjects", postgresql_using="gin"),
)

# revision 0009: the entity graph (entities, their mentions in memories, relations)
entities = sa.Table(
    "entities", metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(always=True), nullable=False),
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("subject", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("norm_name", sa.Text, nullable=False),
    sa.Column("type", sa.Text, nullable=False),
    sa.Column("aliases", ARRAY(sa.Text), nullable=False),
    sa.Column("created_at", TS, nullable=False),
    sa.Column("updated_at", TS, nullable=False),
    sa.PrimaryKeyConstraint("tenant", "id", name="entities_pkey"),
    sa.UniqueConstraint("tenant", "subject", "norm_name", "type", name="entities_name_key"),
    sa.Index("entities_norm_name_idx", "tenant", "norm_name"),
    sa.Index("entities_aliases_idx", "aliases", postgresql_using="gin"),
)

entity_mentions = sa.Table(
    "entity_mentions", metadata,
    sa.Column("entity_id", sa.BigInteger, nullable=False),
    sa.Column("memory_id", UUID(as_uuid=True), nullable=False),
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("subject", sa.Text, nullable=False),
    sa.Column("created_at", TS, nullable=False),
    sa.PrimaryKeyConstraint("tenant", "entity_id", "memory_id", name="entity_mentions_pkey"),
    _tenant_fk("entity_id", "entities", "entity_mentions_entity_id_fkey", "CASCADE"),
    _tenant_fk("memory_id", "memories", "entity_mentions_memory_id_fkey", "CASCADE"),
    sa.Index("entity_mentions_memory_idx", "memory_id"),
)

entity_relations = sa.Table(
    "entity_relations", metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(always=True), nullable=False),
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("subject", sa.Text, nullable=False),
    sa.Column("from_id", sa.BigInteger, nullable=False),
    sa.Column("to_id", sa.BigInteger, nullable=False),
    sa.Column("type", sa.Text, nullable=False),
    sa.Column("strength", sa.REAL, nullable=False),
    sa.Column("memory_id", UUID(as_uuid=True), nullable=False),
    sa.Column("valid_from", TS, nullable=False),
    sa.Column("valid_to", TS),
    sa.Column("created_at", TS, nullable=False),
    sa.PrimaryKeyConstraint("tenant", "id", name="entity_relations_pkey"),
    sa.UniqueConstraint("tenant", "from_id", "type", "to_id", "memory_id",
                        name="entity_relations_edge_key"),
    _tenant_fk("from_id", "entities", "entity_relations_from_id_fkey", "CASCADE"),
    _tenant_fk("to_id", "entities", "entity_relations_to_id_fkey", "CASCADE"),
    _tenant_fk("memory_id", "memories", "entity_relations_memory_id_fkey", "CASCADE"),
    sa.Index("entity_relations_to_idx", "to_id"),
    sa.Index("entity_relations_memory_idx", "memory_id"),
)

item_vectors = sa.Table(
    "item_vectors", metadata,
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("subject", sa.Text, nullable=False),
    sa.Column("memory_id", UUID(as_uuid=True), nullable=False),
    sa.Column("path", sa.Text, nullable=False),
    sa.Column("ordinal", sa.Integer, nullable=False),
    sa.Column("space_id", sa.Integer, sa.ForeignKey("memdb.embedding_spaces.id"),
              nullable=False),
    sa.Column("embedding", Vector(), nullable=False),
    sa.PrimaryKeyConstraint("tenant", "memory_id", "path", "ordinal", name="item_vectors_pkey"),
    _tenant_fk("memory_id", "memories", "item_vectors_memory_id_fkey", "CASCADE"),
)

# revision 0012: API keys of the HTTP door (hashed; the application role cannot read them)
api_keys = sa.Table(
    "api_keys", metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(always=True), primary_key=True),
    sa.Column("key_id", sa.Text, nullable=False),
    sa.Column("secret_sha256", BYTEA, nullable=False),
    sa.Column("tenant", sa.Text),
    sa.Column("key_subject", sa.Text),
    sa.Column("is_admin", sa.Boolean, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("created_by", sa.Text, nullable=False),
    sa.Column("created_at", TS, nullable=False),
    sa.Column("revoked_at", TS),
    sa.Column("last_used_at", TS),
    sa.UniqueConstraint("key_id", name="api_keys_key_id_key"),
    sa.UniqueConstraint("secret_sha256", name="api_keys_secret_sha256_key"),
    sa.Index("api_keys_tenant_idx", "tenant"),
)

# revision 0022: perceptual memory (what an image's, audio's or video's memory was derived from)
percepts = sa.Table(
    "percepts", metadata,
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("memory_id", UUID(as_uuid=True), nullable=False),
    sa.Column("subject", sa.Text, nullable=False),
    sa.Column("modality", sa.Text, nullable=False),
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("sha256", BYTEA, nullable=False),
    sa.Column("mime", sa.Text, nullable=False),
    sa.Column("size_bytes", sa.BigInteger, nullable=False),
    sa.Column("width", sa.Integer),
    sa.Column("height", sa.Integer),
    sa.Column("ref", sa.Text),
    sa.Column("data", BYTEA),
    sa.Column("thumbnail", BYTEA),
    sa.Column("ocr_text", sa.Text),
    sa.Column("caption", sa.Text),
    sa.Column("exif", JSONB, nullable=False),
    sa.Column("taken_at", TS),
    sa.Column("latitude", sa.Double),
    sa.Column("longitude", sa.Double),
    sa.Column("created_at", TS, nullable=False),
    sa.PrimaryKeyConstraint("tenant", "memory_id", name="percepts_pkey"),
    _tenant_fk("memory_id", "memories", "percepts_memory_id_fkey", "CASCADE"),
    sa.Index("percepts_sha256_idx", "tenant", "subject", "sha256"),
)

# revision 0021: the durable job queue (memdb/jobs)
jobs = sa.Table(
    "jobs", metadata,
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("id", UUID(as_uuid=True), nullable=False),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("payload", JSONB, nullable=False),
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("max_attempts", sa.Integer, nullable=False),
    sa.Column("run_after", TS, nullable=False),
    sa.Column("locked_by", sa.Text),
    sa.Column("locked_until", TS),
    sa.Column("last_error", sa.Text),
    sa.Column("result", JSONB),
    sa.Column("idempotency_key", sa.Text),
    sa.Column("created_at", TS, nullable=False),
    sa.Column("updated_at", TS, nullable=False),
    sa.Column("finished_at", TS),
    # revision 0024: the subject the payload names (row-level security by subject)
    sa.Column("subject", sa.Text, sa.Computed(
        "COALESCE((payload ->> 'subject'::text), (payload #>> '{options,subject}'::text[]))",
        persisted=True)),
    sa.PrimaryKeyConstraint("tenant", "id", name="jobs_pkey"),
    sa.UniqueConstraint("tenant", "kind", "idempotency_key", name="jobs_idempotency_key"),
    sa.Index("jobs_claimable_idx", "tenant", "run_after", "id",
             postgresql_where=sa.text("state IN ('queued', 'failed', 'running')")),
    sa.Index("jobs_created_idx", "tenant", "created_at"),
)

# revision 0023: schedules of recurring jobs (memdb/families/jobs/_schedules.py)
job_schedules = sa.Table(
    "job_schedules", metadata,
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("payload", JSONB, nullable=False),
    sa.Column("period_seconds", sa.Integer, nullable=False),
    sa.Column("next_run", TS, nullable=False),
    sa.Column("last_run", TS),
    sa.Column("last_job", UUID(as_uuid=True)),
    sa.Column("created_at", TS, nullable=False),
    sa.Column("updated_at", TS, nullable=False),
    sa.PrimaryKeyConstraint("tenant", "kind", name="job_schedules_pkey"),
    sa.Index("job_schedules_due_idx", "next_run", "tenant"),
)
