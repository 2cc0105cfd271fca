"""memdb's typed errors as HTTP statuses, with one stable body:
``{"error": {"type": "NotFound", "message": "..."}}``. Messages are redacted (no DSN password,
no API key) and bounded (:func:`bounded`: a value quoted from the request is cut to
``MAX_ECHO`` characters, control characters are escaped); an unexpected exception is logged by
its type and answered 500 without its text."""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..core.errors import MemdbError, Rejected, status_of
from ..core.masking import redact

__all__ = ["install", "error_response", "status_of", "bounded", "MAX_ECHO", "MAX_MESSAGE"]

LOGGER = logging.getLogger("memdb.http")

MAX_ECHO = 40  # characters of one value quoted from the request (a quoted string, a number)
MAX_MESSAGE = 1000  # characters of a whole message

# a quoted value: opened where a word does not go on (an apostrophe in "memdb's" opens none)
_QUOTED = re.compile(r"""(?<!\w)(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")(?!\w)""")
_LONG_NUMBER = re.compile(rf"\d{{{MAX_ECHO + 1},}}")
# C0/C1 controls, and the format characters that reorder or hide text (bidi, zero width)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def _cut(text: str, keep: int) -> str:
    return text if len(text) <= keep else text[:keep] + "…"


def _cut_quoted(match: re.Match[str]) -> str:
    quoted = match.group(0)
    if len(quoted) <= MAX_ECHO + 2:
        return quoted
    return quoted[:MAX_ECHO + 1] + "…" + quoted[-1]


def bounded(message: str) -> str:
    """The one policy for request values echoed in an error message: secrets masked
    (:func:`memdb.core.masking.redact`), control and invisible format characters escaped
    (``\\u000a``), each quoted value and each run of digits cut to ``MAX_ECHO`` characters, the
    whole message to ``MAX_MESSAGE``."""
    text = _CONTROL.sub(lambda m: f"\\u{ord(m.group(0)):04x}", redact(message))
    text = _LONG_NUMBER.sub(lambda m: _cut(m.group(0), MAX_ECHO), text)
    text = _QUOTED.sub(_cut_quoted, text)
    return _cut(text, MAX_MESSAGE)


def error_response(status: int, kind: str, message: str, *,
                   headers: dict[str, str] | None = None, **extra: Any) -> JSONResponse:
    body: dict[str, Any] = {"type": kind, "message": bounded(message)}
    body.update(extra)
    return JSONResponse({"error": body}, status_code=status, headers=headers)


async def _memdb_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, MemdbError)
    status = status_of(exc)
    extra: dict[str, Any] = {}
    if isinstance(exc, Rejected):
        extra["reasons"] = [bounded(r) for r in exc.reasons]
    if status >= 500:
        LOGGER.warning("%s %s: %s (%s)", request.method, request.url.path, type(exc).__name__,
                       redact(str(exc)))
    return error_response(status, type(exc).__name__, str(exc) or type(exc).__name__, **extra)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    if any(err.get("type") == "json_invalid" for err in errors):
        return error_response(400, "InvalidInput", "the request body is not valid JSON")
    problems = []
    for err in errors[:20]:
        where = ".".join(str(p) for p in err.get("loc", ()))
        problems.append(f"{where}: {err.get('msg', 'invalid')}")
    # the input values themselves are not echoed (they may hold anything, a key included)
    return error_response(422, "InvalidInput", "; ".join(problems) or "invalid request")


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    kinds = {401: "Unauthorized", 404: "NotFound", 405: "MethodNotAllowed",
             413: "PayloadTooLarge", 429: "TooManyRequests"}
    return error_response(exc.status_code, kinds.get(exc.status_code, "HTTPError"),
                          str(exc.detail), headers=getattr(exc, "headers", None))


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    LOGGER.error("%s %s failed: %s", request.method, request.url.path, type(exc).__name__)
    return error_response(500, "InternalError", "internal error")


def install(app: Any) -> None:
    app.add_exception_handler(MemdbError, _memdb_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
