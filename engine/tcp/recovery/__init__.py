"""Loss-recovery strategies: what the sender does on duplicate ACKs and on ACKs that arrive
while it is recovering. The sender calls them at named points (`base.NoRecovery`); the
congestion strategy supplies the window sizes, and names the recovery it runs without SACK
(its `recovery` trait)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.tcp.recovery.base import AckUse, NoRecovery, Sender
from engine.tcp.recovery.rack import RackRecovery
from engine.tcp.recovery.sack import SackRecovery
from engine.tcp.state import DUPACK_THRESHOLD

if TYPE_CHECKING:
    from engine.scenario import TcpSpec
    from engine.tcp.cc.base import CongestionOps


def recovery_for(spec: TcpSpec, variant: type[CongestionOps]) -> NoRecovery:
    """The strategy for a TcpSpec whose variant is `variant`: none at all (timer only)
    when `fast_retransmit` is off; with SACK on and a variant that has fast recovery,
    RACK-TLP (RFC 8985) or RFC 6675's duplicate-ACK detection as `loss_detection` says;
    otherwise the variant's own (duplicate ACKs: RACK needs SACK, in Linux too)."""
    if not spec.fast_retransmit:
        return NoRecovery(spec)
    if variant.sack_recovery(spec):
        return RackRecovery(spec) if spec.loss_detection == "rack" else SackRecovery(spec)
    return variant.recovery(spec)


__all__ = ["DUPACK_THRESHOLD", "AckUse", "NoRecovery", "Sender", "recovery_for"]
