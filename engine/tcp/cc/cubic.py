"""CUBIC (RFC 9438): window growth as a cubic function of the time since the last
congestion event, independent of the RTT.

    W_cubic(t) = C * (t - K)^3 + W_max,   K = cbrt((W_max - cwnd_epoch) / C)   (segments, s)

with C = 0.4 and beta = 0.7. In congestion avoidance each ACK moves cwnd toward
W_cubic(t + RTT) (section 4.2), but never below the Reno-friendly estimate W_est
(section 4.3, alpha = 3(1 - beta)/(1 + beta)). On a congestion event ssthresh =
FlightSize * beta and W_max = cwnd, reduced further by fast convergence (4.7) when the
window is shrinking from one event to the next; after a timeout the next epoch starts with
K = 0 from the window it starts at (4.8). Slow start is RenoGrowth's, ended early by
HyStart (the default, `slow_start.py`).

Until the first loss (and again after a timeout, which forgets W_max) there is no W_max to
aim at, and the cubic curve from K = 0 starts flat. Linux's bictcp_update and ns-3's
TcpCubic::Update both clamp its growth then:

    if (ca->last_max_cwnd == 0 && ca->cnt > 20)
        ca->cnt = 20;   /* increase cwnd 5% per RTT */

cnt being the segments acknowledged per segment of growth, so cwnd grows by at least 1/20
of a segment per segment acknowledged: at least 5% per round trip. RFC 9438 has no such
clamp; without it a flow that left slow start early (HyStart) below the path's BDP takes
seconds to fill it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.tcp.cc.base import RenoGrowth
from engine.tcp.state import Phase, TcpState
from engine.variants import register

if TYPE_CHECKING:
    from engine.scenario import TcpSpec


#: Linux's and ns-3's cnt clamp of 20 while no W_max is known: 1/20 of a segment per
#: segment acknowledged, 5% per round trip.
FIRST_EPOCH_GROWTH = 1 / 20


class Cubic(RenoGrowth):
    name = "cubic"
    summary = "RFC 9438: the window a cubic function of the time since the last loss"
    # HyStart as Linux's tcp_cubic (hystart=1) and ns-3's TcpCubic (HyStart true) run it.
    default_slow_start = "hystart"
    # Measured (tests/unit/test_estimate.py): beta 0.7 keeps enough segments in flight
    # after a loss for duplicate ACKs to recover more losses without a timeout.
    timeout_factor = 0.5

    def __init__(self, spec: TcpSpec) -> None:
        super().__init__(spec)
        self.c = spec.cubic_c
        self.beta = spec.cubic_beta
        self.fast_convergence = spec.cubic_fast_convergence
        self.friendly = spec.cubic_tcp_friendliness
        self.alpha = 3 * (1 - self.beta) / (1 + self.beta)
        self.w_max = 0.0  # segments
        self.cwnd_prior = 0.0  # segments, the window when ssthresh was last set
        self.k = 0.0
        self.epoch_start: float | None = None
        self.w_est = 0.0
        self.rtt = 0.0
        self.carry = 0.0  # fractional bytes of growth not yet applied
        #: The epoch began with no W_max (Linux's last_max_cwnd == 0): growth at least
        #: FIRST_EPOCH_GROWTH per segment acknowledged.
        self.no_max = False

    def on_rtt_sample(self, st: TcpState, rtt: float) -> None:
        self.rtt = st.srtt or rtt

    def on_congestion_event(self, st: TcpState) -> None:
        super().on_congestion_event(st)
        cwnd = st.cwnd / st.mss
        self.cwnd_prior = cwnd
        if self.fast_convergence and cwnd < self.w_max:
            self.w_max = cwnd * (1 + self.beta) / 2
        else:
            self.w_max = cwnd
        self.epoch_start = None

    def ssthresh_after_loss(self, st: TcpState) -> int:
        return max(int(st.flight_size * self.beta), 2 * st.mss)

    @classmethod
    def decrease_factor(cls, spec: TcpSpec) -> float:
        return spec.cubic_beta

    def on_recovery_exit(self, st: TcpState) -> None:
        self.epoch_start = None

    def on_state_change(self, st: TcpState, phase: Phase) -> None:
        if phase == Phase.LOSS:
            # Section 4.8: after a timeout the next epoch starts with K = 0 and W_max =
            # the window at its start (Linux's bictcp_reset on TCP_CA_Loss).
            self.w_max = 0.0
            self.epoch_start = None

    def w_cubic(self, t: float) -> float:
        return self.c * (t - self.k) ** 3 + self.w_max

    def congestion_avoidance(self, st: TcpState, acked: int) -> None:
        mss = st.mss
        cwnd = st.cwnd / mss
        now = st.now
        if self.epoch_start is None:
            self.epoch_start = now
            self.no_max = self.w_max == 0.0
            if cwnd < self.w_max:
                self.k = ((self.w_max - cwnd) / self.c) ** (1 / 3)
            else:
                self.k = 0.0
                self.w_max = cwnd
            self.w_est = cwnd
        t = now - self.epoch_start
        target = self.w_cubic(t + self.rtt)
        target = min(max(target, cwnd), 1.5 * cwnd)
        segments_acked = acked / mss
        increment = (target - cwnd) / cwnd * segments_acked
        if self.no_max and increment < segments_acked * FIRST_EPOCH_GROWTH:
            increment = segments_acked * FIRST_EPOCH_GROWTH  # cnt <= 20
        if self.friendly:
            # Section 4.3: once W_est reaches cwnd_prior, grow it at Reno's rate (alpha 1).
            alpha = 1.0 if self.w_est >= self.cwnd_prior else self.alpha
            self.w_est += alpha * segments_acked / cwnd
            if self.w_cubic(t) < self.w_est:
                increment = max(increment, self.w_est - cwnd)
        grow = max(increment, 0.0) * mss + self.carry
        whole = int(grow)
        self.carry = grow - whole
        st.cwnd += whole


register(Cubic)
