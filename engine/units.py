"""Units of the scenario language: parsing durations, sizes and rates into SI numbers.

Inputs are a number in SI base units (seconds, bytes, bit/s) or a string with a unit
("5ms", "64KiB", "1.544Mbps", "10 Mbit/s") or, for rates, a named line rate ("T1").
Outputs are always plain numbers. The pydantic types `Duration`, `ByteSize` and `Rate`
wrap the parsers for the scenario models and show `number | string` in OpenAPI.

pint does the unit arithmetic in a private, minimal registry (only time and information
units, so "b" is a bit and not a barn, "K" is kilo and not kelvin). pint is imported on the
first string that carries a unit: plain numbers never pay its import time.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping
from decimal import Decimal
from functools import lru_cache
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BeforeValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

if TYPE_CHECKING:
    import pint

__all__ = [
    "LINE_RATES",
    "Bits",
    "ByteSize",
    "Duration",
    "Rate",
    "UnitError",
    "format_duration",
    "format_rate",
    "format_size",
    "parse_bits",
    "parse_duration",
    "parse_rate",
    "parse_size",
]

Kind = Literal["duration", "size", "rate"]


class UnitError(ValueError):
    """A value that is not a valid duration, size or rate."""


# Named line rates in bit/s. Our own table, not pint units: "T1" is a service, not a unit,
# and a bare name means "one of those" (no number in front).
LINE_RATES: Mapping[str, float] = MappingProxyType(
    {
        "DS0": 64e3,
        "T1": 1.544e6,
        "E1": 2.048e6,
        "E3": 34.368e6,
        "T3": 44.736e6,
        "OC3": 155.52e6,
        "OC12": 622.08e6,
        "10BaseT": 10e6,
        "100BaseT": 100e6,
        "1000BaseT": 1e9,
    }
)
_LINE_RATES_FOLDED = {name.casefold(): bps for name, bps in LINE_RATES.items()}

# Decimal prefixes are powers of ten ("25MB" is 25e6 bytes, "K" is an alias of "k" as in
# "Kbps"); binary sizes must say so ("64KiB").
_DEFINITIONS = (
    "second = [time] = s = sec",
    "minute = 60 * second = min",
    "hour = 3600 * second = h = hr",
    "bit = [information] = b",
    "byte = 8 * bit = B = octet",
    "bps = bit / second",
    "Bps = byte / second",
    "nano- = 1e-9 = n-",
    "micro- = 1e-6 = u- = µ- = μ-",
    "milli- = 1e-3 = m-",
    "kilo- = 1e3 = k- = K-",
    "mega- = 1e6 = M-",
    "giga- = 1e9 = G-",
    "tera- = 1e12 = T-",
    "kibi- = 2**10 = Ki-",
    "mebi- = 2**20 = Mi-",
    "gibi- = 2**30 = Gi-",
    "tebi- = 2**40 = Ti-",
)

# Base unit and a readable name of each kind, and the examples quoted in error messages.
_BASE: dict[Kind, str] = {"duration": "second", "size": "byte", "rate": "bit / second"}
_EXAMPLES: dict[Kind, str] = {
    "duration": "0.2, '200ms', '1.5s', '200us', '2min'",
    "size": "8760, '25MB', '64KiB', '1.5kB'",
    "rate": "1544000, '1.544Mbps', '512kbps', '10 Mbit/s', 'T1'",
}
# What an "unknown unit" error lists: the units of each kind (SI prefixes n, u, m, k, M, G, T
# and binary Ki, Mi, Gi, Ti combine with any of them).
_VALID_UNITS: dict[Kind, str] = {
    "duration": "s, ms, us, ns, min, h",
    "size": "B, kB, MB, GB, KiB, MiB, GiB, bit, kbit, Mbit",
    "rate": "bps, kbps, Mbps, Gbps, bit/s, Mbit/s, Bps, MBps, or a line rate ("
    + ", ".join(LINE_RATES)
    + ")",
}
_DIMENSION_NAMES: dict[tuple[tuple[str, Any], ...], str] = {
    (("[time]", 1),): "a duration",
    (("[information]", 1),): "a size",
    (("[information]", 1), ("[time]", -1)): "a rate",
}

_MAX_UNIT_LENGTH = 32  # longer is not a unit; spare pint's parser arbitrary client text
_NUMBER_WITH_UNIT = re.compile(
    r"\s*(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(?P<unit>.*?)\s*"
)


@lru_cache(maxsize=1)
def _registry() -> pint.UnitRegistry[Any]:
    """Build the private unit registry on first use (importing pint takes ~0.2 s)."""
    import pint

    registry: pint.UnitRegistry[Any] = pint.UnitRegistry(None)  # no default definitions, only ours
    for definition in _DEFINITIONS:
        registry.define(definition)
    return registry


@lru_cache(maxsize=256)
def _unit_factor(unit: str, kind: Kind) -> Decimal:
    """Return how many base units of `kind` one `unit` is; raise UnitError otherwise."""
    if len(unit) > _MAX_UNIT_LENGTH:
        raise UnitError(
            f"unknown unit {unit[:_MAX_UNIT_LENGTH]!r}...; {kind} units: {_VALID_UNITS[kind]}"
        )
    registry = _registry()
    try:
        parsed = registry.parse_units(unit)
    except Exception as exc:  # pint raises several unrelated types for malformed units
        raise UnitError(f"unknown unit {unit!r}; {kind} units: {_VALID_UNITS[kind]}") from exc
    base = registry.parse_units(_BASE[kind])
    if parsed.dimensionality != base.dimensionality:
        key = tuple(sorted(parsed.dimensionality.items()))
        found = _DIMENSION_NAMES.get(key) or f"in {parsed.dimensionality}"
        raise UnitError(f"{unit!r} is {found}, not a {kind}")
    factor = registry.Quantity(1, parsed).to(base).magnitude
    # repr() then Decimal keeps "1.1ms" == 0.0011 exactly as written, not 0.0011000000000000001.
    return Decimal(repr(float(factor)))


#: The largest value of each kind a simulation can hold: past these, simulated clocks and
#: byte counts lose their resolution or overflow (1e308 s of delay did, in the worker).
#: A billion seconds is 31 years of simulated time; 10^15 bit/s a petabit link.
_MAXIMUM: dict[str, float] = {"duration": 1e9, "size": float(2**53), "rate": 1e15}
_SYMBOL: dict[str, str] = {"duration": "s", "size": "B", "rate": "bit/s"}


def _parse(value: Any, kind: Kind) -> Decimal | int | float:
    """Parse `value` into base units of `kind`: a finite, non-negative number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real | str):
        raise UnitError(f"expected a number or a string such as {_EXAMPLES[kind]}")
    if isinstance(value, numbers.Real):
        # Fast path: a plain number is already in base units.
        try:
            result: Decimal | int | float = (
                int(value) if isinstance(value, numbers.Integral) else float(value)
            )
            float(result)  # an int too large for a float is out of range for every kind
        except OverflowError:
            raise UnitError(f"{kind} {value!r} is out of range") from None
    else:
        named = _LINE_RATES_FOLDED.get(value.strip().casefold()) if kind == "rate" else None
        if named is not None:
            return named
        match = _NUMBER_WITH_UNIT.fullmatch(value)
        if match is None:
            raise UnitError(
                f"invalid {kind} {value!r}: expected e.g. {_EXAMPLES[kind]}"
                + (f"; line rates: {', '.join(LINE_RATES)}" if kind == "rate" else "")
            )
        number = Decimal(match["number"])
        unit = match["unit"]
        if unit:
            try:
                number *= _unit_factor(unit, kind)
            except UnitError as exc:
                raise UnitError(f"invalid {kind} {value!r}: {exc}") from None
        result = number
    if isinstance(result, float) and not math.isfinite(result):
        raise UnitError(f"{kind} must be a finite number, got {value!r}")
    if isinstance(result, Decimal) and not math.isfinite(float(result)):
        raise UnitError(f"{kind} {value!r} is out of range")
    if result < 0:
        raise UnitError(f"{kind} must not be negative, got {value!r}")
    if result > _MAXIMUM[kind]:
        limit = f"{_MAXIMUM[kind]:g} {_SYMBOL[kind]}"
        raise UnitError(f"{kind} {value!r} is out of range: at most {limit}")
    return result


