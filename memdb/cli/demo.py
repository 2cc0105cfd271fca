"""``memdb demo``: a tour with no setup, on the embedded server (or --dsn)."""

from __future__ import annotations

import click

from ._app import State, cli, emit_json, json_option
from ._format import print_hits


@cli.command()
@json_option
@click.pass_obj
def demo(state: State, as_json: bool) -> None:
    """Try memdb with no setup: store a dozen memories, link them into the entity
    graph and search them.

    Uses the embedded PostgreSQL (or --dsn); running it again adds nothing new.
    """
    from .. import demo as demo_module

    report = demo_module.run(state.store(), opened_ms=state.opened_ms)
    report["where"] = _where(state)
    if as_json:
        emit_json(report)
        return
    click.echo(f"memdb demo: {report['where']}, tenant {report['tenant']!r}, "
               f"schema revision {report['revision']}")
    click.echo(f"{report['memories']} memories: {report['new']} new, "
               f"{report['already_stored']} already stored")
    g = report["graph"]
    click.echo(f"entity graph: {g['linked']} memories linked, {g['mentions']} mentions, "
               f"{g['relations']} relations (memdb ui: Graph page)")
    for n, s in enumerate(report["searches"], start=1):
        conditions = ", ".join(
            f"{k}={','.join(v) if isinstance(v, list) else v}" for k, v in s["filter"].items()
        ) or "no filter"
        click.echo(f"\nsearch {n}: {s['query']!r} (k={s['k']}, {conditions})")
        print_hits(s["hits"])
    t = report["timings_ms"]
    click.echo(f"\ntimings: server start + migrate {t['start_and_migrate']:.0f} ms, "
               f"embedder load {t['embedder_load']:.0f} ms, {report['memories']} writes "
               f"{t['writes']:.0f} ms, graph link {t['graph_link']:.0f} ms, "
               f"{len(report['searches'])} searches {t['searches']:.0f} ms")


def _where(state: State) -> str:
    """Where the data lives, without credentials."""
    if state.dsn is None:
        from ..core.embedded import default_home

        return f"embedded PostgreSQL in {default_home()}"
    from psycopg.conninfo import conninfo_to_dict

    p = conninfo_to_dict(state.dsn)
    return f"PostgreSQL {p.get('host', 'localhost')}:{p.get('port', 5432)}/{p.get('dbname', '')}"


