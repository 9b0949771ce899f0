"""Congestion-control strategies, chosen by the scenario's `tcp.variant`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.tcp.cc.base import CongestionOps, FixedWindow, RenoGrowth
from engine.tcp.cc.bbr import Bbr
from engine.tcp.cc.cubic import Cubic
from engine.tcp.cc.vegas import Vegas

if TYPE_CHECKING:
    from engine.scenario import TcpSpec

REGISTRY: dict[str, type[CongestionOps]] = {
    "none": FixedWindow,
    "tahoe": RenoGrowth,
    "reno": RenoGrowth,
    "newreno": RenoGrowth,
    "sack": RenoGrowth,
    "vegas": Vegas,
    "cubic": Cubic,
    "bbr": Bbr,
}


def congestion_ops(spec: TcpSpec) -> CongestionOps:
    """The strategy for `spec.variant` (a TcpSpec)."""
    try:
        cls = REGISTRY[spec.variant]
    except KeyError:
        raise NotImplementedError(f"tcp variant {spec.variant!r} is not implemented yet") from None
    return cls(spec)


__all__ = ["REGISTRY", "CongestionOps", "congestion_ops"]
