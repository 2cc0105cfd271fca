"""``memdb search``: hybrid search with its routes, weights, MMR and decay options."""

from __future__ import annotations

import json
from typing import Any

import click

from ..demo import summarize_hit
from ..search import SearchOptions
from ._app import cli, emit_json, json_option, options, store
from ._format import print_hits
from ._shared import FINITE, filter_args, filter_options, pairs


@cli.command()
@click.argument("query")
@click.option("-k", "--k", "k", type=int, default=10, show_default=True,
              help="How many hits to return.")
@filter_options
@options(
    (["--route", "routes"], {"multiple": True,
                             "help": "Run only these routes (repeatable): vector, bm25, exact."}),
    (["--weight", "weights"], {"multiple": True, "metavar": "ROUTE=W",
                               "help": "RRF weight of a route (repeatable), e.g. bm25=0.5."}),
    (["--mmr"], {"type": FINITE, "metavar": "LAMBDA",
                 "help": "Diversify the hits with MMR (lambda 0 to 1; 1 = relevance only)."}),
    (["--decay"], {"multiple": True, "metavar": "KEY=VALUE",
                   "help": "Score multiplier settings (repeatable): decay_weight, "
                           "half_life_days, hotness_weight, importance_weight."}),
    (["--neighbors"], {"type": int, "metavar": "N",
                       "help": "Bring each hit's session neighbours up to N turns away (0-10; "
                               "default 1; 0 = off)."}),
    (["--neighbor-weight"], {"type": FINITE, "metavar": "W",
                             "help": "A neighbour scores W ** distance times its hit (default "
                                     "0.4)."}),
    (["--prf"], {"type": int, "metavar": "N",
                 "help": "Pseudo-relevance feedback: expand the BM25 query from the first "
                         "pass's top N memories (0-100; off by default)."}),
    (["--prf-terms"], {"type": int, "metavar": "M",
                       "help": "How many expansion terms (default 10)."}),
    (["--prf-weight"], {"type": FINITE, "metavar": "ALPHA",
                        "help": "Weight of the original query terms (0-1, default 0.5)."}),
    (["--decompose"], {"is_flag": True, "default": None,
                       "help": "Split a question joining two facts into sub-queries and fuse "
                               "their searches (off by default)."}),
    (["--speaker"], {"type": FINITE, "metavar": "W",
                     "help": "Transcript lines 'Name: text' whose speaker the query names score "
                             "(1 + W) times as much (0-10; off by default)."}),
    (["--temporal"], {"type": FINITE, "metavar": "W",
                      "help": "For a question about time, memories that carry a time score "
                              "(1 + W) times as much, (1 + W) more when they fall in a time "
                              "the query names (0-10; default 1; 0 = off)."}),
    (["--session-prior"], {"type": FINITE, "metavar": "W",
                           "help": "A memory in a session holding a share of the candidates' "
                                   "score scores (1 + W * share) times as much (0-10; off by "
                                   "default)."}),
    (["--speaker-neighbors"], {"type": FINITE, "metavar": "W",
                               "help": "A transcript line 'Name: text' brings its speaker's "
                                       "previous and next line in its session, scored W times "
                                       "it (0-1; default 0.4, 0 = off)."}),
    (["--explain", "--sql", "explain"], {"is_flag": True,
                                         "help": "Also show the SQL, its parameters and timings."}),
)
@json_option
def search(query: str, k: int, as_json: bool, routes: tuple[str, ...],
           weights: tuple[str, ...], mmr: float | None, decay: tuple[str, ...], explain: bool,
           neighbors: int | None, neighbor_weight: float | None, prf: int | None,
           prf_terms: int | None, prf_weight: float | None, decompose: bool | None,
           speaker: float | None,
           temporal: float | None, session_prior: float | None,
           speaker_neighbors: float | None, **filters: Any) -> None:
    """Find the memories that best match QUERY, best first.

    Hybrid search: vector, BM25 and exact-match routes fused by weighted RRF in SQL.
    """
    hits = store().search(query, k=k, routes=list(routes) or None,
                           weights=pairs(weights, "--weight"), mmr=mmr,
                           decay=pairs(decay, "--decay"), explain=explain,
                           options=SearchOptions(
                               neighbors=neighbors, neighbor_weight=neighbor_weight, prf=prf,
                               prf_terms=prf_terms, prf_weight=prf_weight,
                               speaker=None if speaker is None else True, speaker_weight=speaker,
                               decompose=decompose, temporal=temporal,
                               session_prior=session_prior,
                               speaker_neighbors=speaker_neighbors),
                           **filter_args(filters))
    if as_json:
        emit_json({"query": query, "hits": [h.to_dict() for h in hits],
                    "explain": getattr(hits, "explain", None)})
        return
    if hits:
        print_hits([summarize_hit(h) for h in hits], with_id=True)
    else:
        click.echo("no memories match", err=True)
    if explain and getattr(hits, "explain", None):
        info = hits.explain
        if "subqueries" in info:
            click.echo("\n-- sub-queries: " + " | ".join(info["subqueries"]))
        click.echo(f"\n-- embed {info['embed_ms']} ms, database {info['db_ms']} ms, "
                   f"hits per route {json.dumps(info['routes'])}")
        click.echo(f"-- params {json.dumps(info['params'], ensure_ascii=False, default=str)}")
        if "neighbors" in info:
            click.echo(f"-- brought by neighbour expansion: {len(info['neighbors'])}")
        if "prf_terms" in info:
            terms = ", ".join(f"{t['term']}:{t['weight']:.2f}" for t in info["prf_terms"])
            click.echo(f"-- BM25 query after feedback: {terms}")
        click.echo(info["sql"].strip())


