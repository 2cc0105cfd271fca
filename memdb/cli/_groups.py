"""The command groups that mirror the store's families (``memdb documents ...``, ``memdb graph
...``, ``memdb maintenance ...``, ``memdb traces ...``, ``memdb subject ...``; ``memdb session``
and ``memdb review`` live with their commands), and the old flat commands kept for one release
as hidden aliases that say where the command went.
"""

from __future__ import annotations

from typing import Any

import click

from ._app import cli

__all__ = ["documents", "graph", "maintenance", "traces", "subject", "legacy", "LegacyGroup"]


def _deprecated(new: str) -> None:
    click.echo(f"deprecated: use `memdb {new}`", err=True)


def legacy(old: str, new: str, command: click.Command) -> click.Command:
    """Register ``command`` also as the hidden top-level command ``old``, which prints
    "deprecated: use `memdb NEW`" on stderr and then runs it (same options, same output)."""
    target = command.callback
    assert target is not None

    def callback(*args: Any, **kwargs: Any) -> Any:
        _deprecated(new)
        return target(*args, **kwargs)

    alias = click.Command(old, params=list(command.params), callback=callback,
                          help=f"Deprecated: use `memdb {new}`.", hidden=True,
                          context_settings=dict(command.context_settings))
    cli.add_command(alias)
    return alias


class LegacyGroup(click.Group):
    """A group whose name was a command until 0.2 (``memdb documents [OPTIONS]``, ``memdb
    graph ENTITY``): arguments that name no subcommand run ``legacy`` (deprecated)."""

    def __init__(self, *args: Any, legacy: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.legacy = legacy

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands
                        and args[0] not in ctx.help_option_names):
            _deprecated(f"{self.name} {self.legacy}")
            args = [self.legacy, *args]
        return super().parse_args(ctx, args)


@cli.group(cls=LegacyGroup, legacy="list")
def documents() -> None:
    """Documents: ingest files and folders, list, remove and search them, and answer
    questions from them with citations (store.documents)."""


@cli.group(cls=LegacyGroup, legacy="neighbors")
def graph() -> None:
    """The entity graph: link memories' entities, an entity's neighbours, graph search
    (store.graph)."""


@cli.group()
def maintenance() -> None:
    """Maintenance of this tenant: expiry, forgetting, hypothesis decay, re-embedding,
    sedimentation, re-classification (store.maintenance)."""


@cli.group()
def traces() -> None:
    """Recall traces: list, show one, statistics, retention and erasure (store.traces)."""


@cli.group()
def subject() -> None:
    """One subject's memories as a whole: summary, export, erasure (store.subjects)."""
