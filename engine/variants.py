"""The one registry of TCP variants: a variant's name (the scenario's `tcp.variant`) and the
congestion-control class that carries everything the engine knows about it, its traits
included (engine.tcp.cc.base.CongestionOps: loss-based or not, SACK, default recovery and
slow start, decrease factor, the traces it records).

Everything that asks about a variant asks this registry, by name: the scenario's `variant`
field (its valid values and their JSON Schema enum) here, by the `Variant` traits below; the
sender, the receiver, the diagnosis, the cost estimate, the recorder and the docs reference
through `engine.tcp.cc.variant`, which returns the same class typed as what it is. A variant
registers itself from its own module in engine/tcp/cc/ (`register(Class)` below the class),
and that package imports each of its modules, so adding a variant is one new module there.

This module imports nothing of the simulator, not even to name it in a type (the strategy
class names the scenario's TcpSpec, whose validation asks here), so the scenario language
can ask it without importing the simulator; the built-in variants are registered as soon as
`engine` is imported, since its package imports the simulator (a unit test checks that a
fresh interpreter importing the scenario language sees them all).
"""

from __future__ import annotations

from typing import ClassVar, Protocol, TypeVar


class Variant(Protocol):
    """What the scenario language reads of a variant's class (a CongestionOps): its name
    and the traits that decide which of the TcpSpec's options apply to it."""

    name: ClassVar[str]
    limits_window: ClassVar[bool]
    always_paces: ClassVar[bool]
    own_slow_start: ClassVar[str]


V = TypeVar("V", bound=type[Variant])

_REGISTRY: dict[str, type[Variant]] = {}


def register(cls: V) -> V:
    """Make `cls` the variant `cls.name`. A name is registered once: a second class under
    a name already taken is a programming error, not a silent override."""
    known = _REGISTRY.get(cls.name)
    if known is not None and known is not cls:
        raise ValueError(f"tcp variant {cls.name!r} is already {known.__qualname__}")
    _REGISTRY[cls.name] = cls
    return cls


def unregister(name: str) -> None:
    """Forget the variant `name` (a test's own variant, when the test ends)."""
    _REGISTRY.pop(name, None)


def names() -> tuple[str, ...]:
    """Every registered variant name, sorted: the scenario's valid `variant` values."""
    return tuple(sorted(_REGISTRY))


def variant(name: str) -> type[Variant]:
    """The class of the variant `name`, as the scenario reads it (the engine asks
    `engine.tcp.cc.variant`); KeyError names the valid ones."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown tcp variant {name!r}; known: {', '.join(names())}") from None
