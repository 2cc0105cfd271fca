-- memdb schema, revision 0009 (frozen): the entity graph.
--   * memdb.entities: one row per (tenant, subject, norm_name, type): a person, project, tool,
--     organisation, place or concept a subject's memories mention. norm_name is
--     memdb.normalize_text(name) (NFKC, lower case, white space folded), so "Postgres" and
--     " postgres " are one entity; aliases holds other normalized names of it.
--   * memdb.entity_mentions: which memories mention which entities (the graph's link back to
--     the memories search returns); deleted with the memory.
--   * memdb.entity_relations: typed, directed edges between two entities of one subject
--     (works_with, uses, manages, ... ) with a strength in (0, 1], the memory they were
--     extracted from (memory_id, the evidence; deleted with it) and a validity interval
--     [valid_from, valid_to) (valid_to NULL: still valid). One row per edge and evidence.
-- All three tables carry tenant and subject under the same row-level security as memories,
-- so subject isolation applies and memdb.forget_subject (which finds tables by their tenant
-- and subject columns, or memory_id) erases them.
-- Policies use only built-in functions: this file runs before sql/functions is applied.

CREATE TABLE memdb.entities (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant     text        NOT NULL,
    subject    text        NOT NULL,
    name       text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    norm_name  text        NOT NULL CHECK (length(norm_name) BETWEEN 1 AND 200),
    type       text        NOT NULL DEFAULT 'other'
               CHECK (type IN ('person', 'project', 'tool', 'organization', 'place', 'concept', 'other')),
    aliases    text[]      NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT entities_name_key UNIQUE (tenant, subject, norm_name, type)
);
CREATE INDEX entities_norm_name_idx ON memdb.entities (tenant, norm_name);
CREATE INDEX entities_aliases_idx ON memdb.entities USING gin (aliases);

CREATE TABLE memdb.entity_mentions (
    entity_id  bigint      NOT NULL REFERENCES memdb.entities (id) ON DELETE CASCADE,
    memory_id  uuid        NOT NULL REFERENCES memdb.memories (id) ON DELETE CASCADE,
    tenant     text        NOT NULL,
    subject    text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, memory_id)
);
CREATE INDEX entity_mentions_memory_idx ON memdb.entity_mentions (memory_id);

CREATE TABLE memdb.entity_relations (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant     text        NOT NULL,
    subject    text        NOT NULL,
    from_id    bigint      NOT NULL REFERENCES memdb.entities (id) ON DELETE CASCADE,
    to_id      bigint      NOT NULL REFERENCES memdb.entities (id) ON DELETE CASCADE,
    type       text        NOT NULL CHECK (type ~ '^[a-z][a-z0-9_]{0,63}$'),
    strength   real        NOT NULL DEFAULT 0.5 CHECK (strength > 0 AND strength <= 1),
    memory_id  uuid        NOT NULL REFERENCES memdb.memories (id) ON DELETE CASCADE,
    valid_from timestamptz NOT NULL DEFAULT now(),
    valid_to   timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT entity_relations_edge_key UNIQUE (from_id, type, to_id, memory_id),
    CONSTRAINT entity_relations_validity CHECK (valid_to IS NULL OR valid_to > valid_from)
);
CREATE INDEX entity_relations_to_idx ON memdb.entity_relations (to_id);
CREATE INDEX entity_relations_memory_idx ON memdb.entity_relations (memory_id);

GRANT SELECT, INSERT, UPDATE, DELETE
    ON memdb.entities, memdb.entity_mentions, memdb.entity_relations TO memdb_app;

ALTER TABLE memdb.entities ENABLE ROW LEVEL SECURITY;
ALTER TABLE memdb.entity_mentions ENABLE ROW LEVEL SECURITY;
ALTER TABLE memdb.entity_relations ENABLE ROW LEVEL SECURITY;

CREATE POLICY entities_isolation ON memdb.entities TO memdb_app
    USING (tenant = current_setting('memdb.tenant', true)
           AND (coalesce(current_setting('memdb.subject', true), '') = ''
                OR subject = current_setting('memdb.subject', true)))
    WITH CHECK (tenant = current_setting('memdb.tenant', true)
                AND (coalesce(current_setting('memdb.subject', true), '') = ''
                     OR subject = current_setting('memdb.subject', true)));

CREATE POLICY entity_mentions_isolation ON memdb.entity_mentions TO memdb_app
    USING (tenant = current_setting('memdb.tenant', true)
           AND (coalesce(current_setting('memdb.subject', true), '') = ''
                OR subject = current_setting('memdb.subject', true)))
    WITH CHECK (tenant = current_setting('memdb.tenant', true)
                AND (coalesce(current_setting('memdb.subject', true), '') = ''
                     OR subject = current_setting('memdb.subject', true)));

CREATE POLICY entity_relations_isolation ON memdb.entity_relations TO memdb_app
    USING (tenant = current_setting('memdb.tenant', true)
           AND (coalesce(current_setting('memdb.subject', true), '') = ''
                OR subject = current_setting('memdb.subject', true)))
    WITH CHECK (tenant = current_setting('memdb.tenant', true)
                AND (coalesce(current_setting('memdb.subject', true), '') = ''
                     OR subject = current_setting('memdb.subject', true)));
