"""BBR v1 (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue 2016),
as Linux's tcp_bbr.c and ns-3's TcpBbr run it.

BBR models the path instead of reacting to loss. On every ACK (`cong_control`):

    BtlBw  = windowed max of delivery-rate samples over 10 round trips
    RTprop = windowed min of RTT samples over 10 s
    pacing_rate = pacing_gain * BtlBw * (1 - 1%)
    cwnd = cwnd_gain * BtlBw * RTprop + 3 MSS            (+ 2 MSS while probing)

and four modes set the gains:

- STARTUP: both gains 2/ln 2 (the pacing rate doubles per round, as slow start does),
  until three rounds in a row fail to raise BtlBw by 25% ("the pipe is full");
- DRAIN: pacing gain 1/2.885, until in-flight falls to one BDP;
- PROBE_BW: cwnd gain 2 and pacing gains cycling 1.25, 0.75, 1 x 6, a phase per RTprop,
  starting at a random phase other than 0.75;
- PROBE_RTT: when RTprop has not been lowered for 10 s, cwnd 4 segments for at least
  200 ms and a round trip, then back to PROBE_BW (or STARTUP if the pipe never filled).

Loss response (v1): the first round of fast recovery conserves packets (cwnd = in flight
+ newly delivered), later rounds may grow toward the target; on leaving recovery cwnd
returns to at least its value before; a timeout leaves 1 segment to grow back from.
Windows and rates are in bytes (Linux counts packets).

cwnd's target also allows for ACK aggregation: the most data ACKed beyond what BtlBw
explains since an epoch began (extra_acked, over 5-10 rounds, at most 100 ms of BtlBw),
which delayed and stretched ACKs need.

With `tcp.bbr_lt_bw` (the default, as Linux) BBR also keeps Linux's long-term bandwidth
estimate (`bbr_ltbw.py`): through a token-bucket policer it paces at the policed rate.

Not modelled: TSO-sized quanta (3 MSS as ns-3 has it), idle restarts (bulk transfers do
not idle), and BBR v2/v3.
"""

from __future__ import annotations

import math
import random
from enum import IntEnum
from typing import TYPE_CHECKING

from engine.tcp.cc.base import CongestionOps
from engine.tcp.cc.bbr_ltbw import LongTermBw
from engine.tcp.minmax import WindowedMax
from engine.tcp.state import Phase, TcpState
from engine.variants import register

if TYPE_CHECKING:
    from engine.scenario import TcpSpec
    from engine.tcp.rate import DeliveryRate, RateSample


