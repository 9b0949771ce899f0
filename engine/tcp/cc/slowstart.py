"""Leaving slow start before the first loss, by delay: `tcp.slow_start`.

Standard slow start (RFC 5681) doubles cwnd every round trip until a loss, which on a path
with a deep buffer means a window's worth of losses. Two delay-based exits:

- `HyStart` as Linux's tcp_cubic runs it (hystart_update, cubictcp_acked): from a window
  of 16 segments on, it leaves slow start (ssthresh = cwnd) when
  * the ACK train of the current round (ACKs no more than 2 ms apart) has lasted longer
    than half the connection's smallest RTT (delay_min / 2: the window already fills
    half the path); a paced sender's train must last the whole delay_min, as pacing
    spreads a round's segments over up to half the RTT (Linux halves the threshold only
    when sk_pacing_status is SK_PACING_NONE), or
  * the smallest of the round's first 8 RTT samples exceeds delay_min by
    clamp(delay_min / 8, 4 ms, 16 ms) (a queue is building).
  A round starts when an ACK passes the highest sequence sent at the previous round's
  start. After a retransmission timeout it starts over, delay_min forgotten (Linux's
  bictcp_reset). Linux's allowance for TSO/GSO bursts in the ACK train
  (hystart_ack_delay, at most 1 ms) is left out: the engine sends segment by segment.
  ns-3's TcpCubic differs in two constants and so leaves slow start later: its ACK train
  must last the whole delay_min, and its delay threshold is capped at 1 s, not 16 ms.
- `HyStartPlusPlus`, RFC 9406: per round, the minimum of at least 8 RTT samples; when it
  rises by clamp(lastRoundMinRTT / 8, 4 ms, 16 ms) over the previous round's, Conservative
  Slow Start (CSS) grows cwnd at a quarter of slow start's rate for up to 5 rounds, then
  ssthresh = cwnd. A round in CSS whose minimum falls back below the baseline was a false
  alarm: slow start resumes. Used only in the first slow start; after a loss or a timeout
  the sender falls back to standard slow start (section 4.2).

Growth per ACK is `tcp.ack_counting`'s: every byte the ACK acknowledges (`segments`,
Linux's tcp_slow_start: a delayed ACK of two segments adds two, so the window doubles per
round trip) or RFC 5681's min(N, SMSS) (`acks`: one segment per ACK, x1.5 per round trip
with delayed ACKs). HyStart++'s CSS divides either by 4.

RTT samples are taken on a microsecond clock as Linux's are, and come from every ACK of
new data: the receiver echoes the send time of the
oldest segment it acknowledges (as TCP timestamps would, and as Linux's per-skb transmit
time gives), so delayed ACKs are in the sample as Linux's seq_rtt has them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.tcp.state import TcpState

if TYPE_CHECKING:
    from engine.scenario import TcpSpec


INF = float("inf")


def usec(t: float) -> float:
    """A time on Linux's microsecond clock: equal delays compare equal, whatever the
    floating-point noise of the path's sums."""
    return round(t * 1e6) / 1e6


class SlowStart:
    """Standard slow start: no delay samples, RFC 5681 growth."""

    name = "standard"
    #: True when the sender must pass every ACK's RTT sample (`on_sample`) in slow start.
    samples = False

    def __init__(self, mss: int, paced: bool = False, limit: int = 0) -> None:
        self.mss = mss
        #: The sender paces its segments (`tcp.pacing`): its ACKs come spread out.
        self.paced = paced
        #: The most one ACK adds: SMSS (RFC 5681 eq. 2, the default) or, counting
        #: segments as Linux does, everything it acknowledges (UNLIMITED).
        self.limit = limit or mss

    def on_sample(self, st: TcpState, rtt: float) -> None:
        """An ACK of new data in slow start, with its RTT sample; before cwnd grows."""

    def increment(self, st: TcpState, acked: int) -> int:
        """Bytes cwnd grows by in slow start for `acked` newly acknowledged bytes."""
        return acked if acked < self.limit else self.limit

    def on_congestion(self, st: TcpState) -> None:
        """A loss was detected (fast retransmit or timeout)."""

    def on_timeout(self, st: TcpState) -> None:
        """A retransmission timeout: slow start begins again from the loss window."""


