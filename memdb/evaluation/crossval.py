"""Cross-validated LoCoMo evaluation: choose search settings on some conversations, measure
them on the others, rotate (``memdb eval locomo --folds 5``).

The conversations (in file order) are dealt into ``folds`` groups (conversation i goes to fold
i mod folds; with as many folds as conversations, each fold is one conversation). Every
candidate setting runs once over every question of one stored snapshot
(:func:`memdb.evaluation.locomo.collect`); the fold selection is then done offline on the
per-question results: for each fold, the setting with the best **mean recall@10 over the
training questions** (every question of the other folds, all five categories; ties go to the
earlier candidate, the default first) is measured on the fold's questions. The result holds
each fold's chosen setting, its training score, every candidate's training score and the test
figures (recall@5/@10 and MRR overall, with adversarial questions and per category), their
mean, standard deviation, min and max over the folds, and each candidate's own per-fold
figures and won/lost question counts against the current default.

Candidates are a grid over search options (:data:`DEFAULT_GRID`: ``rrf_k``, the vector weight
and BM25 ``b`` around today's tuned defaults, with the SQL textbook values) and, for every
mechanism named (any :class:`memdb.retrieval.search.SearchOptions` field, e.g. a mechanism switch),
the
same grid with it on; the points without it, the default among them, have it off (False)
when the default options have it on (``neighbors``, ``temporal``). A mechanism's verdict
compares, fold by fold, the train-best setting with it on against the train-best setting
without it (test recall@10): it is **kept** when it wins
on every fold, or on average with no fold losing more than one point, and no category's
recall@10 (mean over the folds) is lower by more than one point.

The category rule also governs the selection itself (``category_tolerance``, one point by
default; ``None`` turns it off): on the training questions, a candidate that lowers some
category's mean recall@10 by more than the tolerance against the default (a mechanism's
candidates: against the fold's choice without it) cannot be chosen, however much it gains
overall. A mechanism no candidate of which passes runs off on that fold. ``chosen_on_all``
applies the same selection to every question: the settings to make the defaults when the
cross-validated verdict keeps them.

>>> result = run_locomo_cv("../shared/data/locomo/locomo_dev.json", folds=5)
>>> print(format_cv_table(result))
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from ..core.embeddings import Embedder, embedder_from_env
from ..retrieval.search import DEFAULT_OPTIONS, SearchOptions
from ._locomo_data import load_locomo
from ._metrics import CATEGORY_NAMES, QuestionResult, percentile
from .locomo import check_ks, collect, describe

__all__ = ["run_locomo_cv", "format_cv_table", "format_cv_markdown", "cross_validate",
           "grid_settings", "parse_mechanism", "assign_folds", "DEFAULT_GRID", "KEEP_TOLERANCE"]

# axis -> values; "weights.<route>" sets one route's weight. Today's defaults (rrf_k 5, vector
# weight 0.5, b 0.3) and the SQL textbook values (rrf_k 60, weights 1, b 0.75) are grid points.
DEFAULT_GRID: dict[str, list[Any]] = {"rrf_k": [5, 20, 60], "weights.vector": [0.25, 0.5, 1.0],
                                      "b": [0.3, 0.5, 0.75]}
KEEP_TOLERANCE = 0.01  # a kept mechanism may lose at most one point of recall@10 on a fold
_METRICS = ("recall@5", "recall@10", "mrr")


def parse_mechanism(spec: str) -> tuple[str, dict[str, dict[str, Any]]]:
    """``NAME`` or ``NAME=JSON`` -> (NAME, {"on": {...}, "off": {...}}). The value is True
    unless given; a JSON list is a grid of values (one candidate each), and a JSON object
    sets several options at once (``neighbors={"neighbors": 1, "neighbor_weight": [0.3,
    0.4]}``), its list values again a grid. Off leaves NAME as the default options have it
    (None there) or sets it to False. Every name must be a field of
    :class:`memdb.retrieval.search.SearchOptions`."""
    name, sep, raw = spec.partition("=")
    name = name.strip()
    names = [f.name for f in fields(SearchOptions)]
    try:
        value = json.loads(raw) if sep else True
    except ValueError as exc:
        raise ValueError(f"mechanism {name}: the value must be JSON ({exc})") from None
    on = value if isinstance(value, dict) else {name: value}
    for key in [name, *on]:
        if key not in names:
            raise ValueError(f"no search option {key!r} in this memdb "
                             f"(options: {', '.join(names)})")
    if isinstance(value, dict) and name not in on:
        raise ValueError(f"mechanism {name}: the JSON object must set {name!r} itself")
    for key, v in on.items():
        if isinstance(v, list) and not v:
            raise ValueError(f"mechanism {name}: {key} has an empty list of values")
    off: dict[str, Any] = {} if getattr(DEFAULT_OPTIONS, name) is None else {name: False}
    return name, {"on": on, "off": off}


def _on_points(on: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A mechanism's "on" options, list values expanded: [(label suffix, options)]."""
    grid = {k: v for k, v in on.items() if isinstance(v, list)}
    fixed = {k: v for k, v in on.items() if not isinstance(v, list)}
    out = []
    for values in itertools.product(*grid.values()):
        point = dict(zip(grid, values, strict=True))
        out.append((f"({_label(point)})" if point else "", {**fixed, **point}))
    return out


