"""Loss-recovery strategies, chosen by the scenario's `tcp.variant` and `tcp.sack`: what the
sender does on duplicate ACKs and on ACKs that arrive while it is recovering. The sender
calls them at named points (`base.NoRecovery`); the congestion strategy supplies the
window sizes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.tcp.recovery.base import DUPACK_THRESHOLD, AckUse, NoRecovery, Sender
from engine.tcp.recovery.reno import NewRenoRecovery, RenoRecovery, TahoeRecovery
from engine.tcp.recovery.sack import SackRecovery

if TYPE_CHECKING:
    from engine.scenario import TcpSpec

REGISTRY: dict[str, type[NoRecovery]] = {
    "none": NoRecovery,
    "tahoe": TahoeRecovery,
    "reno": RenoRecovery,
    "newreno": NewRenoRecovery,
    "sack": SackRecovery,  # NS-2's Sack1
    "vegas": NewRenoRecovery,
    "cubic": NewRenoRecovery,
    "bbr": NewRenoRecovery,  # Linux's recovery under BBR's cwnd (its own loss response)
}


def recovery_for(spec: TcpSpec) -> NoRecovery:
    """The strategy for a TcpSpec: none at all (timer only) when `fast_retransmit` is off;
    SACK (RFC 6675) when `sack` is on, except for the fixed window of variant `none`, which
    has no recovery; otherwise the variant's own."""
    if not spec.fast_retransmit:
        return NoRecovery(spec)
    if spec.sack and spec.variant != "none":
        return SackRecovery(spec)
    try:
        cls = REGISTRY[spec.variant]
    except KeyError:
        raise NotImplementedError(f"tcp variant {spec.variant!r} is not implemented yet") from None
    return cls(spec)


__all__ = ["DUPACK_THRESHOLD", "REGISTRY", "AckUse", "NoRecovery", "Sender", "recovery_for"]
