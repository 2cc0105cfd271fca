"""An operation, declared once: name, summary, parameters, the scope it reads, its result and
its errors. The doors (CLI, HTTP, MCP, the OpenAI tool, the docs) are generated from it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput
from ._param import Param

__all__ = ["Operation", "SCOPES"]

# What an operation reads or writes when the caller names no subject:
# "subject": one subject (the store's, or the subject argument, else "default");
# "tenant": the whole tenant (or the store's subject when the store is confined to one);
# "memory": the memory the id or URI names (within the caller's tenant and subject).
SCOPES = ("subject", "tenant", "memory")


@dataclass(frozen=True)
class Operation:
    """``doors``: the name of the operation at each door that has it (``cli``, ``http`` as
    ``"METHOD /path"``, ``mcp``, ``tool``: the memory tool's action)."""

    name: str
    summary: str
    params: tuple[Param, ...]
    scope: str
    result: str
    errors: tuple[str, ...]
    doors: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"unknown scope {self.scope!r}")
        names = [p.name for p in self.params]
        if len(names) != len(set(names)):
            raise ValueError(f"{self.name}: a parameter is declared twice")

    def door(self, door: str) -> str | None:
        return dict(self.doors).get(door)

    def param(self, name: str) -> Param:
        for param in self.params:
            if param.name == name:
                return param
        raise KeyError(name)

    def has(self, name: str) -> bool:
        return any(p.name == name for p in self.params)

    def select(self, names: tuple[str, ...] | None = None) -> tuple[Param, ...]:
        """The parameters ``names`` (in declaration order), or all of them."""
        if names is None:
            return self.params
        unknown = set(names) - {p.name for p in self.params}
        if unknown:
            raise KeyError(f"{self.name} declares no {sorted(unknown)}")
        return tuple(p for p in self.params if p.name in names)

    # -- JSON Schema ----------------------------------------------------------------------
    def schema(self, names: tuple[str, ...] | None = None) -> dict[str, Any]:
        """The arguments' JSON Schema (a fresh object): ``names`` picks the parameters a door
        offers (default all); required ones are listed; unknown ones are refused."""
        chosen = self.select(names)
        return {"type": "object", "properties": {p.name: p.schema() for p in chosen},
                "required": [p.name for p in chosen if p.required],
                "additionalProperties": False}

    # -- validation -----------------------------------------------------------------------
    def check(self, args: dict[str, Any], names: tuple[str, ...] | None = None,
              *, defaults: bool = True) -> dict[str, Any]:
        """The arguments checked against the declaration (the one place every door's values
        are validated): unknown ones, missing required ones and values out of range are
        InvalidInput naming the parameter. ``defaults``: fill in the declared defaults."""
        if not isinstance(args, dict):
            raise InvalidInput("the arguments must be an object")
        chosen = self.select(names)
        known = {p.name for p in chosen}
        extra = sorted(str(k)[:40] for k in args if k not in known)
        if extra:
            raise InvalidInput(f"{self.name} does not take {', '.join(extra)}")
        out: dict[str, Any] = {}
        for param in chosen:
            value = args.get(param.name)
            if value is None:
                if param.required:
                    raise InvalidInput(f"{self.name} needs {param.name}")
                if defaults and param.default is not None:
                    out[param.name] = param.default
                continue
            out[param.name] = param.check(value)
        return out
