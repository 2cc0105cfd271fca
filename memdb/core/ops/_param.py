"""One parameter of an operation, declared once: its type, range, default and help.

The doors read it: its JSON Schema (MCP tools, the OpenAI tool), its pydantic field (HTTP
request models and OpenAPI), its click option (CLI), its row in the docs' reference tables,
and :meth:`Param.check`, the one place its value is validated (``InvalidInput`` naming it).
"""

from __future__ import annotations

import math
import re
import uuid
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput

__all__ = ["Param", "REQUIRED"]

REQUIRED: Any = object()  # the default of a parameter that must be given
_TYPES = ("str", "int", "float", "bool", "str_list", "object", "uuid")


@dataclass(frozen=True)
class Param:
    """``type``: str | int | float | bool | str_list | object | uuid. ``minimum`` and
    ``maximum`` bound numbers (inclusive; ``exclusive_minimum``: the minimum itself is out,
    JSON Schema's ``exclusiveMinimum``); ``min_length``/``max_length`` strings;
    ``max_items``/``item_max_length`` lists; ``choices`` enumerate allowed strings (each
    item's, for a list). ``flags``: the CLI's option names (default ``--name``, with
    underscores as dashes); ``argument``: a CLI positional argument instead. ``metavar``: the
    CLI's placeholder."""

    name: str
    type: str
    help: str
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    min_length: int | None = None
    max_length: int | None = None
    choices: tuple[str, ...] | None = None
    max_items: int | None = None
    item_max_length: int | None = None
    pattern: str | None = None
    flags: tuple[str, ...] = ()
    argument: bool = False
    metavar: str | None = None

    def __post_init__(self) -> None:
        if self.type not in _TYPES:
            raise ValueError(f"unknown parameter type {self.type!r}")
        if self.exclusive_minimum and self.minimum is None:
            raise ValueError(f"{self.name}: an exclusive minimum needs a minimum")

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    # -- JSON Schema ----------------------------------------------------------------------
    def schema(self) -> dict[str, Any]:
        """The parameter's JSON Schema (draft 2020-12; the subset function-calling APIs take)."""
        out: dict[str, Any]
        if self.type == "str_list":
            item: dict[str, Any] = {"type": "string"}
            if self.choices:
                item["enum"] = list(self.choices)
            if self.item_max_length is not None:
                item["maxLength"] = self.item_max_length
            out = {"type": "array", "items": item}
            if self.max_items is not None:
                out["maxItems"] = self.max_items
        else:
            json_type = {"str": "string", "uuid": "string", "int": "integer", "float": "number",
                         "bool": "boolean", "object": "object"}[self.type]
            out = {"type": json_type}
            if self.type == "uuid":
                out["format"] = "uuid"
            if self.choices:
                out["enum"] = list(self.choices)
            if self.min_length is not None:
                out["minLength"] = self.min_length
            if self.max_length is not None:
                out["maxLength"] = self.max_length
            if self.pattern is not None:
                out["pattern"] = self.pattern
            if self.minimum is not None:
                out["exclusiveMinimum" if self.exclusive_minimum else "minimum"] = self.minimum
            if self.maximum is not None:
                out["maximum"] = self.maximum
        out["description"] = self.describe()
        return out

    def describe(self) -> str:
        """The help text with the default when there is one (what every door shows)."""
        if self.required or self.default is None or self.type == "bool" and not self.default:
            return self.help
        body, stop = (self.help[:-1], ".") if self.help.endswith(".") else (self.help, "")
        if body.endswith(")"):
            return f"{body[:-1]}; default {self.default}){stop}"
        return f"{body} (default {self.default}){stop}"

    def range_text(self) -> str:
        """The range in words for the docs: ``1-1000``, ``at most 4000 characters``..."""
        parts = []
        if self.minimum is not None or self.maximum is not None:
            low = "" if self.minimum is None else _num(self.minimum)
            high = "" if self.maximum is None else _num(self.maximum)
            if self.exclusive_minimum:
                parts.append(f"> {low}" + (f", ≤ {high}" if high else ""))
            else:
                parts.append(f"{low}–{high}" if low and high
                             else (f"≥ {low}" if low else f"≤ {high}"))
        if self.max_length is not None:
            parts.append(f"≤ {self.max_length} characters")
        if self.max_items is not None:
            parts.append(f"≤ {self.max_items} items")
        if self.choices:
            parts.append(", ".join(self.choices))
        return "; ".join(parts)

    # -- validation -----------------------------------------------------------------------
    def check(self, value: Any) -> Any:
        """``value`` if it fits the declaration (ints for floats become floats), else
        InvalidInput naming the parameter; never echoes more than a short, quoted prefix."""
        if value is None:
            if self.required:
                raise InvalidInput(f"{self.name} is required")
            return None
        kind = self.type
        if kind == "bool":
            if not isinstance(value, bool):
                raise InvalidInput(f"{self.name} must be true or false")
            return value
        if kind in ("int", "float"):
            return self._number(value)
        if kind == "object":
            if not isinstance(value, dict):
                raise InvalidInput(f"{self.name} must be an object")
            return value
        if kind == "str_list":
            if isinstance(value, str) or not isinstance(value, (list, tuple)):
                raise InvalidInput(f"{self.name} must be a list of strings")
            if self.max_items is not None and len(value) > self.max_items:
                raise InvalidInput(f"{self.name} takes at most {self.max_items} items")
            return [self._string(item, item_of=True) for item in value]
        return self._string(value)

    def _number(self, value: Any) -> int | float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidInput(f"{self.name} must be a number")
        if self.type == "int" and not isinstance(value, int):
            if not (math.isfinite(value) and value == int(value)):
                raise InvalidInput(f"{self.name} must be a whole number")
            value = int(value)
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidInput(f"{self.name} must be a finite number")
        low, high = self.minimum, self.maximum
        below = low is not None and (value <= low if self.exclusive_minimum else value < low)
        if below or (high is not None and value > high):
            span = self.range_text() or "its range"
            raise InvalidInput(f"{self.name} must be within {span}, got {_num(value)[:40]}")
        return float(value) if self.type == "float" else value

    def _string(self, value: Any, *, item_of: bool = False) -> str:
        what = f"each item of {self.name}" if item_of else self.name
        if not isinstance(value, str):
            raise InvalidInput(f"{what} must be a string")
        if "\x00" in value:
            raise InvalidInput(f"{what} contains a NUL byte")
        limit = self.item_max_length if item_of else self.max_length
        if limit is not None and len(value) > limit:
            raise InvalidInput(f"{what} is longer than {limit} characters")
        if not item_of and self.min_length and len(value.strip()) < self.min_length:
            raise InvalidInput(f"{what} is empty")
        if self.choices and value not in self.choices:
            raise InvalidInput(f"{what} must be one of {', '.join(self.choices)}")
        if self.type == "uuid":
            try:
                uuid.UUID(value)
            except ValueError:
                raise InvalidInput(f"{what} must be a UUID") from None
        if self.pattern is not None and not re.search(self.pattern, value):
            raise InvalidInput(f"{what} must match {self.pattern}")
        return value

    # -- CLI ------------------------------------------------------------------------------
    def cli_flags(self) -> tuple[str, ...]:
        return self.flags or (f"--{self.name.replace('_', '-')}",)


def _num(value: float) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)
