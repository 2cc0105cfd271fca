-- memdb.prune_documents(p_tenant text, p_prefixes text[], p_keep text[], p_dry_run boolean DEFAULT false)
--   -> TABLE(document_id uuid, uri text, chunks integer)
-- Removes (memdb.remove_documents) the tenant's documents whose URI starts with one of
-- p_prefixes (e.g. 'file:///srv/docs/') and is not in p_keep: the files an ingest of those
-- folders no longer found. With p_dry_run, only lists them.
CREATE OR REPLACE FUNCTION memdb.prune_documents(p_tenant text, p_prefixes text[], p_keep text[],
                                                 p_dry_run boolean DEFAULT false)
RETURNS TABLE (document_id uuid, uri text, chunks integer)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    v_uris text[];
BEGIN
    v_uris := ARRAY(
        SELECT d.uri FROM memdb.documents d
        WHERE d.tenant = p_tenant
          AND EXISTS (SELECT 1 FROM unnest(p_prefixes) p(prefix) WHERE starts_with(d.uri, p.prefix))
          AND NOT (d.uri = ANY (coalesce(p_keep, '{}'::text[]))));
    IF p_dry_run THEN
        RETURN QUERY SELECT d.id, d.uri, d.chunk_count FROM memdb.documents d
                     WHERE d.tenant = p_tenant AND d.uri = ANY (v_uris) ORDER BY d.uri;
    ELSE
        RETURN QUERY SELECT * FROM memdb.remove_documents(p_tenant, v_uris);
    END IF;
END
$$;
