"""The store's actor is who history and provenance name (issue 14): ``MemoryStore(actor=...)``
reaches every history row's actor and each new memory's created_by (unless the caller gives
created_by explicitly), through add, update, delete, supersession, ingest and raw SQL."""

from __future__ import annotations

from memdb import MemoryStore
from memdb.write.ingest import TextSource


def test_actor_is_history_actor_and_default_created_by(fresh_db, embedder, raw):
    with MemoryStore(fresh_db, embedder=embedder, gate=None, actor="agent-7") as s:
        first = s.add("Alice 的生日是 5 月 3 日", norm_key="alice-birthday")
        own = s.add("Alice prefers green tea", created_by="alice")
        s.update(first.id, importance=0.9, reason="birthdays matter")
        newer = s.add("Alice 的生日是 5 月 4 日", norm_key="alice-birthday")
        s.add("Alice prefers green tea", importance=0.95)  # a duplicate: bumped, kept
        s.documents.ingest([TextSource("kb:actor", "# Notes\n\nChunks record who ingested them.")])
        s.delete(own.id, reason="asked to forget")
        assert s.get(first.id).created_by == "agent-7"
        assert s.get(newer.id).created_by == "agent-7"
        assert [(h.op, h.actor) for h in s.history(first.id)] == [
            ("insert", "agent-7"), ("update", "agent-7"), ("supersede", "agent-7")]
        assert [(h.op, h.actor) for h in s.history(own.id)] == [
            ("insert", "agent-7"), ("update", "agent-7"), ("delete", "agent-7")]
        assert s.history(own.id)[0].after["created_by"] == "alice"  # explicit: kept
    actors = raw.execute("SELECT DISTINCT actor FROM memdb.memory_history").fetchall()
    assert actors == [("agent-7",)]
    created_by = raw.execute("SELECT DISTINCT created_by FROM memdb.memories "
                             "WHERE content <> 'Alice prefers green tea'").fetchall()
    assert created_by == [("agent-7",)]


def test_without_an_actor_created_by_is_the_login_history_names(store, raw):
    """No actor: created_by is the login, the actor history records (it was left empty while
    history named the login), through add and document ingest alike."""
    r = store.add("no actor given 没有给出写入者")
    login = raw.execute("SELECT session_user").fetchone()[0]
    actor = store.history(r.id)[0].actor
    assert actor in (login, "memdb_user")  # the login, as documented
    assert store.get(r.id).created_by == actor
    store.documents.ingest([TextSource("kb:no-actor", "# Notes\n\nNobody named the writer.")])
    got = raw.execute("""SELECT DISTINCT m.created_by, h.actor FROM memdb.memories m
                         JOIN memdb.memory_history h ON h.memory_id = m.id""").fetchall()
    assert got == [(actor, actor)]


def test_sql_writers_take_the_actor_setting(raw):
    """From psql: SET memdb.actor names the writer; created_by follows it unless given."""
    raw.execute("SET memdb.actor = 'psql-user'")
    try:
        rows = raw.execute("""SELECT ord, id FROM memdb.add_memories(
                                  '[{"content": "written from psql"},
                                    {"content": "with its own author", "created_by": "bob"}]')
                              ORDER BY ord""").fetchall()
    finally:
        raw.execute("RESET memdb.actor")
    made = {r[1]: r[0] for r in rows}
    got = raw.execute("""SELECT m.id, m.created_by, h.actor FROM memdb.memories m
                         JOIN memdb.memory_history h ON h.memory_id = m.id""").fetchall()
    assert sorted((made[i], c, a) for i, c, a in got) == [
        (1, "psql-user", "psql-user"), (2, "bob", "psql-user")]
