-- memdb schema, revision 0017 (frozen): a memory's event time, resolved when it is written.
--   * event_time: the time its content names, memdb.time_range(content, valid_from) (a range
--     of UTC days: "yesterday" said on 8 May 2023 is 7 May); NULL when it names none;
--   * names_time: whether its content carries a time (event_time set, or a duration or date
--     word: memdb.time_words(content)).
-- The memories_before_write trigger keeps both; the search option temporal
-- (memdb.temporal_boost in memdb.search_hybrid) reads them instead of resolving every
-- candidate's text at query time. The revision fills them for stored memories once the
-- functions are in place, and drops memdb.temporal_boost over the content (it now takes these
-- columns): alembic/versions/0017_event_time.py. One statement: Citus passes it on as text.

ALTER TABLE memdb.memories
    ADD COLUMN event_time tstzrange,
    ADD COLUMN names_time boolean NOT NULL DEFAULT false;
