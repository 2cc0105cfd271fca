"""How the HTTP door is configured (``memdb serve``'s options)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ServerSettings"]


@dataclass
class ServerSettings:
    """``dsn``: the data path's login (else $MEMDB_DSN, else the embedded server);
    ``admin_dsn``: the admin login for admin keys' maintenance (else $MEMDB_ADMIN_DSN, else
    the embedded superuser, else ``dsn``). ``embedder``: shared by every store (default: the
    one $MEMDB_EMBEDDER... selects, loaded once). Limits: ``max_body_bytes`` (413 above),
    ``max_k`` (search/recall/context k), ``max_page`` (list limits), per-key token bucket of
    ``rate_per_second`` with ``burst`` (429 with Retry-After). ``max_stores`` open stores, one
    per (tenant, subject), of ``pool_size`` connections each, least recently used closed
    first. ``cors_origins``: browser origins allowed (none: no CORS headers at all).
    Failed authentications are limited per client address the same way
    (``auth_failures_per_second``, ``auth_failure_burst``): guessing keys, or hammering the
    database with well-formed wrong ones, gets 429 too.
    ``mcp``: also serve the MCP streamable-HTTP endpoint at /mcp (memdb[mcp]; the same API
    keys); ``host``: the interface served (the MCP SDK's DNS-rebinding protection uses it).
    ``ui``: also serve the memory browser's pages under /ui (:mod:`memdb.ui`).
    ``max_ingest_chunks``: the most chunks one document-ingest request (``POST /v1/documents``,
    the MCP tool ``add_document``) may write; more is refused with 413 before anything is
    embedded (bigger documents: the CLI's ``memdb documents ingest``, or a higher limit).
    ``max_file_bytes``: the largest upload to ``POST /v1/files`` (413 above; the other routes
    keep ``max_body_bytes``)."""

    dsn: str | None = None
    admin_dsn: str | None = None
    embedder: Any = None
    max_body_bytes: int = 1_048_576
    max_k: int = 100
    max_page: int = 500
    rate_per_second: float = 20.0
    burst: int = 40
    auth_failures_per_second: float = 1.0
    auth_failure_burst: int = 30
    max_stores: int = 32
    pool_size: int = 2
    cors_origins: tuple[str, ...] = ()
    mcp: bool = False
    host: str = "127.0.0.1"
    ui: bool = False
    max_ingest_chunks: int = 64
    max_file_bytes: int = 25 * 1024 * 1024
