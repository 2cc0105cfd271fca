#!/bin/sh
# The memdb container's start: migrate as the admin login, make sure the application login
# exists and is confined (a member of memdb_app, nothing more), then run the command given
# (default: the HTTP API with the MCP endpoint mounted). Idempotent: safe on every start.
#   MEMDB_ADMIN_DSN   the tables' owner (migrations, API keys, all-tenant maintenance)
#   MEMDB_DSN         the application login the server uses (row-level security confines it)
set -eu
: "${MEMDB_ADMIN_DSN:?set MEMDB_ADMIN_DSN to the admin login}"
: "${MEMDB_DSN:?set MEMDB_DSN to the application login}"

MEMDB_DSN="$MEMDB_ADMIN_DSN" memdb migrate   # (the application login may not exist yet)
python - <<'PY'
import os

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

app = conninfo_to_dict(os.environ["MEMDB_DSN"])
login, password = app.get("user"), app.get("password")
if not login:
    raise SystemExit("MEMDB_DSN must name the application login (user=...)")
with psycopg.connect(os.environ["MEMDB_ADMIN_DSN"], autocommit=True) as conn:
    exists = conn.execute("SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = %s",
                          [login]).fetchone()
    if exists is None:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOBYPASSRLS").format(
            sql.Identifier(login)))
    elif exists[0]:
        raise SystemExit(f"the application login {login!r} is a superuser or bypasses row-level "
                         "security: use a plain login for MEMDB_DSN")
    if password:
        conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(
            sql.Identifier(login), sql.Literal(password)))
    conn.execute(sql.SQL("GRANT memdb_app TO {}").format(sql.Identifier(login)))
print(f"memdb: schema migrated; application login {login!r} confined to memdb_app")
PY
exec "$@"
