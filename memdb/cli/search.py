"""``memdb search``: hybrid search with its routes, weights, MMR and decay options."""

from __future__ import annotations

import json
from typing import Any

import click

from ..core.ops import catalog as ops
from ..core.ops.search_options import SEARCH_OPTIONS
from ..demo import summarize_hit
from ..retrieval.search import SearchOptions
from ._app import cli, emit_json, json_option, options, store
from ._format import print_hits
from ._generate import declared, declared_options
from ._shared import FINITE, filter_args, filters_but, pairs


@cli.command()
@declared(ops.SEARCH)
@filters_but("subject", "category")
@declared_options(SEARCH_OPTIONS)
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
    (["--explain", "--sql", "explain"], {"is_flag": True,
                                         "help": "Also show the SQL, its parameters and timings."}),
)
@json_option
def search(query: str, k: int, as_json: bool, routes: tuple[str, ...],
           weights: tuple[str, ...], mmr: float | None, decay: tuple[str, ...], explain: bool,
           **rest: Any) -> None:
    """Find the memories that best match QUERY, best first.

    Hybrid search: vector, BM25 and exact-match routes fused by weighted RRF in SQL. The
    per-query options (--neighbors ... --decompose) are the declared search options
    (docs/operations.md); unset, the defaults apply.
    """
    tuned = {p.name: rest.pop(p.name) for p in SEARCH_OPTIONS}
    if tuned["speaker_weight"] is not None:
        tuned["speaker"] = True
    if tuned["decompose"] is False:
        tuned["decompose"] = None  # the flag not given: the default
    hits = store().search(query, k=k, routes=list(routes) or None,
                           weights=pairs(weights, "--weight"), mmr=mmr,
                           decay=pairs(decay, "--decay"), explain=explain,
                           options=SearchOptions(**tuned), **filter_args(rest))
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


