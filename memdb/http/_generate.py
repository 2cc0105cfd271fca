"""Request models and a route's call arguments generated from a declared operation (memdb.core.ops).

:func:`request_model` makes a pydantic model (``pydantic.create_model``) with one field per
declared parameter: its type, its default, and its help and range in the OpenAPI document, laid
over a base class holding the fields the route offers beyond the declaration. :func:`arguments`
maps a request to the operation's keyword arguments, checked by the declaration (``Operation
.check``: ``InvalidInput``, 400, as at every door; pydantic's own 422 is only for a value of the
wrong type or an unknown field).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..core.ops import Operation, Param

__all__ = ["Body", "declared", "request_model", "arguments", "offered"]

_TYPES: dict[str, Any] = {"str": str, "uuid": str, "int": int, "float": float, "bool": bool,
                          "str_list": list[str], "object": dict[str, Any]}


class Body(BaseModel):
    """A request body (or query): unknown fields are refused (422)."""

    model_config = ConfigDict(extra="forbid")


def offered(op: Operation, skip: tuple[str, ...] = ()) -> tuple[Param, ...]:
    """The declared parameters a route offers: all but ``skip`` (each one the route takes in
    its path, or in a broader form of its own)."""
    unknown = set(skip) - {p.name for p in op.params}
    if unknown:
        raise KeyError(f"{op.name} declares no {sorted(unknown)}")
    return tuple(p for p in op.params if p.name not in skip)


def declared(param: Param) -> Any:
    """The pydantic field of a declared parameter: its default, and its range, length, choices
    and help in the OpenAPI document, so it says what the other doors say. The range is checked
    by the declaration (:func:`arguments`), not by pydantic."""
    schema = {key: value for key, value in param.schema().items()
              if key in ("minimum", "exclusiveMinimum", "maximum", "maxLength", "minLength",
                         "enum", "maxItems", "pattern")}
    return Field(default=... if param.required else param.default,
                 description=param.describe(), json_schema_extra=schema or None)


def request_model(op: Operation, name: str, *, base: type[BaseModel] = Body,
                  skip: tuple[str, ...] = ()) -> type[BaseModel]:
    """The model ``name``: ``base``'s fields, then ``op``'s declared parameters but ``skip``."""
    fields: dict[str, Any] = {}
    for param in offered(op, skip):
        kind = _TYPES[param.type]
        fields[param.name] = (kind if param.required else kind | None, declared(param))
    model: type[BaseModel] = create_model(name, __base__=base, __doc__=op.summary,
                                          **fields)
    return model


def arguments(op: Operation, body: BaseModel | None = None, *, skip: tuple[str, ...] = (),
              defaults: bool = False, **given: Any) -> dict[str, Any]:
    """The declared values of ``body`` (and ``given``: the path's) that are set, checked by the
    declaration; ``defaults``: with the declared defaults of those not set."""
    names = tuple(p.name for p in offered(op, skip))
    values = {name: getattr(body, name) for name in names if body is not None
              and name not in given}
    values.update(given)
    return op.check({k: v for k, v in values.items() if v is not None}, names,
                    defaults=defaults)
