"""Memory URIs: ``mem://{subject}/{category}/{id}``, usable wherever a memory id is.

Every memory has a URI (the ``uri`` column; by default ``memdb.uri_for(subject, category, id)``,
the subject percent-encoded so it is exactly one path segment). :meth:`MemoryStore.get`,
``update``, ``delete`` and ``history`` (and the CLI's ``get``/``update``/``delete``/``history``)
take the URI in place of the id: it names the memory with that id only if the memory's subject
and category are the ones the URI names (or its stored ``uri`` is exactly this text), so a URI
whose subject or category does not match the row, or a row of another tenant or subject, is
:class:`~memdb.core.errors.NotFound`. A URI that is not ``mem://<subject>/<category>/<uuid>`` is
:class:`~memdb.core.errors.InvalidInput`. ``list``/``search``/``recall`` filter by URI prefix
(``uri_prefix="mem://alice/preferences/"``, :class:`~memdb.core.filters.Filter`).

>>> MemoryUri.parse("mem://alice/preferences/0b9c5f7e-1d2a-4c3b-9e8f-7a6b5c4d3e2f").subject
'alice'
>>> str(MemoryUri("Alice Smith", "preferences", UUID(int=1)))
'mem://Alice%20Smith/preferences/00000000-0000-0000-0000-000000000001'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote
from uuid import UUID

from . import sql
from .errors import InvalidInput, NotFound

__all__ = ["MemoryUri", "is_uri", "encode_subject", "memory_id"]

SCHEME = "mem://"
MAX_URI_CHARS = 2048


def is_uri(value: object) -> bool:
    """Whether ``value`` is meant as a memory URI (a string starting with ``mem://``)."""
    return isinstance(value, str) and value.startswith(SCHEME)


def encode_subject(subject: str) -> str:
    """The subject as one URI path segment, encoded as ``memdb.uri_for`` does it."""
    return (subject.replace("%", "%25").replace("/", "%2F").replace(" ", "%20")
            .replace("\t", "%09"))


@dataclass(frozen=True)
class MemoryUri:
    """A parsed ``mem://{subject}/{category}/{id}`` (the subject decoded)."""

    subject: str
    category: str
    id: UUID

    def __str__(self) -> str:
        return f"{SCHEME}{encode_subject(self.subject)}/{self.category}/{self.id}"

    @classmethod
    def parse(cls, text: object) -> MemoryUri:
        """The URI's parts; InvalidInput unless it is ``mem://<subject>/<category>/<uuid>``."""
        if not is_uri(text):
            raise InvalidInput(f"not a memory URI (mem://subject/category/id): {text!r}")
        assert isinstance(text, str)
        if len(text) > MAX_URI_CHARS or "\x00" in text:
            raise InvalidInput("a memory URI is at most 2048 characters, without NUL")
        parts = text[len(SCHEME):].split("/")
        if len(parts) != 3 or not all(parts):
            raise InvalidInput(f"not a memory URI (mem://subject/category/id): {text!r}")
        try:
            mid = UUID(parts[2])
        except ValueError:
            raise InvalidInput(f"the memory URI {text!r} does not end with a memory id "
                               "(UUID)") from None
        return cls(unquote(parts[0]), parts[1], mid)


def memory_id(store: Any, value: object, *, history: bool = False) -> UUID:
    """The memory id that ``value`` (a UUID, its text, or a memory URI) names in ``store``.

    A URI is checked against the row in one query under the store's row-level security: the
    memory with the URI's id must have the URI's subject and category (or exactly this stored
    ``uri``); with ``history``, a deleted memory's recorded versions count too. NotFound
    otherwise; InvalidInput for anything that is neither an id nor a URI.
    """
    if isinstance(value, UUID):
        return value
    if not is_uri(value):
        try:
            return UUID(str(value))
        except ValueError:
            raise InvalidInput(f"not a memory id (UUID) or URI (mem://subject/category/id): "
                               f"{value!r}") from None
    uri = MemoryUri.parse(value)
    with store.core.read() as conn:
        found = conn.execute(sql.query("memory_at_uri"), {
            "tenant": store.tenant, "id": uri.id, "subject": uri.subject,
            "category": uri.category, "uri": value, "history": history,
        }).fetchone()["found"]
    if not found:
        raise NotFound(f"no memory {value}")
    return uri.id