class HyStart(SlowStart):
    name = "hystart"
    samples = True
    LOW_WINDOW = 16  # segments: hystart_low_window
    ACK_DELTA = 0.002  # hystart_ack_delta_us
    MIN_SAMPLES = 8  # HYSTART_MIN_SAMPLES
    DELAY_MIN = 0.004  # HYSTART_DELAY_MIN
    DELAY_MAX = 0.016  # HYSTART_DELAY_MAX

    def __init__(self, mss: int, paced: bool = False, limit: int = 0) -> None:
        super().__init__(mss, paced, limit)
        self.found = False
        self.delay_min = 0.0
        self.round_start = 0.0
        self.last_ack = 0.0
        self.end_seq = 0
        self.curr_rtt = INF
        self.sample_cnt = 0
        #: why slow start ended: "train" or "delay" (read by tests), or "" while it runs.
        self.exit = ""

    def _reset_round(self, st: TcpState) -> None:
        self.round_start = self.last_ack = st.now
        self.end_seq = st.snd_nxt
        self.curr_rtt = INF
        self.sample_cnt = 0

    def on_sample(self, st: TcpState, rtt: float) -> None:
        rtt = usec(rtt)
        if self.delay_min == 0.0 or rtt < self.delay_min:
            self.delay_min = rtt
        if self.found:
            return
        if st.snd_una > self.end_seq:
            self._reset_round(st)
        if st.cwnd < self.LOW_WINDOW * self.mss:
            return
        now = st.now
        if usec(now - self.last_ack) <= self.ACK_DELTA:
            self.last_ack = now
            threshold = self.delay_min if self.paced else self.delay_min / 2
            if usec(now - self.round_start) > threshold:
                self._found(st, "train")
                return
        if rtt < self.curr_rtt:
            self.curr_rtt = rtt
        if self.sample_cnt < self.MIN_SAMPLES:
            self.sample_cnt += 1
        else:
            eta = min(max(self.delay_min / 8, self.DELAY_MIN), self.DELAY_MAX)
            if self.curr_rtt > self.delay_min + eta:
                self._found(st, "delay")

    def _found(self, st: TcpState, why: str) -> None:
        self.found = True
        self.exit = why
        st.ssthresh = st.cwnd

    def increment(self, st: TcpState, acked: int) -> int:
        # cubictcp_cong_avoid: a round ends when the ACK passes end_seq.
        if st.snd_una > self.end_seq:
            self._reset_round(st)
        return acked if acked < self.limit else self.limit

    def on_timeout(self, st: TcpState) -> None:
        self.found = False
        self.exit = ""
        self.delay_min = 0.0
        self._reset_round(st)


class HyStartPlusPlus(SlowStart):
    name = "hystart++"
    samples = True
    MIN_RTT_THRESH = 0.004
    MAX_RTT_THRESH = 0.016
    MIN_RTT_DIVISOR = 8
    N_RTT_SAMPLE = 8
    CSS_GROWTH_DIVISOR = 4
    CSS_ROUNDS = 5

    def __init__(self, mss: int, paced: bool = False, limit: int = 0) -> None:
        super().__init__(mss, paced, limit)
        self.done = False  # standard slow start from now on
        self.window_end = -1
        self.last_round_min = INF
        self.current_round_min = INF
        self.sample_count = 0
        self.css = False
        self.css_baseline = INF
        self.css_rounds = 0
        self.carry = 0  # CSS growth in quarters of a byte not yet applied
        #: rounds started so far, and the round in which CSS began and slow start ended
        #: (read by tests).
        self.rounds = 0
        self.css_entered_round = 0
        self.exit_round = 0

    def on_sample(self, st: TcpState, rtt: float) -> None:
        if self.done:
            return
        rtt = usec(rtt)
        if st.snd_una > self.window_end:
            # A new round: the ACK that covers windowEnd, the SND.NXT of the last round's
            # start (section 4.2; Linux's after(snd_una, end_seq) the same way).
            self.rounds += 1
            self.window_end = st.snd_nxt
            self.last_round_min = self.current_round_min
            self.current_round_min = INF
            self.sample_count = 0
            if self.css:
                self.css_rounds += 1
                if self.css_rounds >= self.CSS_ROUNDS:
                    self.done = True  # CSS_ROUNDS rounds of CSS: congestion avoidance
                    self.exit_round = self.rounds
                    st.ssthresh = st.cwnd
                    return
        if rtt < self.current_round_min:
            self.current_round_min = rtt
        self.sample_count += 1
        if self.sample_count < self.N_RTT_SAMPLE:
            return
        if not self.css:
            last = self.last_round_min
            if self.current_round_min != INF and last != INF:
                thresh = min(
                    max(last / self.MIN_RTT_DIVISOR, self.MIN_RTT_THRESH), self.MAX_RTT_THRESH
                )
                if self.current_round_min >= last + thresh:
                    self.css = True
                    self.css_baseline = self.current_round_min
                    self.css_rounds = 0
                    self.css_entered_round = self.rounds
        elif self.current_round_min < self.css_baseline:
            # The delay rise was spurious: back to slow start.
            self.css = False
            self.css_baseline = INF

    def increment(self, st: TcpState, acked: int) -> int:
        grow = acked if acked < self.limit else self.limit
        if not self.css or self.done:
            return grow
        grow += self.carry
        self.carry = grow % self.CSS_GROWTH_DIVISOR
        return grow // self.CSS_GROWTH_DIVISOR

    def on_congestion(self, st: TcpState) -> None:
        self.done = True
        self.css = False

    def on_timeout(self, st: TcpState) -> None:
        self.done = True
        self.css = False


REGISTRY: dict[str, type[SlowStart]] = {
    "standard": SlowStart,
    "hystart": HyStart,
    "hystart++": HyStartPlusPlus,
}


#: No limit on what one ACK adds in slow start (Linux's tcp_slow_start).
UNLIMITED = 1 << 62


def slow_start_for(spec: TcpSpec, default: str) -> SlowStart:
    """`tcp.slow_start`, or when the scenario leaves it out the variant's `default`
    (its `default_slow_start` trait), growing as `tcp.ack_counting` says."""
    name = spec.slow_start or default
    limit = UNLIMITED if spec.ack_counting == "segments" else spec.mss
    return REGISTRY[name](spec.mss, bool(spec.pacing), limit)
