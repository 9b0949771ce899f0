"""Variant `none`: a fixed window (the receiver's and the send buffer's) with go-back-N on a
timeout and no congestion control at all: no slow start, no fast retransmit. The "before
Reno" baseline of seed 000, as OPNET runs a TCP with its congestion control turned off."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.tcp.cc.base import CongestionOps
from engine.tcp.recovery.base import NoRecovery
from engine.tcp.state import TcpState
from engine.variants import register

if TYPE_CHECKING:
    from engine.scenario import TcpSpec


class FixedWindow(CongestionOps):
    name = "none"
    summary = "a fixed window, go-back-N on timeout: no congestion control (before Reno)"
    limits_window = False
    recovery = NoRecovery
    own_slow_start = "variant none sends a fixed window and has no slow start"

    def increase_window(self, st: TcpState, acked: int) -> None:
        pass

    def ssthresh_after_loss(self, st: TcpState) -> int:
        return st.ssthresh

    def loss_window(self, st: TcpState) -> int:
        return st.cwnd

    @classmethod
    def decrease_factor(cls, spec: TcpSpec) -> float:
        return 1.0  # the window does not move on a loss


register(FixedWindow)
