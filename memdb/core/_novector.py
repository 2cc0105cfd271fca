"""Vectors sent to a database without pgvector raise :class:`~memdb.core.errors.NotMigrated`.

pgvector's adapters are registered on a pooled connection only when the ``vector`` type exists
(``register_vector`` looks it up). In a database that ``memdb migrate`` never touched it does
not, and psycopg then failed on the first query embedding with "cannot adapt type 'ndarray'",
a driver error that says nothing of the cause. :func:`refuse_vectors` registers, in its place,
a dumper for numpy arrays that raises the not-migrated error with the ``memdb migrate`` hint.
"""

from __future__ import annotations

from typing import Any

from psycopg.adapt import Dumper

from .errors import NotMigrated

MESSAGE = ("the pgvector type 'vector' is missing in this database "
           "(is the schema migrated? run `memdb migrate`)")


class _NotMigratedDumper(Dumper):
    def dump(self, obj: Any) -> bytes:
        raise NotMigrated(MESSAGE)


def refuse_vectors(conn: Any) -> None:
    """On ``conn`` (a psycopg Connection or AsyncConnection), make a numpy array parameter
    raise NotMigrated instead of psycopg's "cannot adapt type 'ndarray'"."""
    conn.adapters.register_dumper("numpy.ndarray", _NotMigratedDumper)
