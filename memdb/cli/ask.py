"""``memdb documents ask``: a grounded, cited answer from
ingested documents (and memories), and ``memdb eval expansion``: does query expansion or
reranking help retrieval on LoCoMo?"""

from __future__ import annotations

import os
from typing import Any

import click

from ..core.errors import InvalidInput
from ..core.llm import ChatLLM, llm_from_env
from ..core.ops import catalog as ops
from ..retrieval.ask import EXPANSIONS, RERANKERS, AskResult, Passage
from ._app import State, emit_json, json_option
from ._generate import declared
from ._groups import documents
from ._shared import FINITE, filter_args, filters_but
from .evaluate import emit_report, eval_


def chat_from_env(timeout: float | None) -> ChatLLM | None:
    """The LLM of MEMDB_LLM_*, with ``timeout`` (seconds) instead of MEMDB_LLM_TIMEOUT."""
    if timeout is not None and (timeout <= 0 or timeout != timeout):
        raise InvalidInput("--timeout must be a positive number of seconds")
    base = llm_from_env()
    if base is None or timeout is None:
        return base
    return ChatLLM(base.base_url, api_key=os.environ.get("MEMDB_LLM_API_KEY"),
                   model=base.model, timeout=timeout)


def _source(p: Passage) -> str:
    where = p.document_uri or p.uri
    span = f" chars {p.char_start}-{p.char_end}" if p.char_start is not None else ""
    return f"[{p.number}] {p.label} ({where}{span}) memory {p.memory_id}"


def _print(result: AskResult) -> None:
    if result.mode == "llm":
        click.echo(result.answer)
        if result.citations:
            click.echo("\nSources:")
            for p in result.citations:
                click.echo(_source(p))
    elif not result.passages:
        click.echo("no passages match the question", err=True)
    else:
        for p in result.passages:
            click.echo(_source(p))
            click.echo("    " + "\n    ".join(p.text.splitlines() or [""]))
    for note in result.notes:
        click.echo(f"note: {note}", err=True)


@documents.command("ask")
@declared(ops.ASK)
@click.option("--expand", type=click.Choice(EXPANSIONS),
              help="Query expansion through the LLM (off by default): mqe = several rewrites, "
                   "hyde = a hypothetical answer passage; fused with the question by RRF.")
@click.option("--queries", "n_queries", type=int, default=3, show_default=True,
              help="How many rewrites --expand mqe asks for.")
@click.option("--rerank", type=click.Choice(RERANKERS),
              help="Rerank the candidates before answering (llm: scores from the LLM).")
@click.option("--rerank-depth", type=int, default=20, show_default=True,
              help="How many candidates the reranker sees.")
@click.option("--no-llm", is_flag=True,
              help="Return the ranked, cited passages even if an LLM is configured.")
@click.option("--timeout", type=FINITE, metavar="SECONDS",
              help="LLM timeout per request (default: each path's own, "
                   "$MEMDB_LLM_TIMEOUT_<PATH>; $MEMDB_LLM_TIMEOUT, else 120, is the ceiling).")
@filters_but("subject")
@json_option
@click.pass_obj
def ask(state: State, question: str, k: int, include_memories: bool, subject: str | None,
        expand: str | None,
        n_queries: int, rerank: str | None, rerank_depth: int, no_llm: bool,
        timeout: float | None, as_json: bool, **filters: Any) -> None:
    """Answer QUESTION from ingested documents, citing passages as [n].

    Hybrid search over document chunks (with --include-memories, over all memories), then,
    when MEMDB_LLM_MODEL (with MEMDB_LLM_BASE_URL, MEMDB_LLM_API_KEY) names an
    OpenAI-compatible chat model, an answer that uses only those passages and says "I don't
    know" otherwise. Without an LLM, or when it fails, the ranked passages are printed with
    where they come from (document, heading path, character offsets); notes go to stderr.
    """
    chat = None if no_llm else chat_from_env(timeout)
    result = state.store().documents.ask(question, k=k, include_memories=include_memories,
                                         expand=expand, n_queries=n_queries,
                                         reranker=rerank, rerank_depth=rerank_depth, llm=chat,
                                         **filter_args({**filters, "subject": subject}))
    if as_json:
        emit_json(result.to_dict())
        return
    _print(result)


@eval_.command("expansion")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--expand", "expands", multiple=True, type=click.Choice(("none", *EXPANSIONS)),
              help="Configurations to compare (repeatable; default: none, mqe, hyde).")
@click.option("--rerank", type=click.Choice(RERANKERS),
              help="Also run each configuration with this reranker.")
@click.option("--k", "ks", default="5,10,25", show_default=True,
              help="Comma-separated cut-offs for recall@K (at most 50).")
@click.option("--limit", type=int, help="Only the first N conversations.")
@click.option("--questions", "max_questions", type=int,
              help="Only the first N questions (a cheaper run against a paid endpoint).")
@click.option("--timeout", type=FINITE, metavar="SECONDS", help="LLM timeout per request.")
@click.option("--json", "out", type=click.Path(dir_okay=False, allow_dash=True), metavar="OUT",
              help="Write the result as JSON to OUT ('-' prints it instead of the table).")
@click.option("--quiet", is_flag=True, help="No progress lines on stderr.")
@click.pass_obj
def expansion(state: State, path: str, expands: tuple[str, ...], rerank: str | None, ks: str,
              limit: int | None, max_questions: int | None, timeout: float | None,
              out: str | None, quiet: bool) -> None:
    """Compare retrieval with and without query expansion (and reranking) on a LoCoMo file.

    Needs an OpenAI-compatible chat model in MEMDB_LLM_* for mqe, hyde and rerank; every
    question whose expansion or rerank fell back is counted (fallback_rate), so a run
    without a working endpoint shows that it measured nothing.
    """
    from ..evaluation.expansion import format_expansion, run_expansion

    try:
        cutoffs = [int(x) for x in ks.split(",") if x.strip()]
        result = run_expansion(path, dsn=state.dsn, ks=cutoffs,
                               expands=list(expands) or ["none", *EXPANSIONS], rerank=rerank,
                               llm=chat_from_env(timeout), limit_conversations=limit,
                               max_questions=max_questions, progress=not quiet)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from exc
    emit_report(result, out, format_expansion)
