"""Does ``remember`` keep the facts of a chat turn? A labeled check, heuristic vs LLM.

:func:`run_extraction` runs every turn of a labeled set (default: the bundled
``data/extraction_turns.json``, 36 Chinese and English turns with 52 expected facts: several
facts in one turn, preferences, allergies, negations, rules, events, and questions and
chit-chat with no fact) through :meth:`memdb.MemoryStore.remember` in a scratch database
(dropped afterwards), once per extraction path: ``heuristic`` (no LLM) and, when an LLM is
given or configured (``MEMDB_LLM_BASE_URL``, ``MEMDB_LLM_MODEL``, ``MEMDB_LLM_API_KEY``),
``llm``. Each (path, turn) gets a subject of its own, so no turn is reconciled against another.

Matching rule. The *found* memories of a turn are the distinct contents of its decisions that
hold the fact (action add, update or noop; a write the gate rejected is not found). An expected fact
is *found* when some found memory covers it: :func:`memdb.write.grounding.covers` (70 % of the
fact's content units, words or CJK bigrams, occur in the memory) or, after casefolding and
dropping everything but letters and digits, the fact is contained in the memory. A memory
that holds a whole sentence covers every fact the sentence states (this measures whether the
facts are kept, not how finely they are split: ``memories`` shows that). A found memory is
*spurious* when it covers no expected fact of its turn and no expected fact covers it
(on a question or chit-chat turn every memory is spurious). ``missed`` = expected - found.

For the llm path it also counts the turns whose model reply was not used (``fallbacks``:
the result's path is heuristic, with ``fallback_reason``), the model's facts the checks
refused (``refused``), the decisions that came from the model itself (``from_model``) and
the model's latency per turn (``llm_ms`` p50/p95/mean). ``memdb eval extraction`` is the
command line.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from importlib import resources
from typing import Any

from ..core.embeddings import Embedder, embedder_from_env
from ..core.llm import ChatLLM, llm_from_env
from ..families.store import MemoryStore
from ..write.grounding import covers
from ._scratch import scratch_database
from .locomo import Progress

__all__ = ["run_extraction", "format_extraction", "load_turns", "matches", "DEFAULT_TURNS"]

DEFAULT_TURNS = "extraction_turns.json"
_KEPT = ("add", "update", "noop")
_UNSET: Any = object()


def load_turns(path: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """The labeled turns of ``path`` (default: the bundled set); ValueError when malformed."""
    if path is None:
        text = resources.files(__package__).joinpath("data", DEFAULT_TURNS).read_text("utf-8")
    else:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    data = json.loads(text)
    turns = data.get("turns") if isinstance(data, dict) else data
    if not isinstance(turns, list) or not turns:
        raise ValueError("an extraction set is a list of turns (or {'turns': [...]})")
    for t in turns:
        if not (isinstance(t, dict) and isinstance(t.get("id"), str)
                and isinstance(t.get("text"), str) and t["text"].strip()
                and isinstance(t.get("facts"), list)
                and all(isinstance(f, str) and f.strip() for f in t["facts"])):
            raise ValueError(f"each turn needs an id, a text and a list of facts: {t!r:.120}")
    return turns


def _norm(text: str) -> str:
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def matches(memory: str, fact: str) -> bool:
    """Whether a found ``memory`` covers an expected ``fact`` (the module's matching rule)."""
    return covers(memory, fact) or (bool(_norm(fact)) and _norm(fact) in _norm(memory))


def _score(facts: list[str], found: list[str]) -> dict[str, Any]:
    hit = [f for f in facts if any(matches(m, f) for m in found)]
    spurious = [m for m in found if not any(matches(m, f) or matches(f, m) for f in facts)]
    return {"expected": len(facts), "found": len(hit),
            "missed": [f for f in facts if f not in hit], "spurious": spurious}


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    expected = sum(r["expected"] for r in rows)
    found = sum(r["found"] for r in rows)
    memories = sum(len(r["memories"]) for r in rows)
    spurious = sum(len(r["spurious"]) for r in rows)
    out = {"turns": len(rows), "expected": expected, "found": found,
           "missed": expected - found, "spurious": spurious, "memories": memories,
           "recall": found / expected if expected else 0.0,
           "precision": (memories - spurious) / memories if memories else 0.0}
    llm = [r for r in rows if r["llm_ms"] is not None]
    if llm:
        ms = [r["llm_ms"] for r in llm]
        out.update({"fallbacks": sum(r["path"] != "llm" for r in llm),
                    "refused": sum(len(r["refused"]) for r in llm),
                    "from_model": sum(r["from_model"] for r in llm),
                    "llm_ms": {"p50": _pct(ms, 0.5), "p95": _pct(ms, 0.95),
                               "mean": round(statistics.fmean(ms), 1)}})
    return out


def run_extraction(path: str | os.PathLike[str] | None = None, *, dsn: str | None = None,
                   llm: ChatLLM | None = _UNSET, timeout: float | None = None,
                   progress: bool = True, embedder: Embedder | None = None) -> dict[str, Any]:
    """Facts expected, found, missed and spurious per path and language; see the module
    docstring. ``llm``: the chat model of the llm path (default ``$MEMDB_LLM_*``; None: the
    heuristic alone). ``timeout``: remember's LLM timeout per turn (default the path's)."""
    started = time.perf_counter()
    turns = load_turns(path)
    chat = llm_from_env() if llm is _UNSET else llm
    paths: dict[str, ChatLLM | None] = {"heuristic": None}
    if chat is not None:
        paths["llm"] = chat
    show = Progress(progress)
    embedder = embedder or embedder_from_env()
    results: dict[str, Any] = {}
    with scratch_database(dsn) as scratch, MemoryStore(scratch, embedder=embedder,
                                                       gate=None) as store:
        for name, model in paths.items():
            rows = []
            t0 = time.perf_counter()
            for n, turn in enumerate(turns, start=1):
                r = store.remember(turn["text"], llm=model, subject=f"{name}-{turn['id']}",
                                   session_id=f"eval-{name}", timeout=timeout)
                # a fact the model repeats is one memory (the store keeps one copy)
                memories = list(dict.fromkeys(d.content for d in r.decisions
                                              if d.action in _KEPT))
                row = {"id": turn["id"], "lang": turn.get("lang", "?"),
                       "kind": turn.get("kind"), **_score(turn["facts"], memories),
                       "memories": memories, "path": r.path,
                       "fallback_reason": r.fallback_reason if model is not None else None,
                       "refused": [x.to_dict() for x in r.refused],
                       "from_model": sum(d.path == "llm" for d in r.decisions
                                         if d.action in _KEPT),
                       "llm_ms": r.llm_ms}
                rows.append(row)
                show(f"extraction [{name}]", n, len(turns), t0)
            langs = sorted({r["lang"] for r in rows})
            results[name] = {"overall": _summary(rows),
                             "per_language": {lg: _summary([r for r in rows if r["lang"] == lg])
                                              for lg in langs},
                             "turns": rows,
                             "seconds": round(time.perf_counter() - t0, 2)}
    return {"dataset": str(path) if path is not None else f"memdb:{DEFAULT_TURNS}",
            "turns": len(turns), "facts": sum(len(t["facts"]) for t in turns),
            "paths": results,
            "meta": {"llm": repr(chat) if chat is not None else None,
                     "embedder": getattr(embedder, "model", type(embedder).__name__),
                     "timeout": timeout,
                     "total_s": round(time.perf_counter() - started, 2)}}


def format_extraction(result: dict[str, Any]) -> str:
    """A plain-text table of a :func:`run_extraction` result."""
    lines = [f"Extraction check: {result['dataset']} ({result['turns']} turns, "
             f"{result['facts']} facts expected; LLM: {result['meta']['llm']})", "",
             f"{'path':<11}{'lang':<6}{'expected':>9}{'found':>7}{'missed':>8}{'spurious':>10}"
             f"{'memories':>10}{'recall %':>10}{'fallbacks':>11}{'refused':>9}"
             f"{'llm p50 ms':>12}{'llm p95 ms':>12}"]
    for name, res in result["paths"].items():
        for lang, s in [*res["per_language"].items(), ("all", res["overall"])]:
            ms = s.get("llm_ms") or {}
            cell = lambda v: "-" if v is None else str(v)  # noqa: E731
            lines.append(f"{name:<11}{lang:<6}{s['expected']:>9}{s['found']:>7}{s['missed']:>8}"
                         f"{s['spurious']:>10}{s['memories']:>10}{100 * s['recall']:>10.1f}"
                         f"{cell(s.get('fallbacks')):>11}{cell(s.get('refused')):>9}"
                         f"{cell(ms.get('p50')):>12}{cell(ms.get('p95')):>12}")
    return "\n".join(lines)
