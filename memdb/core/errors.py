"""The one error tree of memdb: every failure a caller can see is a ``MemdbError``.

Driver errors are translated by SQLSTATE (never by message text) in :func:`translate`,
with the original exception chained as ``__cause__``.
"""

from __future__ import annotations

import psycopg

from .masking import redact

__all__ = [
    "status_of",
    "MemdbError",
    "InvalidInput",
    "DimensionMismatch",
    "TooLarge",
    "UnsupportedFormat",
    "MalformedFile",
    "NotFound",
    "Forbidden",
    "Conflict",
    "Rejected",
    "MissingDependency",
    "DatabaseError",
    "DatabaseUnavailable",
    "ReplicaUnavailable",
    "ReplicaLagging",
    "UnsupportedServer",
    "NotMigrated",
    "EmbeddingError",
    "translate",
]


class MemdbError(Exception):
    """Base class of every error memdb raises."""


class InvalidInput(MemdbError, ValueError):
    """A value the caller passed is malformed or out of range; nothing was changed."""


class DimensionMismatch(InvalidInput):
    """A vector's dimensions do not match its embedding space (SQLSTATE MD001)."""


class TooLarge(InvalidInput):
    """The call asks for more work than its limit allows (an ingest over ``max_chunks``, as
    the HTTP and MCP doors set per request); it is refused before any work: nothing was
    embedded or changed."""


class UnsupportedFormat(InvalidInput):
    """A file whose content (not its name) is of no format memdb reads; nothing was written."""


class MalformedFile(InvalidInput):
    """A file of a supported format that cannot be decoded (truncated, corrupt); nothing was
    written."""


class NotFound(MemdbError, LookupError):
    """No memory with that id is visible to this tenant."""


class Forbidden(MemdbError, PermissionError):
    """The write or read is outside what this store may touch (another tenant's or another
    subject's rows, refused by row-level security; SQLSTATE 42501)."""


class Conflict(MemdbError):
    """The change would make two current memories with the same content in one scope."""


class Rejected(MemdbError):
    """The write gate refused a memory; ``reasons`` says why (``"code: explanation"``)."""

    def __init__(self, message: str, reasons: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.reasons = tuple(reasons)


class MissingDependency(MemdbError, ImportError):
    """An optional package needed for this feature is not installed."""


class DatabaseError(MemdbError):
    """PostgreSQL reported an error memdb has no more specific class for."""


class DatabaseUnavailable(DatabaseError):
    """The server cannot be reached, or the connection was lost."""


class ReplicaUnavailable(DatabaseUnavailable):
    """The read replica (``read_dsn``) cannot be reached, or was lost during a read; raised
    for reads only when ``read_fallback=False`` (else they run on the primary)."""


class ReplicaLagging(DatabaseError):
    """The read replica did not replay the store's last write within the read timeout
    (consistency ``read_your_writes`` with ``read_fallback=False``)."""


class UnsupportedServer(DatabaseError):
    """The server is too old or lacks the pgvector extension."""


class NotMigrated(DatabaseError):
    """The memdb schema is missing or out of date: run ``memdb migrate``."""


class EmbeddingError(MemdbError):
    """The embedding provider failed or returned unusable vectors."""


# The HTTP status of each error (the HTTP door, the UI), most specific first.
_STATUS: tuple[tuple[type[MemdbError], int], ...] = (
    (TooLarge, 413),
    (InvalidInput, 400),
    (NotFound, 404),
    (Forbidden, 403),
    (Conflict, 409),
    (Rejected, 422),
    (NotMigrated, 503),
    (DatabaseUnavailable, 503),
    (EmbeddingError, 503),
    (MissingDependency, 501),
)


def status_of(exc: MemdbError) -> int:
    """The HTTP status that stands for ``exc`` (500 for an error without one)."""
    for cls, status in _STATUS:
        if isinstance(exc, cls):
            return status
    return 500


def translate(exc: psycopg.Error) -> MemdbError:
    """Map a psycopg error to the memdb error tree by its SQLSTATE."""
    state = getattr(exc, "sqlstate", None) or ""
    diag = getattr(exc, "diag", None)
    message = redact((diag.message_primary if diag is not None else None) or str(exc).strip())
    if state == "MD001":
        return DimensionMismatch(message)
    if state == "42501":
        return Forbidden(message)
    if state == "23505":
        return Conflict(message)
    if state.startswith("22") or state.startswith("23"):
        return InvalidInput(message)
    if state.startswith("54"):  # program limit exceeded (e.g. a tsvector over 1 MB): the
        return InvalidInput(message)  # input is too big; psycopg calls it an OperationalError
    if state in ("42P01", "3F000", "42883"):
        return NotMigrated(f"{message} (is the schema migrated? run `memdb migrate`)")
    if state.startswith("40"):  # deadlock, serialization failure: the server is fine
        return DatabaseError(f"{message} [SQLSTATE {state}]")
    if state.startswith("08") or state in ("57P01", "57P02", "57P03") or isinstance(
        exc, psycopg.OperationalError
    ):
        return DatabaseUnavailable(message)
    return DatabaseError(f"{message} [SQLSTATE {state}]" if state else message)
