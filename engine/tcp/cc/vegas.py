"""TCP Vegas (Brakmo & Peterson, 1995), in the form of Linux's tcp_vegas.c.

Once per round trip Vegas compares the expected rate cwnd/BaseRTT with the actual rate
cwnd/RTT; their difference times BaseRTT estimates the packets this flow keeps queued:
    diff = cwnd * (RTT - BaseRTT) / RTT        (in segments)
In congestion avoidance it adds a segment when diff < alpha, removes one when diff > beta,
and holds otherwise; it leaves slow start once diff > gamma. Loss is handled as by Reno
(the variant's recovery strategy, ssthresh = FlightSize / 2).
"""

from __future__ import annotations

from engine.tcp.cc.base import RenoGrowth
from engine.tcp.state import TcpState


class Vegas(RenoGrowth):
    name = "vegas"

    def __init__(self, spec) -> None:
        super().__init__(spec)
        self.alpha = spec.vegas_alpha
        self.beta = spec.vegas_beta
        self.gamma = spec.vegas_gamma
        self.base_rtt = float("inf")
        self.min_rtt = float("inf")  # smallest sample of the current round trip
        self.samples = 0
        self.epoch_end = 0  # snd_nxt when the current round trip began

    def on_rtt_sample(self, st: TcpState, rtt: float) -> None:
        if rtt < self.base_rtt:
            self.base_rtt = rtt
        if rtt < self.min_rtt:
            self.min_rtt = rtt
        self.samples += 1

    def on_congestion_event(self, st: TcpState) -> None:
        self.samples = 0
        self.min_rtt = float("inf")

    def on_ack(self, st: TcpState, acked: int, cwnd_limited: bool) -> None:
        # Vegas decides on every round trip even when the receive window holds the
        # sender: its decrease must still act, only its growth waits for cwnd to limit.
        if st.snd_una < self.epoch_end:
            if cwnd_limited and st.cwnd < st.ssthresh:
                self.increase_window(st, acked)
            return
        self.epoch_end = st.snd_nxt  # a round trip has passed: one Vegas decision
        if self.samples == 0:
            if cwnd_limited:
                self.increase_window(st, acked)
            return
        mss = st.mss
        rtt = self.min_rtt
        segments = st.cwnd / mss
        diff = segments * (rtt - self.base_rtt) / rtt
        if st.cwnd < st.ssthresh:
            if diff > self.gamma:
                # Leave slow start at the window that keeps gamma segments queued.
                target = segments * self.base_rtt / rtt
                st.cwnd = max(int(min(segments, target + 1) * mss), 2 * mss)
                st.ssthresh = max(st.cwnd - mss, 2 * mss)
            elif cwnd_limited:
                self.increase_window(st, acked)
        elif diff > self.beta:
            st.cwnd = max(st.cwnd - mss, 2 * mss)
            st.ssthresh = min(st.ssthresh, max(st.cwnd - mss, 2 * mss))
        elif diff < self.alpha and cwnd_limited:
            st.cwnd += mss
        self.samples = 0
        self.min_rtt = float("inf")
