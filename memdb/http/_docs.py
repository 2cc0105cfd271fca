"""The API documentation pages, served offline: Swagger UI at ``/docs`` and ReDoc at
``/redoc`` with their scripts and styles from the ``fastapi-offline`` package (Swagger UI 5, for
the OpenAPI 3.1 document FastAPI writes), never from a CDN, and no call to Swagger's online
validator. FastAPI's own pages load their assets from a CDN and stay blank offline."""

from __future__ import annotations

from importlib import resources
from typing import Any

__all__ = ["install", "STATIC_URL"]

STATIC_URL = "/docs/static"


def _assets() -> Any:
    return resources.files("fastapi_offline") / "static"


def install(app: Any) -> None:
    """Add /docs, /redoc and their static assets to ``app`` (made with docs_url=None and
    redoc_url=None)."""
    from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
    from fastapi.responses import HTMLResponse
    from fastapi.staticfiles import StaticFiles

    app.mount(STATIC_URL, StaticFiles(directory=str(_assets())), name="docs-static")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url, title=f"{app.title} - API",
            swagger_js_url=f"{STATIC_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{STATIC_URL}/swagger-ui.css",
            swagger_favicon_url=f"{STATIC_URL}/favicon.png",
            swagger_ui_parameters={"validatorUrl": None, "persistAuthorization": False})

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(openapi_url=app.openapi_url, title=f"{app.title} - API",
                              redoc_js_url=f"{STATIC_URL}/redoc.standalone.js",
                              redoc_favicon_url=f"{STATIC_URL}/favicon.png",
                              with_google_fonts=False)
