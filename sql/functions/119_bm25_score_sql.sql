-- memdb.bm25_score_sql() -> text
-- The BM25 score of one candidate memory m as the SQL text of a scalar sub-select, for the
-- one-shot statements (EXECUTE) of memdb.search_bm25 and memdb.search_bm25_weighted, whose
-- parameters it reads: $4 the query's terms (text[]), $5 each term's weight (its idf, or weight
-- x idf; double precision[]), $6 k1, $7 b, $8 avgdl. The score is
--   sum over the query terms t in m of $5[t] * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |m| / avgdl))
-- with tf the term's position count in m.tsv (filtered to the query's terms by setweight and
-- ts_filter). A candidate holding each of its query terms once (no ',' between positions in
-- the filtered tsvector's text: the usual case) is scored with tf 1 from its lexemes alone
-- (tsvector_to_array; with one term, no aggregate at all), any other from unnest's positions:
-- unnest of a tsvector costs more per row than reading the row (docs/performance.md). The same
-- terms in the same order with the same operations, so the same sums to the bit.
-- memdb.search_bm25's two static statements for one subject spell the same expression with
-- its variables (their plans are kept; a change here goes there too).
CREATE OR REPLACE FUNCTION memdb.bm25_score_sql()
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $f$
    SELECT $s$(
            SELECT CASE WHEN strpos(x.f::text, ',') > 0  -- a term more than once: tf from positions
                        THEN (SELECT sum($5[array_position($4, u.lexeme)]
                                         * coalesce(array_length(u.positions, 1), 1)::double precision * ($6 + 1)
                                         / (coalesce(array_length(u.positions, 1), 1)::double precision
                                            + $6 * (1 - $7 + $7 * m.doc_len / $8)))
                              FROM unnest(x.f) u)
                        WHEN length(x.f) = 1  -- one query term, once
                        THEN $5[array_position($4, (tsvector_to_array(x.f))[1])] * ($6 + 1)
                             / (1 + $6 * (1 - $7 + $7 * m.doc_len / $8))
                        ELSE (SELECT sum($5[array_position($4, u.lexeme)] * ($6 + 1)
                                         / (1 + $6 * (1 - $7 + $7 * m.doc_len / $8)))
                              FROM (SELECT unnest(tsvector_to_array(x.f)) AS lexeme) u) END
            FROM (SELECT ts_filter(setweight(m.tsv, 'A', $4), '{a}') AS f OFFSET 0) x)$s$
$f$;
