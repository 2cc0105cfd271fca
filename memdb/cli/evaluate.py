"""``memdb eval``: retrieval evaluations on public benchmarks."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ..core.errors import InvalidInput
from ._app import State, cli, emit_json
from ._shared import FINITE


def emit_report(result: dict[str, Any], out: str | None,
                table: Callable[[dict[str, Any]], str]) -> None:
    """An evaluation's result: JSON on stdout (``--json -``), or written to the file OUT and
    printed as a table, or only the table."""
    if out == "-":
        emit_json(result)
        return
    if out:
        Path(out).write_text(json.dumps(result, ensure_ascii=False, indent=2), encoding="utf-8")
    click.echo(table(result))


@cli.group("eval")
def eval_() -> None:
    """Measure retrieval quality on a benchmark (in a scratch database, dropped afterwards)."""


@eval_.command("locomo")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--k", "ks", default="5,10,25,50", show_default=True,
              help="Comma-separated cut-offs for recall@K.")
@click.option("--json", "out", type=click.Path(dir_okay=False, allow_dash=True), metavar="OUT",
              help="Write the result as JSON to OUT ('-' prints it instead of the table).")
@click.option("--no-context", is_flag=True,
              help="Index each turn alone (default: with its session date and previous turn).")
@click.option("--limit", type=int, help="Only the first N conversations.")
@click.option("--folds", type=int,
              help="Cross-validate instead: choose settings on the other folds' conversations "
                   "(best mean recall@10), measure on each fold's, rotate.")
@click.option("--grid", "grid_file", type=click.Path(exists=True, dir_okay=False),
              help="With --folds: JSON {axis: [values]} of search options to try "
                   "('weights.vector' for one route's weight; default: rrf_k, the vector "
                   "weight and b around today's defaults).")
@click.option("--mechanism", "mechanisms", multiple=True, metavar="NAME[=JSON]",
              help="With --folds: also try every grid point with search option NAME on "
                   "(value JSON, default true) and give its keep/drop verdict. Repeatable.")
@click.option("--category-tolerance", type=click.FloatRange(min=0), default=1.0,
              show_default=True, metavar="POINTS",
              help="With --folds: the category rule. No candidate may lower a category's "
                   "recall@10 by more than POINTS against the default on the training "
                   "conversations, and a mechanism is dropped when it lowers one (mean over "
                   "the folds) by more ('inf' turns the rule off).")
@click.option("--markdown", is_flag=True,
              help="With --folds: print the cross-validated figures as a Markdown table "
                   "(default, CV-chosen, each mechanism; per category; won/lost; verdict).")
@click.option("--no-vector-cache", is_flag=True,
              help="Embed every turn again (default: reuse the turns' vectors of earlier runs, "
                   "kept under $MEMDB_EVAL_CACHE, default ~/.cache/memdb/eval-vectors).")
@click.option("--quiet", is_flag=True, help="No progress lines on stderr.")
@click.pass_obj
def locomo(state: State, path: str, ks: str, out: str | None, no_context: bool,
           limit: int | None, folds: int | None, grid_file: str | None,
           mechanisms: tuple[str, ...], category_tolerance: float, markdown: bool,
           no_vector_cache: bool, quiet: bool) -> None:
    """Evaluate retrieval on a LoCoMo-format file (one memory per dialog turn).

    Prints recall@K and MRR for the routes vector, bm25, hybrid, hybrid_mmr and hybrid_decay,
    overall (categories 1-4), with adversarial questions, and per category. With --folds N:
    cross-validation over the conversations (recall@5/@10 and MRR per fold, their mean and
    spread, every candidate setting's won/lost against the default, mechanism verdicts).
    """
    from ..evaluation import format_table, run_locomo

    if folds is not None or grid_file or mechanisms or markdown:
        _locomo_cv(state, path, out, no_context, limit, folds, grid_file, mechanisms,
                   category_tolerance, markdown, not no_vector_cache, quiet)
        return
    try:
        cutoffs = [int(k) for k in ks.split(",") if k.strip()]
        result = run_locomo(path, dsn=state.dsn, ks=cutoffs, progress=not quiet,
                            limit_conversations=limit, search_context=not no_context,
                            vector_cache=not no_vector_cache)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from exc
    emit_report(result, out, format_table)


def _locomo_cv(state: State, path: str, out: str | None, no_context: bool, limit: int | None,
               folds: int | None, grid_file: str | None, mechanisms: tuple[str, ...],
               category_tolerance: float, markdown: bool, vector_cache: bool,
               quiet: bool) -> None:
    from ..evaluation.crossval import (
        format_cv_markdown,
        format_cv_table,
        parse_mechanism,
        run_locomo_cv,
    )

    if folds is None:
        raise InvalidInput("--grid, --mechanism and --markdown need --folds")
    if limit is not None:
        raise InvalidInput("--limit does not go with --folds (folds are conversations)")
    try:
        grid = None
        if grid_file:
            grid = json.loads(Path(grid_file).read_text(encoding="utf-8"))
            if not isinstance(grid, dict) or not all(isinstance(v, list) for v in grid.values()):
                raise ValueError("--grid must be a JSON object of axis -> list of values")
        mechs = dict(parse_mechanism(spec) for spec in mechanisms)
        result = run_locomo_cv(path, folds=folds, dsn=state.dsn, grid=grid, mechanisms=mechs,
                               progress=not quiet, search_context=not no_context,
                               vector_cache=vector_cache,
                               category_tolerance=(None if math.isinf(category_tolerance)
                                                   else category_tolerance / 100))
    except ValueError as exc:
        raise InvalidInput(str(exc)) from exc
    emit_report(result, out, format_cv_markdown if markdown else format_cv_table)


@eval_.command("extraction")
@click.option("--turns", "path", type=click.Path(exists=True, dir_okay=False),
              help="A labeled set of turns (JSON; default: the bundled Chinese and English set).")
@click.option("--heuristic-only", is_flag=True, help="Leave the LLM out even when configured.")
@click.option("--timeout", type=FINITE, metavar="SECONDS",
              help="remember's LLM timeout per turn (default: the remember path's).")
@click.option("--json", "out", type=click.Path(dir_okay=False, allow_dash=True), metavar="OUT",
              help="Write the result as JSON to OUT ('-' prints it instead of the table).")
@click.option("--quiet", is_flag=True, help="No progress lines on stderr.")
@click.pass_obj
def extraction(state: State, path: str | None, heuristic_only: bool, timeout: float | None,
               out: str | None, quiet: bool) -> None:
    """Check remember's fact extraction on labeled chat turns: facts expected, found, missed
    and spurious per language, for the heuristic and (with MEMDB_LLM_* set) the LLM, with
    the LLM's fallbacks, refused facts and latency."""
    from ..core.llm import llm_from_env
    from ..evaluation.extraction import format_extraction, run_extraction

    if timeout is not None and not timeout > 0:
        raise InvalidInput("--timeout must be a positive number of seconds")
    try:
        result = run_extraction(path, dsn=state.dsn, progress=not quiet, timeout=timeout,
                                llm=None if heuristic_only else llm_from_env())
    except ValueError as exc:
        raise InvalidInput(str(exc)) from exc
    emit_report(result, out, format_extraction)
