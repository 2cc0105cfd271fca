-- memdb schema, revision 0006 (frozen): an index on memories.superseded_by.
-- The foreign key superseded_by → memories(id) ON DELETE SET NULL makes every deleted memory
-- look up the rows that point to it; without an index that is a scan of the whole table per
-- deleted row, the bulk of the cost of forgetting, purging, delete() and forget_subject
-- (benchmarks/lifecycle.py over 10,000 memories: a maintenance pass 13.6 s → 0.71 s,
-- forget_subject of 1,000 memories 1.2 s → 86 ms).

CREATE INDEX memories_superseded_by_idx ON memdb.memories (superseded_by)
    WHERE superseded_by IS NOT NULL;
