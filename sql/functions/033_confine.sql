-- memdb.confine(p_tenant text, p_filter jsonb) -> jsonb
-- Row-level security, applied by hand, for the search routes that run as their owner
-- (SECURITY DEFINER: under row-level security PostgreSQL may not use the GIN and trigram
-- indexes, whose operators are not leakproof, and tenant-wide searches would read every row of
-- the tenant). Returns the filter such a route must apply, or NULL when the caller may see
-- nothing.
-- The caller is confined when the role it acts as (its SET ROLE, else the session user) is
-- exactly one the memories policies apply to: not a superuser, without BYPASSRLS, and not
-- (a member of) the owner of memdb.memories. A confined caller gets, for its own tenant
-- (setting memdb.tenant) only, p_filter with the subject of setting memdb.subject added when
-- that is set; NULL when memdb.tenant is unset, p_tenant is another tenant, or the filter asks
-- for another subject, or memdb.subject is '*' (a name memdb reserves for tenant-wide
-- retrieval traces: no subject may claim it). Anyone else (the admin) gets p_filter unchanged
-- ('{}' for NULL).
CREATE OR REPLACE FUNCTION memdb.confine(p_tenant text, p_filter jsonb)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_role name := CASE WHEN current_setting('role') = 'none' THEN session_user
                        ELSE current_setting('role')::name END;
    v_tenant text := nullif(current_setting('memdb.tenant', true), '');
    v_subject text := nullif(current_setting('memdb.subject', true), '');
    v_free boolean;
BEGIN
    SELECT r.rolsuper OR r.rolbypassrls OR pg_has_role(v_role, c.relowner, 'USAGE')
      INTO v_free
      FROM pg_roles r, pg_class c
     WHERE r.rolname = v_role AND c.oid = 'memdb.memories'::regclass;
    IF coalesce(v_free, false) THEN
        RETURN coalesce(p_filter, '{}'::jsonb);
    END IF;
    IF v_tenant IS NULL OR p_tenant IS DISTINCT FROM v_tenant OR v_subject = '*' THEN
        RETURN NULL;
    END IF;
    IF v_subject IS NULL THEN
        RETURN coalesce(p_filter, '{}'::jsonb);
    END IF;
    IF p_filter ? 'subject' AND NOT (v_subject = ANY (memdb.jtext_array(p_filter -> 'subject'))) THEN
        RETURN NULL;
    END IF;
    RETURN coalesce(p_filter, '{}'::jsonb) || jsonb_build_object('subject', v_subject);
END
$$;