def parse_duration(value: Any) -> float:
    """Parse a duration into seconds: 0.2, "200ms", "1.5s", "200us", "2min"."""
    return float(_parse(value, "duration"))


def parse_size(value: Any) -> int:
    """Parse a size into whole bytes: 8760, "25MB" (10^6), "64KiB" (2^10), "1.5kB"."""
    result = _parse(value, "size")
    if isinstance(result, int):
        return result
    if result != int(result):
        exact = format(result.normalize(), "f") if isinstance(result, Decimal) else repr(result)
        raise UnitError(f"size must be a whole number of bytes, got {value!r} = {exact} B")
    return int(result)


def parse_bits(value: Any) -> int:
    """Parse an amount of data into whole bits (Frame Relay's Bc and Be): a plain number is
    bits, as it always was; a string with a unit is a size ("8kB" = 64000, "64kbit")."""
    match = _NUMBER_WITH_UNIT.fullmatch(value) if isinstance(value, str) else None
    if match is not None and match["unit"]:
        bits = Decimal(_parse(value, "size")) * 8
    else:
        bits = Decimal(_parse(value, "size"))  # a bare number is bits
    if bits != int(bits):
        raise UnitError(f"bits must be a whole number, got {value!r} = {bits.normalize():f} bit")
    return int(bits)


