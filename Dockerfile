# memdb's HTTP API (and MCP endpoint) as a container, for docker-compose.yml's `memdb` service.
# It talks to the PostgreSQL given by MEMDB_DSN / MEMDB_ADMIN_DSN (no embedded server inside).
FROM python:3.11-slim
WORKDIR /opt/memdb
COPY pyproject.toml README.md alembic.ini ./
COPY memdb ./memdb
COPY sql ./sql
COPY alembic ./alembic
RUN pip install --no-cache-dir ".[http,mcp]"
COPY docker/entrypoint.sh /usr/local/bin/memdb-entrypoint
EXPOSE 8765
ENTRYPOINT ["memdb-entrypoint"]
CMD ["memdb", "serve", "--host", "0.0.0.0", "--port", "8765", "--mcp"]