def _point(axes: Mapping[str, Any]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for axis, value in axes.items():
        if axis.startswith("weights."):
            options.setdefault("weights", {})[axis.split(".", 1)[1]] = value
        else:
            options[axis] = value
    return options


def _label(axes: Mapping[str, Any]) -> str:
    return " ".join(f"{axis.removeprefix('weights.')}={value:g}" if isinstance(value, float)
                    else f"{axis.removeprefix('weights.')}={value}"
                    for axis, value in axes.items())


def grid_settings(grid: Mapping[str, Sequence[Any]] | None = None,
                  mechanisms: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
                  ) -> tuple[dict[str, dict[str, Any]], str, dict[str, list[str]]]:
    """The candidates: ``(settings, default, mechanism_settings)``. ``settings`` maps a name
    to search settings (for :func:`memdb.evaluation.locomo.collect`), the default first:
    every grid point with all mechanisms off, then every grid point with one mechanism on;
    ``default`` names the setting equal to today's default options with every mechanism named
    switched off (a mechanism the defaults have on, such as ``neighbors`` or ``temporal``, is
    then measured against the default without it; added as "default" when no grid point is);
    ``mechanism_settings`` names each mechanism's "on" settings."""
    grid = DEFAULT_GRID if grid is None else grid
    mechanisms = mechanisms or {}
    axes = list(grid)
    points = [dict(zip(axes, values, strict=True))
              for values in itertools.product(*(list(grid[a]) for a in axes))] or [{}]
    off: dict[str, Any] = {}
    for mech in mechanisms.values():
        off.update(mech.get("off", {}))
    base: dict[str, dict[str, Any]] = {}
    for point in points:
        base[_label(point) or "default"] = {**_point(point), **off}
    today = describe(off)
    default = next((name for name, cfg in base.items() if describe(cfg) == today), None)
    if default is None:
        default = "default"
        base = {default: dict(off), **base}
    else:
        base = {default: base[default], **base}
    settings = dict(base)
    on_names: dict[str, list[str]] = {}
    for mech_name, mech in mechanisms.items():
        on_names[mech_name] = []
        for name, cfg in base.items():
            for suffix, on in _on_points(mech["on"]):
                label = f"{name} +{mech_name}{suffix}"
                settings[label] = {**cfg, **on}
                on_names[mech_name].append(label)
    return settings, default, on_names


def assign_folds(conversations: Sequence[str], folds: int) -> list[list[str]]:
    """Conversation ids (file order) dealt into ``folds`` groups: i goes to fold i mod folds."""
    if not 2 <= folds <= len(conversations):
        raise ValueError(f"folds must be between 2 and the number of conversations "
                         f"({len(conversations)})")
    return [list(conversations[f::folds]) for f in range(folds)]


def _block(results: Sequence[QuestionResult]) -> dict[str, float]:
    n = len(results)
    out = {f"recall@{k}": sum(r.recall[k] for r in results) / n if n else 0.0 for k in (5, 10)}
    out["mrr"] = sum(r.rr for r in results) / n if n else 0.0
    return out


def _figures(results: Sequence[QuestionResult]) -> dict[str, Any]:
    """recall@5/@10 and MRR: all five categories, categories 1-4, and per category."""
    return {
        "count": len(results),
        "all": _block(results),
        "overall": _block([r for r in results if 1 <= r.category <= 4]),
        "per_category": {str(c): {"count": sum(r.category == c for r in results),
                                  **_block([r for r in results if r.category == c])}
                         for c in sorted({r.category for r in results})},
    }


def _spread(values: Sequence[float]) -> dict[str, float]:
    return {"mean": statistics.fmean(values), "stdev": statistics.pstdev(values),
            "min": min(values), "max": max(values)}


def _spread_figures(per_fold: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean, stdev (population), min and max over the folds of every figure."""
    out: dict[str, Any] = {}
    for key in ("all", "overall"):
        out[key] = {m: _spread([f[key][m] for f in per_fold]) for m in _METRICS}
    cats = sorted({c for f in per_fold for c in f["per_category"]}, key=int)
    out["per_category"] = {c: {m: _spread([f["per_category"][c][m] for f in per_fold
                                           if c in f["per_category"]]) for m in _METRICS}
                           for c in cats}
    return out


def won_lost(base: Sequence[QuestionResult], other: Sequence[QuestionResult],
             k: int = 10) -> dict[str, int]:
    """Questions whose recall@k rose (won), fell (lost) or stayed (tied) from base to other."""
    won = sum(o.recall[k] > b.recall[k] + 1e-9 for b, o in zip(base, other, strict=True))
    lost = sum(o.recall[k] < b.recall[k] - 1e-9 for b, o in zip(base, other, strict=True))
    return {"won": won, "lost": lost, "tied": len(base) - won - lost}


def _category_means(res: Sequence[QuestionResult], idx: Sequence[int], k: int,
                    ) -> dict[int, float]:
    sums: dict[int, list[float]] = {}
    for i in idx:
        sums.setdefault(res[i].category, []).append(res[i].recall[k])
    return {c: sum(v) / len(v) for c, v in sums.items()}


def _eligible(results: Mapping[str, Sequence[QuestionResult]], name: str, reference: str,
              idx: Sequence[int], k: int, tolerance: float | None) -> bool:
    """No category of ``idx`` lower under ``name`` than under ``reference`` by more than
    ``tolerance`` (mean recall@k per category); ``None`` turns the check off."""
    if tolerance is None or name == reference:
        return True
    mine = _category_means(results[name], idx, k)
    ref = _category_means(results[reference], idx, k)
    return all(mine[c] >= ref[c] - tolerance - 1e-12 for c in ref)


def _select(results: Mapping[str, Sequence[QuestionResult]], names: Sequence[str],
            train: Sequence[int], k: int, *, reference: str | None = None,
            tolerance: float | None = None) -> tuple[str | None, dict[str, float]]:
    """The candidate with the best mean recall@k over ``train`` among those that lower no
    training category by more than ``tolerance`` against ``reference`` (``None`` when no
    candidate qualifies)."""
    scores = {name: sum(results[name][i].recall[k] for i in train) / len(train)
              for name in names}
    ok = [name for name in names if reference is None
          or _eligible(results, name, reference, train, k, tolerance)]
    if not ok:
        return None, scores
    best = max(ok, key=lambda name: (scores[name], -names.index(name)))
    return best, scores


def cross_validate(conversation_of: Sequence[str], results: Mapping[str, Sequence[QuestionResult]],
                   *, folds: int, default: str, base: Sequence[str],
                   mechanisms: Mapping[str, Sequence[str]] | None = None,
                   conversations: Sequence[str] | None = None, select_k: int = 10,
                   category_tolerance: float | None = KEEP_TOLERANCE) -> dict[str, Any]:
    """The fold selection over per-question results (no database): ``conversation_of[i]`` is
    question i's conversation, ``results[name][i]`` its result under setting ``name``;
    ``base`` the candidates without mechanisms, ``mechanisms`` each mechanism's "on"
    candidates. ``category_tolerance`` is the category rule (``None``: off). See the module
    docstring for the procedure."""
    mechanisms = mechanisms or {}
    conversations = list(conversations or dict.fromkeys(conversation_of))
    groups = assign_folds(conversations, folds)
    fold_of = {conv: f for f, group in enumerate(groups) for conv in group}
    base = list(base)
    metric = f"recall@{select_k}"
    fold_rows, mech_deltas = [], {m: [] for m in mechanisms}
    mech_cat_deltas: dict[str, list[dict[str, float]]] = {m: [] for m in mechanisms}
    for f, group in enumerate(groups):
        test = [i for i, c in enumerate(conversation_of) if fold_of[c] == f]
        train = [i for i, c in enumerate(conversation_of) if fold_of[c] != f]
        chosen, scores = _select(results, base, train, select_k, reference=default,
                                 tolerance=category_tolerance)
        chosen = chosen or default
        chosen_test = [results[chosen][i] for i in test]
        default_test = [results[default][i] for i in test]
        row: dict[str, Any] = {
            "fold": f, "test_conversations": group,
            "train_conversations": [c for c in conversations if fold_of[c] != f],
            "train_questions": len(train), "test_questions": len(test),
            "chosen": chosen, "train_score": scores[chosen], "train_scores": scores,
            "test": _figures(chosen_test), "default_test": _figures(default_test),
            "won_lost_vs_default": won_lost(default_test, chosen_test, select_k),
            "mechanisms": {},
        }
        for mech, on_names in mechanisms.items():
            on, on_scores = _select(results, list(on_names), train, select_k,
                                    reference=chosen, tolerance=category_tolerance)
            # no candidate with it on passes the category rule on the training folds: the
            # fold runs without it
            on_test = [results[on][i] for i in test] if on else chosen_test
            delta = _block(on_test)[metric] - _block(chosen_test)[metric]
            mech_deltas[mech].append(delta)
            on_cats, off_cats = _figures(on_test)["per_category"], \
                _figures(chosen_test)["per_category"]
            mech_cat_deltas[mech].append({c: on_cats[c][metric] - off_cats[c][metric]
                                          for c in off_cats})
            row["mechanisms"][mech] = {
                "chosen": on, "train_score": on_scores[on] if on else None,
                "test": _figures(on_test), "delta_recall@10_vs_without": delta,
                "won_lost_vs_without": won_lost(chosen_test, on_test, select_k)}
        fold_rows.append(row)
    verdicts = {}
    for mech, deltas in mech_deltas.items():
        every = all(d > 0 for d in deltas)
        average = statistics.fmean(deltas) > 0 and min(deltas) >= -KEEP_TOLERANCE
        cats = sorted({c for d in mech_cat_deltas[mech] for c in d}, key=int)
        cat_deltas = {c: statistics.fmean(d[c] for d in mech_cat_deltas[mech] if c in d)
                      for c in cats}
        no_cat_loss = category_tolerance is None or all(
            d >= -category_tolerance - 1e-12 for d in cat_deltas.values())
        wl = [r["mechanisms"][mech]["won_lost_vs_without"] for r in fold_rows]
        verdicts[mech] = {"cv": _spread_figures([r["mechanisms"][mech]["test"]
                                                 for r in fold_rows]),
                          "won_lost_vs_without": {key: sum(w[key] for w in wl)
                                                  for key in ("won", "lost", "tied")},
                          "deltas_recall@10": deltas, "mean_delta": statistics.fmean(deltas),
                          "category_deltas_recall@10": cat_deltas,
                          "wins_every_fold": every,
                          "wins_on_average_no_fold_below_minus_1pt": average,
                          "no_category_below_tolerance": no_cat_loss,
                          "keep": (every or average) and no_cat_loss}
    everyone = list(range(len(conversation_of)))
    final, _ = _select(results, base, everyone, select_k, reference=default,
                       tolerance=category_tolerance)
    final = final or default
    final_mechs = {mech: _select(results, list(on_names), everyone, select_k, reference=final,
                                 tolerance=category_tolerance)[0]
                   for mech, on_names in mechanisms.items()}
    pooled = [results[fold_rows[fold_of[c]]["chosen"]][i] for i, c in enumerate(conversation_of)]
    rule = ("" if category_tolerance is None else
            f", lowering no training category by more than {100 * category_tolerance:g} "
            "point(s) against the default (a mechanism: against the fold's choice without it)")
    return {
        "folds": len(groups), "selection": f"mean recall@{select_k} over the training "
        f"questions (all five categories){rule}; ties to the earlier candidate",
        "category_tolerance": category_tolerance,
        "default": default, "per_fold": fold_rows,
        "cv": {"mean_over_folds": _spread_figures([r["test"] for r in fold_rows]),
               "default_mean_over_folds": _spread_figures([r["default_test"] for r in fold_rows]),
               "pooled": _figures(pooled),
               "won_lost_vs_default": won_lost(results[default], pooled, select_k)},
        "mechanisms": verdicts,
        "chosen_on_all": {"setting": final, "mechanisms": final_mechs},
    }


def _setting_rows(conversation_of: Sequence[str], results: Mapping[str, Sequence[QuestionResult]],
                  groups: Sequence[Sequence[str]], default: str) -> dict[str, Any]:
    """Each candidate as a fixed setting: pooled figures, per-fold figures and their spread,
    won/lost against the default (recall@5 and @10, all questions), latency."""
    rows = {}
    for name, res in results.items():
        per_fold = [_figures([r for r, c in zip(res, conversation_of, strict=True) if c in group])
                    for group in groups]
        times = [r.ms for r in res]
        rows[name] = {"pooled": _figures(res), "per_fold": per_fold,
                      "spread": _spread_figures(per_fold),
                      "won_lost_vs_default": {"recall@10": won_lost(results[default], res, 10),
                                              "recall@5": won_lost(results[default], res, 5)},
                      "p50_ms": round(percentile(times, 50), 3),
                      "p95_ms": round(percentile(times, 95), 3)}
    return rows


def run_locomo_cv(path: str | os.PathLike[str], *, folds: int = 5, dsn: str | None = None,
                  grid: Mapping[str, Sequence[Any]] | None = None,
                  mechanisms: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
                  progress: bool = True, search_context: bool = True,
                  embedder: Embedder | None = None, vector_cache: bool = False,
                  category_tolerance: float | None = KEEP_TOLERANCE) -> dict[str, Any]:
    """Cross-validate search settings on a LoCoMo-format file; see the module docstring.

    ``grid``: axis -> values (default :data:`DEFAULT_GRID`; ``{}`` = only the default).
    ``mechanisms``: name -> {"on": settings, "off": settings} (see :func:`parse_mechanism`).
    """
    convs = load_locomo(path)
    names = [c.sample_id for c in convs]
    assign_folds(names, folds)  # fail before any work
    settings, default, on_names = grid_settings(grid, mechanisms)
    embedder = embedder or embedder_from_env()
    run = collect(convs, dsn=dsn, ks=check_ks((5, 10)), configs=settings, progress=progress,
                  search_context=search_context, embedder=embedder, vector_cache=vector_cache)
    conversation_of = [c for c, _ in run.questions]
    base = [n for n in settings if not any(n in v for v in on_names.values())]
    cv = cross_validate(conversation_of, run.results, folds=folds, default=default, base=base,
                        mechanisms=on_names, conversations=names,
                        category_tolerance=category_tolerance)
    groups = [r["test_conversations"] for r in cv["per_fold"]]
    return {
        "dataset": str(path), "questions": len(run.questions), "memories": run.memories,
        "conversations": names, **cv,
        "settings": _setting_rows(conversation_of, run.results, groups, default),
        "meta": {"search_context": search_context,
                 "embedder": getattr(embedder, "model", type(embedder).__name__),
                 "grid": dict(DEFAULT_GRID if grid is None else grid),
                 "mechanisms": dict(mechanisms or {}),
                 "configs": {name: describe(cfg) for name, cfg in settings.items()},
                 "timings": {k: round(v, 3) for k, v in run.timings.items()},
                 "vector_cache": run.vector_cache},
    }


def _pct(spread: Mapping[str, float]) -> str:
    return f"{100 * spread['mean']:.1f} ± {100 * spread['stdev']:.1f}"


def _range(spread: Mapping[str, float]) -> str:
    return f"{_pct(spread)} [{100 * spread['min']:.1f}-{100 * spread['max']:.1f}]"


def format_cv_markdown(result: dict[str, Any]) -> str:
    """The cross-validated figures as a Markdown table (README / docs): the default, the
    CV-chosen setting without mechanisms, and each mechanism as the cross-validation chose it
    fold by fold; R@5/R@10 mean ± stdev over the folds, R@10 per category (mean over the
    folds), won/lost questions (R@10) against the setting without it, the verdict."""
    cv = result["cv"]
    cats = sorted(cv["mean_over_folds"]["per_category"], key=int)
    head = (["setting", "R@5", "R@10"] + [CATEGORY_NAMES.get(int(c), c) for c in cats]
            + ["won/lost", "verdict"])
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]

    def row(name: str, block: Mapping[str, Any], wl: str, verdict: str) -> str:
        cells = [name, _pct(block["all"]["recall@5"]), _pct(block["all"]["recall@10"])]
        cells += [f"{100 * block['per_category'][c]['recall@10']['mean']:.1f}"
                  if c in block["per_category"] else "–" for c in cats]
        return "| " + " | ".join(cells + [wl, verdict]) + " |"

    dwl = cv["won_lost_vs_default"]
    lines.append(row("default", cv["default_mean_over_folds"], "–", "–"))
    lines.append(row("CV-chosen (no mechanism)", cv["mean_over_folds"],
                     f"{dwl['won']}/{dwl['lost']} vs default", "–"))
    for mech, v in result["mechanisms"].items():
        wl = v["won_lost_vs_without"]
        lines.append(row(f"+ {mech}", v["cv"], f"{wl['won']}/{wl['lost']}",
                         "keep" if v["keep"] else "drop"))
    return "\n".join(lines)


def format_cv_table(result: dict[str, Any]) -> str:
    """A plain-text report of :func:`run_locomo_cv` (percentages; mean ± stdev over folds,
    [min-max])."""
    lines = [f"LoCoMo cross-validation: {result['dataset']} ({result['questions']} questions, "
             f"{len(result['conversations'])} conversations, {result['folds']} folds)",
             f"selection: {result['selection']}; default = {result['default']}", "",
             "per fold (test = held-out conversations; all five categories)",
             f"{'fold':<5}{'test':<22}{'chosen':<30}{'train R@10':>11}{'R@5':>7}{'R@10':>7}"
             f"{'MRR':>7}{'dflt R@10':>10}{'won/lost':>10}"]
    for r in result["per_fold"]:
        t = r["test"]["all"]
        wl = r["won_lost_vs_default"]
        lines.append(f"{r['fold']:<5}{','.join(r['test_conversations'])[:21]:<22}"
                     f"{r['chosen'][:29]:<30}{100 * r['train_score']:>11.1f}"
                     f"{100 * t['recall@5']:>7.1f}{100 * t['recall@10']:>7.1f}"
                     f"{100 * t['mrr']:>7.1f}{100 * r['default_test']['all']['recall@10']:>10.1f}"
                     f"{str(wl['won']) + '/' + str(wl['lost']):>10}")
    cv, dflt = result["cv"]["mean_over_folds"], result["cv"]["default_mean_over_folds"]
    lines += ["", "cross-validated (mean ± stdev over folds [min-max])",
              f"{'':<22}{'R@5':>24}{'R@10':>24}{'MRR':>24}"]
    for label, block in (("CV-chosen, all five", cv["all"]),
                         ("CV-chosen, cat. 1-4", cv["overall"]),
                         ("default, all five", dflt["all"]),
                         ("default, cat. 1-4", dflt["overall"])):
        lines.append(f"{label:<22}" + "".join(f"{_range(block[m]):>24}" for m in _METRICS))
    lines += ["", "CV-chosen per category: R@5 / R@10 / MRR (mean ± stdev over folds)"]
    for c, block in cv["per_category"].items():
        lines.append(f"  {CATEGORY_NAMES.get(int(c), c):<13}" + "  ".join(
            _pct(block[m]) for m in _METRICS))
    wl = result["cv"]["won_lost_vs_default"]
    lines.append(f"CV-chosen vs default (recall@10, all questions): won {wl['won']}, "
                 f"lost {wl['lost']}, tied {wl['tied']}")
    cats = sorted(next(iter(result["settings"].values()))["pooled"]["per_category"], key=int)
    width = max(36, *(len(name) + 1 for name in result["settings"]))
    lines += ["", "every candidate as a fixed setting: R@10 mean ± stdev over folds, pooled "
              "R@5/R@10/MRR, R@10 per category, won/lost vs default (R@10), p95 ms",
              f"{'setting':<{width}}{'R@10 folds':>13}{'R@5':>6}{'R@10':>6}{'MRR':>6}"
              + "".join(f"{CATEGORY_NAMES.get(int(c), c)[:8]:>9}" for c in cats)
              + f"{'won/lost':>10}{'p95':>7}"]
    for name, s in result["settings"].items():
        p = s["pooled"]
        wl = s["won_lost_vs_default"]["recall@10"]
        lines.append(f"{name:<{width}}{_pct(s['spread']['all']['recall@10']):>13}"
                     f"{100 * p['all']['recall@5']:>6.1f}{100 * p['all']['recall@10']:>6.1f}"
                     f"{100 * p['all']['mrr']:>6.1f}"
                     + "".join(f"{100 * p['per_category'][c]['recall@10']:>9.1f}" for c in cats)
                     + f"{str(wl['won']) + '/' + str(wl['lost']):>10}{s['p95_ms']:>7.1f}")
    if result["mechanisms"]:
        lines += ["", "mechanisms (test R@10 of the train-best with it on minus without, points "
                  "per fold): keep = wins every fold, or on average with no fold below -1"]
        for mech, v in result["mechanisms"].items():
            deltas = " ".join(f"{100 * d:+.1f}" for d in v["deltas_recall@10"])
            cats = " ".join(f"{CATEGORY_NAMES.get(int(c), c)[:8]} {100 * d:+.1f}"
                            for c, d in v["category_deltas_recall@10"].items())
            lines.append(f"  {mech:<14}{deltas}  mean {100 * v['mean_delta']:+.1f}  "
                         f"{'KEEP' if v['keep'] else 'drop'}")
            lines.append(f"  {'':<14}per category (mean over folds): {cats}")
    final = result["chosen_on_all"]
    lines += ["", f"chosen on all {len(result['conversations'])} conversations by the same "
              f"rule: {final['setting']}"]
    lines += [f"  with {mech}: {name or 'no candidate passes the category rule'}"
              for mech, name in final["mechanisms"].items()]
    t = result["meta"]["timings"]
    lines += ["", "timings: " + ", ".join(f"{k} {v}" for k, v in t.items())]
    return "\n".join(lines)
