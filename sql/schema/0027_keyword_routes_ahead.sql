-- memdb schema, revision 0027 (frozen): memdb.search_hybrid takes its keyword routes' rows.
--   A search can run its keyword routes (memdb.search_keyword_routes) while its query is being
--   embedded and hand their rows to memdb.search_hybrid, which then runs only the vector route
--   and the fusion: search_hybrid gets a seventh argument, p_keyword_routes jsonb DEFAULT NULL
--   (NULL: it runs every route itself, as before).
-- sql/functions re-creates it with the new signature after the migration; the old one goes (with
-- its body behind the NULL-tenant guard, memdb.guard_tenant_functions), which would otherwise
-- stay beside the new one and make every six-argument call ambiguous.
DROP FUNCTION IF EXISTS memdb.search_hybrid(text, text, vector, integer, jsonb, jsonb);
DROP FUNCTION IF EXISTS memdb.search_hybrid__unguarded(text, text, vector, integer, jsonb, jsonb);
