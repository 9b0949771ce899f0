"""Congestion-control strategies, one module per variant family; each registers its
classes with engine.variants, the one registry, and this package imports every module in
it, so a new variant is a new module here and nothing else."""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING

from engine import variants
from engine.tcp.cc.base import CongestionOps

if TYPE_CHECKING:
    from engine.scenario import TcpSpec

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")


def variant(name: str) -> type[CongestionOps]:
    """The class of the variant `name`, traits and all: engine.variants' registry typed as
    the engine reads it (that module names no strategy: the scenario language asks it too).
    KeyError names the valid ones."""
    cls = variants.variant(name)
    assert issubclass(cls, CongestionOps), f"variant {name!r} is not a CongestionOps"
    return cls


def congestion_ops(spec: TcpSpec) -> CongestionOps:
    """The strategy for `spec.variant` (a TcpSpec)."""
    return variant(spec.variant)(spec)


__all__ = ["CongestionOps", "congestion_ops", "variant"]
