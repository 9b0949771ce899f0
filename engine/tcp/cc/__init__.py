"""Congestion-control strategies, one module per variant family; each registers its
classes with engine.variants, the one registry, and this package imports every module in
it, so a new variant is a new module here and nothing else."""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING

from engine.tcp.cc.base import CongestionOps
from engine.variants import variant

if TYPE_CHECKING:
    from engine.scenario import TcpSpec

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")


def congestion_ops(spec: TcpSpec) -> CongestionOps:
    """The strategy for `spec.variant` (a TcpSpec)."""
    return variant(spec.variant)(spec)


__all__ = ["CongestionOps", "congestion_ops"]
