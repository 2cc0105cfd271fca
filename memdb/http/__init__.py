"""memdb's HTTP door: a FastAPI app on :class:`~memdb.AsyncMemoryStore`, served by uvicorn
(``memdb serve``), authenticated by the API keys of :mod:`memdb.families.keys`.

>>> from memdb.http import ServerSettings, create_app              # doctest: +SKIP
>>> app = create_app(ServerSettings(dsn="postgresql://memdb_user@db/memdb"))

Each request carries a key (``Authorization: Bearer mdb_...`` or ``X-API-Key``); the key
selects the tenant and subject the store is opened with, and row-level security decides what
that store may see. FastAPI and uvicorn are the optional extra ``memdb[http]``: importing
this package without them works; :func:`create_app` and :func:`run` raise
:class:`~memdb.core.errors.MissingDependency` naming the extra.
"""

from __future__ import annotations

from typing import Any

from ._settings import ServerSettings

__all__ = ["ServerSettings", "create_app", "run"]


def _require() -> None:
    from ..core.errors import MissingDependency

    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise MissingDependency(
            f"the HTTP door needs FastAPI and uvicorn ({exc.name} is missing): "
            "pip install 'memdb[http]'") from None


def create_app(settings: ServerSettings | None = None) -> Any:
    """The ASGI app (FastAPI) serving memdb under /v1 with ``settings``."""
    _require()
    from ._app import create_app as make

    return make(settings or ServerSettings())


def run(settings: ServerSettings | None = None, *, host: str = "127.0.0.1", port: int = 8765,
        log_level: str = "info") -> None:
    """Serve :func:`create_app` with uvicorn until interrupted (``memdb serve``)."""
    _require()
    import uvicorn

    uvicorn.run(create_app(settings), host=host, port=port, log_level=log_level,
                proxy_headers=False, server_header=False)
