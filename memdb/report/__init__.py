"""``memdb report``: a self-contained HTML report (and PNG images) of a tenant's or one
subject's memories: kinds and categories over time, age and hotness, the expiry horizon,
supersessions, retrieval health from traces and, given an evaluation JSON, recall by category
and route. Needs the ``report`` extra (matplotlib): ``pip install 'memdb[report]'``.

>>> result = write_report(store, "report/")                        # doctest: +SKIP
>>> result.html                                                    # doctest: +SKIP
PosixPath('report/report.html')
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import InvalidInput
from ._data import collect, load_eval

__all__ = ["ReportResult", "write_report", "collect", "load_eval"]


@dataclass(frozen=True)
class ReportResult:
    """Where the report went: the HTML file, the PNGs beside it, the JSON of its figures
    (``data``, also written as report.json) and how long it took."""

    html: Path
    images: dict[str, Path]
    data: dict[str, Any] = field(repr=False)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"html": str(self.html), "images": {k: str(p) for k, p in self.images.items()},
                "json": str(self.html.with_name("report.json")),
                "seconds": round(self.seconds, 3),
                "memories": self.data["totals"]["current"],
                "searches": self.data["traces"]["searches"]}


def write_report(store: Any, out_dir: str | Path, subject: str | None = None,
                 eval_path: str | Path | None = None) -> ReportResult:
    """Write report.html, report.json and one PNG per figure into ``out_dir`` (created if
    missing) for the store's tenant, or for one ``subject``. ``eval_path``: the JSON of
    ``memdb eval locomo --json`` adds recall by category and route.
    :class:`~memdb.core.errors.MissingDependency` without matplotlib."""
    from . import _html, _plots

    started = time.perf_counter()
    _plots._pyplot()  # fail before touching the database or the disk
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InvalidInput(f"the report's folder is a file: {str(out)!r}")
    ev = load_eval(eval_path) if eval_path is not None else None
    data = collect(store, subject)
    if ev is not None:
        data["eval"] = ev
    pngs = _plots.figures(data)
    out.mkdir(parents=True, exist_ok=True)
    images = {}
    for name, png in pngs.items():
        images[name] = out / f"{name}.png"
        images[name].write_bytes(png)
    html = out / "report.html"
    html.write_text(_html.render(data, pngs), encoding="utf-8")
    (out / "report.json").write_text(json.dumps(data, ensure_ascii=False, indent=2),
                                     encoding="utf-8")
    return ReportResult(html=html, images=images, data=data,
                        seconds=time.perf_counter() - started)