def parse_rate(value: Any) -> float:
    """Parse a rate into bit/s: 1544000, "1.544Mbps", "512kbps", "2Mb/s", "T1"."""
    return float(_parse(value, "rate"))


def _validator(parse: Any, kind: Kind) -> BeforeValidator:
    """Wrap a parser so its UnitError becomes a pydantic error of type `<kind>_parsing`."""

    def validate(value: Any) -> Any:
        try:
            return parse(value)
        except UnitError as exc:
            raise PydanticCustomError(f"{kind}_parsing", str(exc)) from None

    return BeforeValidator(validate)


def _json_schema(number_type: str, description: str, examples: list[Any]) -> WithJsonSchema:
    """Input schema: a number in base units or a string with a unit."""
    return WithJsonSchema(
        {
            "anyOf": [{"type": number_type, "minimum": 0}, {"type": "string"}],
            "description": description,
            "examples": examples,
        },
        mode="validation",
    )


def _output_schema(number_type: str, description: str) -> WithJsonSchema:
    """Output schema: always a plain number in base units."""
    return WithJsonSchema({"type": number_type, "description": description}, mode="serialization")


Duration = Annotated[
    float,
    _validator(parse_duration, "duration"),
    _json_schema(
        "number",
        "Duration: seconds, or a string with a unit (ns, us, ms, s, min, h).",
        [0.2, "200ms", "1.5s", "200us", "2min"],
    ),
    _output_schema("number", "Duration in seconds."),
]
ByteSize = Annotated[
    int,
    _validator(parse_size, "size"),
    _json_schema(
        "integer",
        "Size: bytes, or a string with a unit (B, kB, MB, GB are powers of 10; "
        "KiB, MiB, GiB powers of 2).",
        [8760, "25MB", "64KiB", "1.5kB"],
    ),
    _output_schema("integer", "Size in bytes."),
]
Bits = Annotated[
    int,
    _validator(parse_bits, "size"),
    _json_schema(
        "integer",
        "Amount of data in bits: a plain number is bits; a string with a unit is a size "
        "(kbit, Mbit; B, kB, MB are bytes: '8kB' is 64000 bits).",
        [1544000, "1.544Mbit", "64kbit", "8kB"],
    ),
    _output_schema("integer", "Bits."),
]
Rate = Annotated[
    float,
    _validator(parse_rate, "rate"),
    _json_schema(
        "number",
        "Rate: bit/s, or a string with a unit (bps, kbps, Mbps, Gbps, Mbit/s, Mb/s, MB/s), "
        "or a line name: " + ", ".join(LINE_RATES) + ".",
        [1544000, "1.544Mbps", "512kbps", "10 Mbit/s", "T1"],
    ),
    _output_schema("number", "Rate in bit/s."),
]


def format_duration(seconds: float) -> str:
    """Render seconds compactly for messages: "200 ms", "1.5 s", "583.2 s"."""
    if 0 < seconds < 1:
        return f"{seconds * 1e3:.4g} ms"
    return f"{seconds:,.6g} s" if seconds < 1e6 else f"{seconds:,.0f} s"


def format_size(size: int) -> str:
    """Render bytes with thousands separators for messages: "65,535 B"."""
    return f"{size:,} B"


def format_rate(bps: float, digits: int = 6) -> str:
    """Render a rate with a decimal prefix and `digits` significant digits: "1.544 Mbit/s"
    (validation messages echo a setting exactly); 3 digits for measured figures in prose
    ("926 kbit/s"). The one rate formatter: diagnoses, warnings and sweep conclusions."""
    for factor, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(bps) >= factor:
            return f"{bps / factor:,.{digits}g} {prefix}bit/s"
    return f"{bps:,.{digits}g} bit/s"
