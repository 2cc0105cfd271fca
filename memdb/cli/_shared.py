"""Options shared by several commands: filters, metadata JSON, NAME=NUMBER pairs."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import click

from ..core.errors import InvalidInput
from ..core.models import Category, Kind, Scope, SourceType
from ._app import options


class FiniteFloat(click.ParamType):
    """A float option that refuses nan, inf and numbers too large for a float (a usage
    error, exit 2); memdb itself checks each value's range."""

    name = "float"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


FINITE = FiniteFloat()


def values(enum_type: type) -> str:
    return ", ".join(m.value for m in enum_type)



def parse_metadata(text: str | None) -> dict[str, Any] | None:
    """``--metadata`` as a dict; InvalidInput (exit 1) when it is not a JSON object."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"--metadata is not valid JSON ({exc.msg} at column {exc.colno}): "
                           f"{text!r}") from None
    if not isinstance(value, dict):
        raise InvalidInput('--metadata must be a JSON object, such as \'{"lang": "zh"}\'')
    return value


_FILTERS: tuple[tuple[list[str], dict[str, Any]], ...] = (
    (["--subject"], {"help": "Only this subject (whose memory: a user or an agent)."}),
    (["--kind"], {"multiple": True, "help": f"Only these kinds (repeatable): {values(Kind)}."}),
    (["--category"], {"multiple": True,
                      "help": f"Only these categories (repeatable): {values(Category)}."}),
    (["--scope"], {"help": f"Only this scope: {values(Scope)}."}),
    (["--agent"], {"help": "Only memories written by this agent."}),
    (["--project-id"], {"help": "Only this project's memories."}),
    (["--session-id"], {"help": "Only this session's memories."}),
    (["--source-type"], {"multiple": True,
                         "help": f"Only these provenances (repeatable): {values(SourceType)}."}),
    (["--tag", "tags"], {"multiple": True, "help": "Only memories carrying this tag "
                         "(repeatable: all are required)."}),
    (["--any-tag", "tags_any"], {"multiple": True,
                                 "help": "Only memories carrying at least one of these tags."}),
    (["--uri-prefix", "uri_prefix"], {"multiple": True, "metavar": "PREFIX",
                                      "help": "Only memories whose URI starts with this "
                                              "(repeatable: any), e.g. mem://alice/preferences/."}),
    (["--status"], {"multiple": True, "type": click.Choice(["active", "hypothesis"]),
                    "help": "Only memories of this status (repeatable): active, or hypothesis "
                            "(a low-confidence inference)."}),
    (["--min-importance"], {"type": FINITE, "help": "Only importance >= this (0 to 1)."}),
    (["--metadata"], {"help": "Only memories whose metadata contains this JSON object."}),
    (["--created-after"], {"help": "Only memories created after this ISO 8601 time."}),
    (["--created-before"], {"help": "Only memories created before this ISO 8601 time."}),
    (["--as-of"], {"help": "See the versions that were current at this ISO 8601 time."}),
    (["--include-expired"], {"is_flag": True, "help": "Also show expired memories."}),
)
filter_options = options(*_FILTERS)


def filters_but(*names: str) -> Any:
    """The filter options but ``names`` (a command declaring those itself: memdb.core.ops)."""
    return options(*(spec for spec in _FILTERS if _dest(spec[0]) not in names))


def _dest(flags: list[str]) -> str:
    """The parameter an option's names set (click's rule: a name without dashes, else the
    first flag's)."""
    named = [n for n in flags if not n.startswith("-")]
    return named[0] if named else flags[0].lstrip("-").replace("-", "_")


def filter_args(opts: dict[str, Any]) -> dict[str, Any]:
    """The filter keywords of MemoryStore.list/search from the parsed filter options."""
    out = {k: (list(val) if isinstance(val, tuple) else val) for k, val in opts.items()
           if val is not None and val != () and val is not False}
    if "metadata" in out:
        out["metadata"] = parse_metadata(out["metadata"])
    return out



def pairs(values: Sequence[str], option: str) -> dict[str, float] | None:
    """``NAME=NUMBER`` options (``--weight bm25=0.5``) as a dict; InvalidInput otherwise."""
    out: dict[str, float] = {}
    for item in values:
        name, sep, number = item.partition("=")
        try:
            out[name.strip()] = float(number)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise InvalidInput(f"{option} takes NAME=NUMBER, got {item!r}")
    return out or None


