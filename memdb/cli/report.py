"""``memdb report``: a self-contained HTML report with plots (the ``report`` extra)."""

from __future__ import annotations

import click

from ._app import State, cli, emit_json, json_option


@cli.command("report")
@click.option("--subject", help="Only this subject's memories and searches (default: the "
              "whole tenant, or the global --subject).")
@click.option("--out", "out_dir", default="memdb-report", show_default=True,
              type=click.Path(file_okay=False), help="Folder for report.html, report.json and "
              "the PNG images (created if missing).")
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

    result = write_report(state.store(), out_dir, subject=subject, eval_path=eval_path)
    if as_json:
        emit_json(result.to_json())
        return
    click.echo(f"{result.html} ({len(result.images)} images, "
               f"{result.data['totals']['current']} memories, "
               f"{result.data['traces']['searches']} searches, {result.seconds:.2f} s)")