HIGH_GAIN = 2 / math.log(2)  # 2.885: the smallest gain that doubles the rate per round
DRAIN_GAIN = 1 / HIGH_GAIN
CWND_GAIN = 2.0
PACING_GAIN_CYCLE = (1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
CYCLE_RAND = 7  # the first PROBE_BW phase is drawn among 7 (never the 0.75 one)
BW_WINDOW_ROUNDS = 10  # CYCLE_LEN + 2
MIN_RTT_WINDOW = 10.0  # s
PROBE_RTT_DURATION = 0.2  # s
CWND_MIN_SEGMENTS = 4  # bbr_cwnd_min_target
FULL_BW_THRESH = 1.25
FULL_BW_ROUNDS = 3
PACING_MARGIN = 0.01  # pace 1% below the estimate, to keep the bottleneck queue small
QUANTA_SEGMENTS = 3  # one segment each in the sender's qdisc, its NIC, the receiver
INIT_CWND_SEGMENTS = 10  # Linux's TCP_INIT_CWND: slow start at least until this many
EXTRA_ACKED_GAIN = 1.0
EXTRA_ACKED_WINDOW_ROUNDS = 5  # the max of extra_acked over 5-10 round trips
EXTRA_ACKED_MAX_TIME = 0.1  # s of BtlBw: the most cwnd grows for aggregation
ACK_EPOCH_RESET_SEGMENTS = 1 << 20


class Mode(IntEnum):
    """BBR's modes, numbered as Linux's enum bbr_mode (the `bbr_state` series)."""

    STARTUP = 0
    DRAIN = 1
    PROBE_BW = 2
    PROBE_RTT = 3


class Bbr(CongestionOps):
    name = "bbr"
    summary = "BBR v1: paced at its estimate of the path's bandwidth; not loss-based"
    loss_based = False
    own_slow_start = "bbr leaves STARTUP by its own rule (three rounds without 25% more bandwidth)"
    # The mode, BtlBw and, policed, the long-term rate in use (0 when none).
    traces = (("bbr_state", "state"), ("bbr_bw", "bit/s"), ("bbr_lt_bw", "bit/s"))
    rate_based = True
    always_paces = True
    randomized = True

    def __init__(self, spec: TcpSpec) -> None:
        super().__init__(spec)
        # The flow sets its own. Declared as in CongestionOps: mypyc wants one type per
        # attribute along the class hierarchy.
        self.random = random.Random(0).random
        self.mode = Mode.STARTUP
        self.bw = WindowedMax()
        self.min_rtt = math.inf
        self.min_rtt_stamp = 0.0
        self.round_count = 0
        self.next_round_delivered = 0
        self.round_start = False
        self.full_bw = 0.0
        self.full_bw_count = 0
        self.full_bw_reached = False
        self.pacing_gain = HIGH_GAIN
        self.cwnd_gain = HIGH_GAIN
        self.cycle_index = 0
        self.cycle_stamp = 0.0
        self.probe_rtt_done_stamp: float | None = None
        self.probe_rtt_round_done = False
        self.prior_cwnd = 0
        self.prev_phase = Phase.OPEN
        self.packet_conservation = False
        self.has_seen_rtt = False
        self.pacing = 0.0  # bytes/s
        self.cwnd = 0  # bytes allowed in flight (Linux's snd_cwnd)
        self.mss = 0
        self.initial_cwnd = 0
        self.delivered_time = 0.0  # of the connection, at the last ACK
        self.extra_acked: list[float] = [0, 0]  # bytes, two windows of EXTRA_ACKED_WINDOW_ROUNDS
        self.extra_acked_index = 0
        self.extra_acked_rounds = 0
        self.ack_epoch_start = 0.0
        self.ack_epoch_acked = 0
        #: Linux's policer detection (lt_bw), when `tcp.bbr_lt_bw`.
        self.lt: LongTermBw | None = LongTermBw() if spec.bbr_lt_bw else None
        #: The connection's delivery counters, known from the first ACK on.
        self.rate: DeliveryRate | None = None

    def init(self, st: TcpState) -> None:
        self.cwnd = st.cwnd
        self.mss = st.mss
        self.initial_cwnd = st.initial_cwnd
        self._init_pacing_rate(st)

    # --- hooks the sender calls --------------------------------------------------------

    def on_ack(self, st: TcpState, acked: int, cwnd_limited: bool) -> None:
        """cwnd is set in `cong_control`, on every ACK."""

    def increase_window(self, st: TcpState, acked: int) -> None:
        pass

    def on_congestion_event(self, st: TcpState) -> None:
        self._save_cwnd()  # bbr_ssthresh: remember cwnd for the end of recovery

    def ssthresh_after_loss(self, st: TcpState) -> int:
        return st.ssthresh  # BBR does not reduce on loss; ssthresh is left as it was

    def on_state_change(self, st: TcpState, phase: Phase) -> None:
        if phase == Phase.LOSS:
            # bbr_set_state(TCP_CA_Loss): cwnd is the loss window (1 segment, from which
            # it grows back toward the target); full-pipe detection starts over; the
            # timeout is a lossy end of a round to the policer detection.
            self.cwnd = st.cwnd
            self.prev_phase = Phase.LOSS
            self.full_bw = 0.0
            self.round_start = True
            if self.lt is not None and self.rate is not None:
                self.lt.sample(self.rate, 1, False, True, self.mode == Mode.PROBE_BW)

    def traced(self) -> tuple[float, ...]:
        """The mode (numbered as Linux's enum bbr_mode), BtlBw and lt_bw in bit/s."""
        lt = self.lt
        policed = lt.bw * 8 if lt is not None and lt.use else 0.0
        return (float(self.mode), self.bw.get() * 8, policed)

    def pacing_rate(self, st: TcpState) -> float:
        if not self.has_seen_rtt and st.srtt > 0:
            self._init_pacing_rate(st)
        return self.pacing

    def cong_control(self, st: TcpState, rs: RateSample, rate: DeliveryRate, in_flight: int) -> int:
        """bbr_main: update the model and the mode, then the pacing rate and cwnd."""
        now = st.now
        self.rate = rate
        self.delivered_time = rate.delivered_time
        self._update_bw(rs, rate)
        self._update_ack_aggregation(rs)
        self._update_cycle_phase(rs)
        self._check_full_bw_reached(rs)
        self._check_drain(st, in_flight)
        self._update_min_rtt(rs, rate, in_flight, now)
        self._update_gains()
        bw = self._bw()
        self._set_pacing_rate(st, bw, self.pacing_gain)
        self._set_cwnd(st, rs, rate, in_flight, bw)
        return self.cwnd

    # --- the model ---------------------------------------------------------------------

    def _bw(self) -> float:
        """bbr_bw: the policed rate once a policer is detected, else BtlBw."""
        lt = self.lt
        return lt.bw if lt is not None and lt.use else self.bw.get()

    def _update_bw(self, rs: RateSample, rate: DeliveryRate) -> None:
        self.round_start = False
        if rs.delivered < 0 or rs.interval <= 0:
            return  # not a valid sample
        if rs.prior_delivered >= self.next_round_delivered:
            # The segment sampled was sent after the round began: a round trip has passed.
            self.next_round_delivered = rate.delivered
            self.round_count += 1
            self.round_start = True
            self.packet_conservation = False
        lt = self.lt
        if lt is not None and lt.sample(
            rate, rs.losses, rs.app_limited, self.round_start, self.mode == Mode.PROBE_BW
        ):
            self._reset_probe_bw_mode()  # 48 round trips on lt_bw: probe again
        bw = rs.delivered / rs.interval
        # An application-limited sample says little about the path unless it beats the
        # estimate.
        if not rs.app_limited or bw >= self.bw.get():
            self.bw.update(BW_WINDOW_ROUNDS, self.round_count, bw)

    def _update_ack_aggregation(self, rs: RateSample) -> None:
        """bbr_update_ack_aggregation: how much more than BtlBw x elapsed has been ACKed
        since the ACK rate last fell to BtlBw's."""
        acked = rs.acked_sacked
        if acked <= 0 or rs.delivered < 0 or rs.interval <= 0:
            return
        if self.round_start:
            self.extra_acked_rounds = min(31, self.extra_acked_rounds + 1)
            if self.extra_acked_rounds >= EXTRA_ACKED_WINDOW_ROUNDS:
                self.extra_acked_rounds = 0
                self.extra_acked_index = i = 1 - self.extra_acked_index
                self.extra_acked[i] = 0
        expected = self._bw() * (self.delivered_time - self.ack_epoch_start)
        if (
            self.ack_epoch_acked <= expected
            or self.ack_epoch_acked + acked >= ACK_EPOCH_RESET_SEGMENTS * self.mss
        ):
            # The ACK rate fell to the estimate (or the epoch is very old): a new epoch.
            self.ack_epoch_acked = 0
            self.ack_epoch_start = self.delivered_time
            expected = 0.0
        self.ack_epoch_acked += acked
        extra = min(self.ack_epoch_acked - expected, self.cwnd)
        i = self.extra_acked_index
        if extra > self.extra_acked[i]:
            self.extra_acked[i] = extra

    def _aggregation_cwnd(self) -> float:
        if not self.full_bw_reached:
            return 0.0
        extra = EXTRA_ACKED_GAIN * max(self.extra_acked)
        most = self._bw() * EXTRA_ACKED_MAX_TIME
        return extra if extra < most else most

    def _update_cycle_phase(self, rs: RateSample) -> None:
        if self.mode == Mode.PROBE_BW and self._is_next_cycle_phase(rs):
            self._advance_cycle_phase()

    def _is_next_cycle_phase(self, rs: RateSample) -> bool:
        full_length = self.delivered_time - self.cycle_stamp > self.min_rtt
        gain = self.pacing_gain
        if gain == 1.0:
            return full_length
        if gain > 1.0:
            # Probe until in flight reaches gain x BDP, at least one RTprop, or a loss says
            # the path may not hold that much.
            return full_length and (
                rs.losses > 0 or rs.prior_in_flight >= self._inflight(self.bw.get(), gain)
            )
        # Drain what the probe queued: until in flight is down to one BDP, or one RTprop.
        return full_length or rs.prior_in_flight <= self._inflight(self.bw.get(), 1.0)

    def _advance_cycle_phase(self) -> None:
        self.cycle_index = (self.cycle_index + 1) % len(PACING_GAIN_CYCLE)
        self.cycle_stamp = self.delivered_time

    def _check_full_bw_reached(self, rs: RateSample) -> None:
        if self.full_bw_reached or not self.round_start or rs.app_limited:
            return
        bw = self.bw.get()
        if bw >= self.full_bw * FULL_BW_THRESH:
            self.full_bw = bw
            self.full_bw_count = 0
            return
        self.full_bw_count += 1
        self.full_bw_reached = self.full_bw_count >= FULL_BW_ROUNDS

    def _check_drain(self, st: TcpState, in_flight: int) -> None:
        if self.mode == Mode.STARTUP and self.full_bw_reached:
            self.mode = Mode.DRAIN
            st.ssthresh = self._inflight(self.bw.get(), 1.0)
        if self.mode == Mode.DRAIN and in_flight <= self._inflight(self.bw.get(), 1.0):
            self._reset_probe_bw_mode()  # the queue STARTUP built is drained

    def _update_min_rtt(
        self, rs: RateSample, rate: DeliveryRate, in_flight: int, now: float
    ) -> None:
        expired = now > self.min_rtt_stamp + MIN_RTT_WINDOW
        # Strictly lower, as Linux: a sample equal to RTprop does not renew it, so a flow
        # that keeps a queue still visits PROBE_RTT every 10 s.
        if rs.rtt >= 0 and (rs.rtt < self.min_rtt or expired):
            self.min_rtt = rs.rtt
            self.min_rtt_stamp = now
        if expired and self.mode != Mode.PROBE_RTT:
            self.mode = Mode.PROBE_RTT  # dip: drain the queue, measure RTprop afresh
            self._save_cwnd()
            self.probe_rtt_done_stamp = None
        if self.mode != Mode.PROBE_RTT:
            return
        # Samples taken at 4 segments in flight are not the path's rate.
        rate.mark_app_limited(in_flight)
        if self.probe_rtt_done_stamp is None and in_flight <= CWND_MIN_SEGMENTS * self.mss:
            self.probe_rtt_done_stamp = now + PROBE_RTT_DURATION
            self.probe_rtt_round_done = False
            self.next_round_delivered = rate.delivered
        elif self.probe_rtt_done_stamp is not None:
            if self.round_start:
                self.probe_rtt_round_done = True
            if self.probe_rtt_round_done and now > self.probe_rtt_done_stamp:
                self.min_rtt_stamp = now  # wait another 10 s before the next dip
                self.cwnd = max(self.cwnd, self.prior_cwnd)
                if self.full_bw_reached:
                    self._reset_probe_bw_mode()
                else:
                    self.mode = Mode.STARTUP

    def _reset_probe_bw_mode(self) -> None:
        self.mode = Mode.PROBE_BW
        draw = self.random
        assert draw is not None  # set in __init__
        self.cycle_index = len(PACING_GAIN_CYCLE) - 1 - int(draw() * CYCLE_RAND)
        self._advance_cycle_phase()

    def _update_gains(self) -> None:
        mode = self.mode
        if mode == Mode.STARTUP:
            self.pacing_gain = self.cwnd_gain = HIGH_GAIN
        elif mode == Mode.DRAIN:
            self.pacing_gain, self.cwnd_gain = DRAIN_GAIN, HIGH_GAIN
        elif mode == Mode.PROBE_BW:
            # Policed (lt_bw in use): pace at the policed rate, no probing above it.
            lt = self.lt
            gain = 1.0 if lt is not None and lt.use else PACING_GAIN_CYCLE[self.cycle_index]
            self.pacing_gain, self.cwnd_gain = gain, CWND_GAIN
        else:
            self.pacing_gain = self.cwnd_gain = 1.0

    # --- the control -------------------------------------------------------------------

    def _inflight(self, bw: float, gain: float, extra: float = 0.0) -> int:
        """gain x BDP (+ `extra`) plus the quanta (bbr_inflight; InFlight in ns-3), bytes."""
        if self.min_rtt == math.inf:
            return self.initial_cwnd  # no RTT sample yet
        inflight = math.ceil(bw * self.min_rtt * gain + extra) + QUANTA_SEGMENTS * self.mss
        if self.mode == Mode.PROBE_BW and self.cycle_index == 0:
            inflight += 2 * self.mss  # so gain cycling lifts in flight above a small BDP
        return inflight

    def _init_pacing_rate(self, st: TcpState) -> None:
        """high_gain x cwnd / RTT, with a nominal 1 ms before any RTT sample. RTprop starts
        from the handshake's round trip, as Linux's tcp_min_rtt and ns-3's lastRtt do."""
        rtt = st.srtt if st.srtt > 0 else 0.001
        if st.srtt > 0:
            self.has_seen_rtt = True
            if st.srtt < self.min_rtt:
                self.min_rtt = st.srtt
                self.min_rtt_stamp = st.now
        self.pacing = HIGH_GAIN * st.cwnd / rtt * (1 - PACING_MARGIN)

    def _set_pacing_rate(self, st: TcpState, bw: float, gain: float) -> None:
        rate = gain * bw * (1 - PACING_MARGIN)
        if not self.has_seen_rtt and st.srtt > 0:
            self._init_pacing_rate(st)
        # Until the pipe is full, never slow down (an early sample may be small).
        if self.full_bw_reached or rate > self.pacing:
            self.pacing = rate

    def _save_cwnd(self) -> None:
        if self.prev_phase < Phase.RECOVERY and self.mode != Mode.PROBE_RTT:
            self.prior_cwnd = self.cwnd
        else:  # recovery or PROBE_RTT have cut cwnd for now: keep the larger
            self.prior_cwnd = max(self.prior_cwnd, self.cwnd)

    def _set_cwnd(
        self, st: TcpState, rs: RateSample, rate: DeliveryRate, in_flight: int, bw: float
    ) -> None:
        """bbr_set_cwnd with bbr_set_cwnd_to_recover_or_restore."""
        mss = self.mss
        cwnd = self.cwnd
        acked = rs.acked_sacked
        if acked:
            if rs.losses > 0:
                cwnd = max(cwnd - rs.losses, mss)
            phase = st.phase
            if phase == Phase.RECOVERY and self.prev_phase != Phase.RECOVERY:
                # The first round of recovery: packet conservation, a round starting now.
                self.packet_conservation = True
                self.next_round_delivered = rate.delivered
                cwnd = in_flight + acked
            elif self.prev_phase >= Phase.RECOVERY and phase < Phase.RECOVERY:
                cwnd = max(cwnd, self.prior_cwnd)  # recovery is over: restore
                self.packet_conservation = False
            self.prev_phase = phase
            if self.packet_conservation:
                cwnd = max(cwnd, in_flight + acked)
            else:
                target = self._inflight(bw, self.cwnd_gain, self._aggregation_cwnd())
                if self.full_bw_reached:
                    cwnd = min(cwnd + acked, target)
                elif cwnd < target or rate.delivered < INIT_CWND_SEGMENTS * mss:
                    cwnd += acked  # slow start toward the target
                cwnd = max(cwnd, CWND_MIN_SEGMENTS * mss)
        if self.mode == Mode.PROBE_RTT:
            cwnd = min(cwnd, CWND_MIN_SEGMENTS * mss)
        self.cwnd = cwnd


register(Bbr)
