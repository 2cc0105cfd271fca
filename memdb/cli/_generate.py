"""A command's parameters generated from a declared operation (memdb.core.ops).

``@declared(op)`` adds one click argument or option per declared parameter: its flags, type,
default and help come from the :class:`~memdb.core.ops.Param`, and its value is checked by
:meth:`Param.check <memdb.core.ops.Param.check>` while the command line is parsed (a value out of
range is ``InvalidInput``, exit 1, as at every other door; a value of the wrong type is a usage
error, exit 2). Options a command offers beyond the declaration stay beside it, written by hand.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any

import click

from ..core.errors import InvalidInput
from ..core.ops import Operation, Param
from ._shared import FINITE

__all__ = ["declared", "declared_options", "offered", "option_help"]


def offered(op: Operation, skip: tuple[str, ...] = ()) -> tuple[Param, ...]:
    """The declared parameters a command offers: all but ``skip`` (each a parameter the
    command offers in a broader form of its own)."""
    unknown = set(skip) - {p.name for p in op.params}
    if unknown:
        raise KeyError(f"{op.name} declares no {sorted(unknown)}")
    return tuple(p for p in op.params if p.name not in skip)


def option_help(param: Param) -> str:
    """The declared help with its default, then its range or choices."""
    text = param.describe()
    if param.type == "str_list":
        text += f" Repeatable, at most {param.max_items}." if param.max_items else " Repeatable."
    if param.choices:
        return f"{text} One of: {', '.join(param.choices)}."
    if param.minimum is not None or param.maximum is not None:
        return f"{text} Range {param.range_text()}."
    return text


def declared(op: Operation, *, skip: tuple[str, ...] = ()) -> Callable[[Any], Any]:
    """A decorator adding ``op``'s parameters (but ``skip``) to a click command: positional
    arguments for those declared ``argument``, options for the rest, in declaration order.
    The arguments' help is appended to the command's help text (click shows none for them)."""
    params = offered(op, skip)

    def apply(f: Any) -> Any:
        for param in reversed(params):
            f = _argument(param)(f) if param.argument else _option(param)(f)
        lines = [f"{_metavar(p)}: {p.describe()}" for p in params if p.argument]
        if lines and f.__doc__ is not None:
            f.__doc__ = inspect.cleandoc(f.__doc__) + "\n\n" + "\n\n".join(lines)
        return f
    return apply


def _check(param: Param) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(ctx: click.Context, _: click.Parameter, value: Any) -> Any:
        if param.type == "str_list":
            value = list(value) if value else None
        elif param.type == "object" and value is not None:
            value = _json(param, value)
        return param.check(value)
    return callback


def _json(param: Param, text: str) -> Any:
    """An object parameter's value: the JSON text given on the command line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{param.cli_flags()[0]} is not valid JSON ({exc.msg})") from None


def _metavar(param: Param) -> str:
    return param.metavar or param.name.upper()


def _argument(param: Param) -> Callable[[Any], Any]:
    """A positional argument; a list (``str_list``) takes every remaining word."""
    return click.argument(param.name, metavar=_metavar(param), required=param.required,
                          nargs=-1 if param.type == "str_list" else 1,
                          type=_type(param), callback=_check(param))


def _option(param: Param) -> Callable[[Any], Any]:
    if param.type == "bool":
        return click.option(*param.cli_flags(), param.name, is_flag=True,
                            default=bool(param.default), help=option_help(param),
                            callback=_check(param))
    return click.option(*param.cli_flags(), param.name, type=_type(param),
                        multiple=param.type == "str_list", metavar=param.metavar,
                        default=None if param.type == "str_list" or param.required
                        else param.default,
                        help=option_help(param), callback=_check(param))


def _type(param: Param) -> Any:
    return {"int": click.INT, "float": FINITE}.get(param.type, click.STRING)


def declared_options(params: tuple[Param, ...]) -> Callable[[Any], Any]:
    """Options from declared parameters whose values another check owns (the search options:
    :class:`memdb.retrieval.search.SearchOptions`): the declared flag, type, metavar and help; a
    boolean
    is a flag. Unset, an option is None (the default applies)."""
    def apply(f: Any) -> Any:
        for p in reversed(params):
            if p.type == "bool":
                f = click.option(*p.cli_flags(), p.name, is_flag=True, help=option_help(p))(f)
            else:
                f = click.option(*p.cli_flags(), p.name, type=_type(p), metavar=p.metavar,
                                 default=None, help=option_help(p))(f)
        return f
    return apply
