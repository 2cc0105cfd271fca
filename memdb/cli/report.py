"""``memdb report``: a self-contained HTML report with plots (the ``report`` extra)."""

from __future__ import annotations

import json

import click

from ._app import State, cli, json_option
from ._output import to_stdout, written


@cli.command("report")
@click.option("--subject", help="Only this subject's memories and searches (default: the "
              "whole tenant, or the global --subject).")
@click.option("--out", "out_dir", default="memdb-report", show_default=True,
              type=click.Path(file_okay=False, allow_dash=True),
              help="Folder for report.html, report.json and the PNG images (created if "
              "missing); \"-\": report.html (images inlined) on standard output alone.")
@click.option("--eval", "eval_path", type=click.Path(dir_okay=False), metavar="FILE",
              help="The JSON of `memdb eval locomo --json FILE`: adds recall by category and "
              "route.")
@json_option
@click.pass_obj
def report(state: State, subject: str | None, out_dir: str, eval_path: str | None,
           as_json: bool) -> None:
    """Write an HTML report (images inlined, PNGs beside it) of the tenant's or a subject's
    memories: kinds and categories per week, age and hotness, the expiry horizon,
    supersessions, retrieval health from traces. Needs `pip install 'memdb[report]'`."""
    from ..report import write_report

    with written(out_dir, "report", member="report.html") as folder:
        result = write_report(state.store(), folder, subject=subject, eval_path=eval_path)
    err = to_stdout(out_dir)
    if as_json:
        click.echo(json.dumps(result.to_json(), ensure_ascii=False, indent=2, default=str),
                   err=err)
        return
    click.echo(f"{'report.html on standard output' if err else result.html} "
               f"({len(result.images)} images, "
               f"{result.data['totals']['current']} memories, "
               f"{result.data['traces']['searches']} searches, {result.seconds:.2f} s)", err=err)
