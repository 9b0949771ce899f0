"""Retransmission timeout per RFC 6298, with Karn's rule applied by the caller.

The clock is continuous unless the flow sets `tcp.timer_granularity`: then, as ns-2's
tcpTick_ and the BSD timers count, RTT samples are whole ticks (rounded, at least one) and
the RTO is a whole number of ticks (rounded up), with G = one tick.
"""

from __future__ import annotations

import math


class RttEstimator:
    """SRTT/RTTVAR smoothing (alpha 1/8, beta 1/4), K = 4, bounded by min and max RTO."""

    ALPHA = 0.125
    BETA = 0.25
    K = 4
    GRANULARITY = 0.001  # G, the clock granularity of RFC 6298 section 2

    __slots__ = (
        "min_rto",
        "max_rto",
        "srtt",
        "rttvar",
        "rto",
        "samples",
        "tick",
        "granularity",
    )

    def __init__(
        self, initial_rto: float, min_rto: float, max_rto: float, tick: float | None = None
    ):
        self.tick = tick
        self.granularity = tick if tick is not None else self.GRANULARITY
        self.min_rto = min_rto
        self.max_rto = max_rto
        self.srtt: float | None = None
        self.rttvar = 0.0
        # RFC 6298 2.1: until a measurement is made, RTO is the initial value (1 s).
        self.rto = min(max(initial_rto, min_rto), max_rto)
        self.samples = 0

    def sample(self, r: float) -> None:
        """RFC 6298 2.2/2.3: fold a measurement from a segment that was not retransmitted."""
        if self.tick is not None:
            r = max(round(r / self.tick), 1) * self.tick
        if self.srtt is None:
            self.srtt = r
            self.rttvar = r / 2
        else:
            self.rttvar = (1 - self.BETA) * self.rttvar + self.BETA * abs(self.srtt - r)
            self.srtt = (1 - self.ALPHA) * self.srtt + self.ALPHA * r
        self.samples += 1
        self._update()

    def _update(self) -> None:
        srtt = self.srtt
        assert srtt is not None  # called after a sample
        rto = srtt + max(self.granularity, self.K * self.rttvar)
        if self.tick is not None:
            rto = math.ceil(rto / self.tick - 1e-9) * self.tick
        # 2.4: rounded up to min_rto; 2.5: a maximum of at least 60 s may be placed.
        self.rto = min(max(rto, self.min_rto), self.max_rto)

    def backoff(self) -> None:
        """RFC 6298 5.5: double the RTO on expiry, up to the maximum."""
        self.rto = min(self.rto * 2, self.max_rto)

    def reset_for_data_after_syn_loss(self) -> None:
        """RFC 6298 5.7: a lost SYN means data transmission starts with an RTO of 3 s."""
        if self.srtt is None and self.rto < 3.0:
            self.rto = min(3.0, self.max_rto)
