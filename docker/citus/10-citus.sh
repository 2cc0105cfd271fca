#!/bin/sh
# Runs once, when the node's data folder is made (the postgres image's docker-entrypoint-initdb.d).
# The nodes connect to each other as the client's role (memdb's transactions run as memdb_app,
# which has no password): allow that without a password from the cluster's internal network
# only ($CITUS_INTERNAL_SUBNET, which no published port reaches); every other connection keeps
# the image's password rule. Then the citus extension in $POSTGRES_DB, on every node, before
# the coordinator adds the workers (vector is created by `memdb migrate` on the coordinator and
# passed on to the workers by Citus).
set -eu
sed -i "1i host all all ${CITUS_INTERNAL_SUBNET} trust" "$PGDATA/pg_hba.conf"
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
    -c "CREATE EXTENSION IF NOT EXISTS citus"
