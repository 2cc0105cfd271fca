-- memdb.match_mentions(p_tenant text, p_memory_ids uuid[]) -> integer
-- Links memories to the known entities they name: every entity of a memory's subject whose
-- name or an alias occurs in the memory's content (one of memdb.entity_candidates(content):
-- whole words for Latin names, substrings for CJK names; found by index) gets a mention, so "王五负责支付系统的迁移" is linked to the
-- 王五 another memory introduced, even though no extraction pattern matched it. Run after
-- memdb.link_memories (on the same batch, once every entity exists). Returns how many
-- mentions were added. Only current, unexpired memories are linked.
-- Example: SELECT memdb.match_mentions('default', ARRAY['…'::uuid]);
CREATE OR REPLACE FUNCTION memdb.match_mentions(p_tenant text, p_memory_ids uuid[])
RETURNS integer
LANGUAGE plpgsql
AS $$
DECLARE
    n integer;
BEGIN
    WITH m AS MATERIALIZED (  -- the candidates once per memory, not once per entity
        SELECT x.id, x.subject, memdb.entity_candidates(x.content) AS cands
        FROM memdb.memories x
        WHERE x.tenant = p_tenant AND x.id = ANY (p_memory_ids) AND x.valid_to IS NULL
          AND (x.expires_at IS NULL OR x.expires_at > now())
    )
    INSERT INTO memdb.entity_mentions (entity_id, memory_id, tenant, subject)
    SELECT DISTINCT e.id, m.id, p_tenant, m.subject
    FROM m
    CROSS JOIN LATERAL (
        SELECT e.id FROM memdb.entities e
        WHERE e.tenant = p_tenant AND e.norm_name = ANY (m.cands) AND e.subject = m.subject
        UNION
        SELECT e.id FROM memdb.entities e
        WHERE e.aliases && m.cands AND e.tenant = p_tenant AND e.subject = m.subject
    ) e
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
