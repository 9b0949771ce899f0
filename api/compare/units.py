"""The unit of a swept or compared parameter (`links.access1.rate` is in bit/s), read from the scenario
language's own types: a field typed Duration, ByteSize, Bits or Rate (engine.units) holds
seconds, bytes, bits or bit/s once parsed, as the runs' stored scenarios hold it. So a
table's parameter columns can say their unit without a list kept by hand."""

from __future__ import annotations

import types
from functools import cache
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, WithJsonSchema

from engine import Scenario
from engine.units import Bits, ByteSize, Duration, Rate


def _output(alias: Any) -> WithJsonSchema:
    """The serialization schema a unit type carries: what marks a field as being of it."""
    return next(
        m for m in alias.__metadata__ if isinstance(m, WithJsonSchema) and m.mode == "serialization"
    )


_UNITS = [(_output(Duration), "s"), (_output(ByteSize), "bytes"), (_output(Bits), "bit")]
_UNITS.append((_output(Rate), "bit/s"))


def _unit(metadata: list[Any]) -> str | None:
    for m in metadata:
        for marker, unit in _UNITS:
            if m == marker:
                return unit
    return None


def _walk(tp: Any, metadata: list[Any], parts: list[str]) -> str | None:
    if get_origin(tp) is Annotated:
        inner, *more = get_args(tp)
        return _walk(inner, [*metadata, *more], parts)
    if not parts and (found := _unit(metadata)) is not None:
        return found
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):  # an optional value, or a kind of flow
        units = (_walk(arg, metadata, parts) for arg in get_args(tp))
        return next((u for u in units if u is not None), None)
    if not parts:
        return None
    if origin is list:  # items are named by their id in a path
        return _walk(get_args(tp)[0], [], parts[1:])
    if origin is dict:
        return _walk(get_args(tp)[1], [], parts[1:])
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        field = tp.model_fields.get(parts[0])
        if field is None:
            return None
        return _walk(field.annotation, list(field.metadata), parts[1:])
    return None


@cache
def unit_of(path: str) -> str | None:
    """The base unit of the scenario value at dotted `path` (list items by their id), or
    None where it has none (a count, a name, a flag) or the path is not a scenario's."""
    return _walk(Scenario, [], path.split("."))
