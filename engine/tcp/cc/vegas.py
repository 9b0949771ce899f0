"""TCP Vegas (Brakmo & Peterson, 1995) as Linux's tcp_vegas.c and ns-3's TcpVegas run it.

Once per round trip Vegas compares the expected rate cwnd/BaseRTT with the actual rate
cwnd/RTT (RTT: the smallest sample of the round); their difference estimates the packets
this flow keeps queued. In congestion avoidance it adds a segment when diff < alpha,
removes one when diff > beta, and holds otherwise; it leaves slow start once diff > gamma,
with cwnd cut to the window that matches the actual rate.

Both references (and `tcp.vegas_loss` chooses between them) share the structure:
- an RTT sample on every ACK of new data feeds BaseRTT (the smallest ever) and the
  round's minimum; a round with 2 samples or fewer is decided as Reno would (they are
  likely delayed ACKs);
- Vegas runs only in the Open state: on entering recovery or loss it stops, the window
  is the recovery's and Reno's (slow start back to ssthresh after a timeout), and on
  returning to Open it starts a fresh round with no samples;
- after each decision ssthresh = max(ssthresh, 3/4 cwnd).

They differ on loss:
- `linux`: ssthresh = Reno's halving (tcp_reno_ssthresh); diff = cwnd (RTT - BaseRTT) /
  BaseRTT; a retransmission timeout resets Vegas whole, BaseRTT included (sending after
  the timeout with nothing in flight raises CA_EVENT_TX_START, which calls
  tcp_vegas_init), so BaseRTT is learnt again from the samples that follow.
- `ns3`: ssthresh = max(min(ssthresh, cwnd - 1 MSS), 2 MSS) (TcpVegas::GetSsThresh, used
  for losses too); diff = cwnd - floor(cwnd BaseRTT / RTT); BaseRTT kept for the life of
  the connection.

`classic` is the engine's Vegas before these were modelled, kept for the seed presets
(ns-2 era): a decision every round from the one segment timed per round trip (Karn), in
every phase including the slow start after a timeout, Reno's halving, BaseRTT kept; diff =
cwnd (RTT - BaseRTT) / RTT. Under heavy random loss it delivers well above Reno and the
references: its decision runs on one sample where they fall back to Reno's growth, and so
adds a whole segment per round trip where Reno with delayed ACKs adds half of one, and
after a timeout it resumes Vegas decisions at once instead of Reno's slow start.

In every mode the window grows only while cwnd limits the sender (the engine's rule for
all variants); a decrease acts regardless.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.tcp.cc.base import RenoGrowth
from engine.tcp.state import Phase, TcpState
from engine.variants import register

if TYPE_CHECKING:
    from engine.scenario import TcpSpec


INF = float("inf")


class Vegas(RenoGrowth):
    name = "vegas"
    summary = "delay-based: holds the packets it queues in the path between alpha and beta"
    # Measured (tests/unit/test_estimate.py): times out less often than Reno under loss.
    timeout_factor = 0.5

    def __init__(self, spec: TcpSpec) -> None:
        super().__init__(spec)
        self.alpha = spec.vegas_alpha
        self.beta = spec.vegas_beta
        self.gamma = spec.vegas_gamma
        self.mode = spec.vegas_loss
        self.ack_samples = self.mode != "classic"
        self.base_rtt = INF
        self.min_rtt = INF  # smallest sample of the current round trip
        self.samples = 0
        self.epoch_end = 0  # snd_nxt when the current round trip began
        self.doing_vegas = True

    # --- samples ---------------------------------------------------------------------------

    def on_rtt_sample(self, st: TcpState, rtt: float) -> None:
        if self.ack_samples:
            return  # the per-ACK samples (on_ack_rtt) feed linux and ns3
        self._sample(rtt)

    def on_ack_rtt(self, st: TcpState, rtt: float) -> None:
        """pkts_acked / PktsAcked: the RTT of the oldest segment this ACK covers."""
        self._sample(rtt if rtt > 1e-6 else 1e-6)

    def _sample(self, rtt: float) -> None:
        if rtt < self.base_rtt:
            self.base_rtt = rtt
        if rtt < self.min_rtt:
            self.min_rtt = rtt
        self.samples += 1

    # --- phases and losses -------------------------------------------------------------------

    def on_state_change(self, st: TcpState, phase: Phase) -> None:
        if not self.ack_samples:
            return
        if phase == Phase.OPEN:
            self._enable(st)
        else:
            self.doing_vegas = False
            if phase == Phase.LOSS and self.mode == "linux":
                self.base_rtt = INF  # tcp_vegas_init on the post-timeout TX_START

    def _enable(self, st: TcpState) -> None:
        self.doing_vegas = True
        self.epoch_end = st.snd_nxt
        self.samples = 0
        self.min_rtt = INF

    def on_congestion_event(self, st: TcpState) -> None:
        super().on_congestion_event(st)
        if not self.ack_samples:
            self.samples = 0
            self.min_rtt = INF

    def ssthresh_after_loss(self, st: TcpState) -> int:
        if self.mode == "ns3":
            return max(min(st.ssthresh, st.cwnd - st.mss), 2 * st.mss)
        return super().ssthresh_after_loss(st)

    # --- the once-per-round decision ----------------------------------------------------------

    def on_ack(self, st: TcpState, acked: int, cwnd_limited: bool) -> None:
        if not self.ack_samples:
            self._classic(st, acked, cwnd_limited)
            return
        if not self.doing_vegas:
            super().on_ack(st, acked, cwnd_limited)
            return
        # Linux: after(ack, beg_snd_nxt); ns-3: m_lastAckedSeq >= m_begSndNxt.
        if st.snd_una > self.epoch_end or (self.mode == "ns3" and st.snd_una == self.epoch_end):
            self.epoch_end = st.snd_nxt
            if self.samples <= 2:
                super().on_ack(st, acked, cwnd_limited)
            else:
                self._decide(st, acked, cwnd_limited)
            self.samples = 0
            self.min_rtt = INF
        elif st.cwnd < st.ssthresh and cwnd_limited:
            self.increase_window(st, acked)

    def _decide(self, st: TcpState, acked: int, cwnd_limited: bool) -> None:
        mss = st.mss
        segments = st.cwnd // mss
        rtt, base = self.min_rtt, self.base_rtt
        target = int(segments * base / rtt)
        # ns-3: cwnd - floor(expected window); Linux: cwnd (RTT - BaseRTT) / BaseRTT.
        diff = segments - target if self.mode == "ns3" else segments * (rtt - base) / base
        if diff > self.gamma and st.cwnd < st.ssthresh:
            st.cwnd = min(segments, target + 1) * mss
            st.ssthresh = self._vegas_ssthresh(st)
        elif st.cwnd < st.ssthresh:
            if cwnd_limited:
                self.increase_window(st, acked)
        elif diff > self.beta:
            st.cwnd = (segments - 1) * mss
            st.ssthresh = self._vegas_ssthresh(st)
        elif diff < self.alpha and cwnd_limited:
            st.cwnd = (segments + 1) * mss
        if st.cwnd < 2 * mss:
            st.cwnd = 2 * mss
        three_quarters = 3 * st.cwnd // 4
        if st.ssthresh < three_quarters:
            st.ssthresh = three_quarters

    def _vegas_ssthresh(self, st: TcpState) -> int:
        if self.mode == "ns3":
            return max(min(st.ssthresh, st.cwnd - st.mss), 2 * st.mss)
        return min(st.ssthresh, st.cwnd)

    def _classic(self, st: TcpState, acked: int, cwnd_limited: bool) -> None:
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
        self.min_rtt = INF


register(Vegas)
