"""``/v1/files``: any file over HTTP (store.add_file, store.percepts; docs/files.md).

``POST /v1/files`` takes a file (image, recording or document) as the raw request body (any
Content-Type; the format is found from the content) or as the field ``file`` of a
``multipart/form-data`` body, with the options as query parameters; a body over the
server's ``max_file_bytes`` is refused with 413 (by the body-size middleware, before it is
read whole). ``GET /v1/files/{id}`` describes a perceptual memory's file,
``GET /v1/files/{id}/thumbnail`` is its JPEG thumbnail, ``GET /v1/files/{id}/content`` its
bytes when they were kept. The router is made by :func:`router` from the app's own
dependency (the tenant's store, from the API key), so this module needs nothing else of the
app."""

# no `from __future__ import annotations`: FastAPI reads the routes' annotations at runtime, and
# the Store alias is local to router()
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response

from ..core.errors import InvalidInput
from ..core.jsonable import jsonable

__all__ = ["router", "PREFIX", "MAX_FILE_BYTES"]

PREFIX = "/v1/files"
MAX_FILE_BYTES = 25 * 1024 * 1024  # the default upload limit (ServerSettings.max_file_bytes)


async def _upload(request: Request) -> tuple[bytes, str | None]:
    """The uploaded bytes and the file name the client gave (multipart), if any."""
    kind = request.headers.get("content-type", "")
    if kind.startswith("multipart/form-data"):
        form = await request.form()
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise InvalidInput("a multipart upload needs its file in the field 'file'")
        return await upload.read(), upload.filename
    return await request.body(), None


def router(tenant_store: Any, responses: dict[Any, Any]) -> APIRouter:
    """The files routes; ``tenant_store``: the dependency yielding the key's tenant's store."""
    Store = Annotated[Any, Depends(tenant_store)]  # noqa: N806 (a type alias)
    files = APIRouter(prefix=PREFIX, tags=["files"], responses=responses)

    @files.post("", status_code=201)
    async def perceive(request: Request, store: Store, subject: str | None = None,
                       name: Annotated[str | None, Query(max_length=200)] = None,
                       caption: bool = True, tag: Annotated[list[str] | None, Query()] = None,
                       reason: Annotated[str | None, Query(max_length=1000)] = None) -> Any:
        """Remember a file, found by its content (store.add_file): an image (its OCR text
        and caption) or a recording (its transcript) becomes a perceptual memory, a document
        (PDF, Word, PowerPoint, Excel, EPUB, CSV, JSON, XML, Markdown, HTML, text) is
        ingested; the answer's ``kind`` says which (image, audio, document) with the memory's
        id, outcome, text, MIME type... or the document's id and chunks. 400 for a file
        memdb does not read or a damaged one, 413 over the size or pixel limits."""
        data, filename = await _upload(request)
        if not data:
            raise InvalidInput("the upload is empty")
        got = await store.add_file(data, subject=subject, name=name or filename,
                                   caption=caption, tags=tag, reason=reason)
        return got.to_dict()

    @files.get("/{memory_id}")
    async def describe(memory_id: str, store: Store) -> Any:
        """The file a perceptual memory was made from (no bytes)."""
        return jsonable(await store.percepts.get(memory_id))

    @files.get("/{memory_id}/thumbnail", response_class=Response,
               responses={200: {"content": {"image/jpeg": {}}}})
    async def thumbnail(memory_id: str, store: Store) -> Response:
        """The memory's JPEG thumbnail (at most 256 pixels a side)."""
        return Response(await store.percepts.thumbnail(memory_id), media_type="image/jpeg",
                        headers={"cache-control": "private, max-age=300",
                                 "x-content-type-options": "nosniff"})

    @files.get("/{memory_id}/content", response_class=Response)
    async def content(memory_id: str, store: Store) -> Response:
        """The file's bytes, when the server kept them (404 otherwise)."""
        data, mime = await store.percepts.data(memory_id)
        return Response(data, media_type=mime,
                        headers={"content-disposition": "attachment",
                                 "x-content-type-options": "nosniff"})

    return files
