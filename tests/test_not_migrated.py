"""A database that `memdb migrate` never touched gives NotMigrated with the `memdb migrate`
hint on every path that sends a vector (issue 21: `remember` and `search` failed with psycopg's
"cannot adapt type 'ndarray'"), on both drivers. The server itself is migrated elsewhere
(template_dsn), so the role memdb_app exists: only this database lacks pgvector and the schema.
"""

from __future__ import annotations

import pytest

from memdb import MemoryStore, NotMigrated
from tests.drivers import OnAsyncDriver

CALLS = {
    "search": lambda store: store.search("peanuts"),
    "search_zh": lambda store: store.search("花生过敏"),
    "remember": lambda store: store.remember("I'm allergic to peanuts"),
    "remember_zh": lambda store: store.remember("我对花生过敏"),
    "add": lambda store: store.add("I'm allergic to peanuts"),
}


@pytest.mark.parametrize("make", [MemoryStore, OnAsyncDriver], ids=["sync", "async"])
@pytest.mark.parametrize("call", list(CALLS))
def test_an_unmigrated_database_says_migrate(template_dsn, empty_db, embedder, make, call):
    with make(empty_db, embedder=embedder, gate=None) as store:
        with pytest.raises(NotMigrated, match="memdb migrate") as raised:
            CALLS[call](store)
    assert "cannot adapt" not in str(raised.value)
