"""The congestion-control strategy interface (ns-3's TcpCongestionOps, Linux's
tcp_congestion_ops): a small object per flow that reads and writes a `TcpState`.

The sender's state machine decides *when* a loss happened and what to retransmit; the
strategy only decides window sizes. `ssthresh_after_loss` returns a value and never
mutates state, so the sender applies it at the RFC's step.

A strategy class is also a variant's one home (engine.variants): its class attributes are
the traits the rest of the engine asks about (which recovery it runs, whether Mathis'
bound describes it, whether it implies SACK, which traces the recorder keeps for it), so
no module outside its own tests a variant's name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from mypy_extensions import mypyc_attr

from engine.tcp.cc.slowstart import SlowStart, slow_start_for
from engine.tcp.recovery.base import NoRecovery
from engine.tcp.recovery.reno import NewRenoRecovery
from engine.tcp.state import Phase, TcpState

if TYPE_CHECKING:
    from engine.scenario import TcpSpec
    from engine.tcp.rate import DeliveryRate, RateSample


PACING_SS_RATIO = 2.0  # Linux sysctl tcp_pacing_ss_ratio = 200 (%)
PACING_CA_RATIO = 1.2  # Linux sysctl tcp_pacing_ca_ratio = 120 (%)


# A new variant's module subclasses one of these from interpreted code (a test registers a
# toy one), so the compiled build lets interpreted classes extend them.
@mypyc_attr(allow_interpreted_subclasses=True)
class CongestionOps:
    # --- traits: what the rest of the engine knows of the variant ----------------------
    #: The variant's name, `tcp.variant` (engine.variants registers the class under it).
    name: ClassVar[str] = "base"
    #: One line for the docs reference's table of variants.
    summary: ClassVar[str] = ""
    #: False for a fixed-window sender (variant `none`): no cwnd limit at all, hence no
    #: slow start, pacing, fast recovery or SACK recovery either.
    limits_window: ClassVar[bool] = True
    #: Loss is the signal the sending rate answers to, so Mathis' and Padhye's models
    #: describe it (a fixed window's only answer, go-back-N on a timeout, counts too).
    #: False for a strategy that models the path (BBR): its rate is not set by loss.
    loss_based: ClassVar[bool] = True
    #: The variant is defined with SACK (ns-2's Sack1): the receiver sends SACK blocks and
    #: the sender recovers by RFC 6675 whatever `tcp.sack` says.
    implies_sack: ClassVar[bool] = False
    #: The loss-recovery strategy without SACK (engine.tcp.recovery): Linux and ns-3 run
    #: NewReno's under every congestion control.
    recovery: ClassVar[type[NoRecovery]] = NewRenoRecovery
    #: `tcp.slow_start` when the scenario leaves it out (engine.tcp.cc.slowstart).
    default_slow_start: ClassVar[str] = "standard"
    #: Why `tcp.slow_start` does not apply to the variant; empty when it does.
    own_slow_start: ClassVar[str] = ""
    #: The cost estimate's share of Padhye's timeout probability: measured, the variants
    #: that keep a larger window after a loss (or recover by SACK) time out less often.
    timeout_factor: ClassVar[float] = 1.0
    #: Series the recorder keeps for the variant besides every flow's, as (name, unit):
    #: `flow.<id>.<name>`, values from `traced()` after each ACK.
    traces: ClassVar[tuple[tuple[str, str], ...]] = ()

    #: True when the strategy sets cwnd from per-ACK delivery-rate samples (Linux's
    #: `cong_control`, ns-3's `HasCongControl`): the sender then keeps an
    #: `engine.tcp.rate.DeliveryRate` and calls `cong_control` on every ACK.
    rate_based: ClassVar[bool] = False
    #: True when the strategy paces whatever `tcp.pacing` says (BBR, as ns-3 forces it).
    always_paces: ClassVar[bool] = False
    #: True when the strategy draws random numbers: the flow then sets `random` to a
    #: stream of its own (engine.kernel.stream), so runs stay deterministic.
    randomized: ClassVar[bool] = False
    #: The flow's own random stream (`random.random`) when `randomized`.
    random: Callable[[], float] | None = None
    #: True when the strategy wants every ACK's RTT sample (`on_ack_rtt`), as Linux's
    #: pkts_acked hook has them; the sender then computes one per ACK of new data.
    ack_samples = False

    def __init__(self, spec: TcpSpec) -> None:
        self.spec = spec
        #: how slow start grows and ends (`tcp.slow_start`); the sender feeds it RTT
        #: samples when it asks for them.
        self.slow_start: SlowStart = slow_start_for(spec, self.default_slow_start)

    @classmethod
    def decrease_factor(cls, spec: TcpSpec) -> float:
        """The window kept on a loss, as a fraction (RFC 5681 eq. 4: one half); what the
        cost estimate's AIMD model reads."""
        return 0.5

    @classmethod
    def sack_permitted(cls, spec: TcpSpec) -> bool:
        """Both ends use SACK (RFC 2018): the receiver reports blocks, the SYN offers it."""
        return spec.sack or cls.implies_sack

    @classmethod
    def sack_would_add(cls, spec: TcpSpec) -> bool:
        """Turning `tcp.sack` on would change the flow: SACK is off and the variant has a
        fast recovery that could use it (the advisor's remedies ask, never by name)."""
        return not cls.sack_permitted(spec) and cls.recovery is not NoRecovery

    @classmethod
    def sack_recovery(cls, spec: TcpSpec) -> bool:
        """The sender recovers by RFC 6675: SACK is on and the variant has fast recovery
        at all (a fixed window's sender only has its timer)."""
        return cls.sack_permitted(spec) and cls.recovery is not NoRecovery

    def traced(self) -> tuple[float, ...]:
        """The values of `traces`, in their order, now."""
        return ()

    def init(self, st: TcpState) -> None:
        """RFC 5681 3.1: IW from `initial_cwnd`, ssthresh arbitrarily high."""

    def on_ack(self, st: TcpState, acked: int, cwnd_limited: bool) -> None:
        """An ACK of new data outside recovery. The window grows only while cwnd is what
        limits sending (RFC 7661's principle, Linux's tcp_is_cwnd_limited); strategies
        that also shrink the window on ACKs (Vegas) override this."""
        if cwnd_limited:
            self.increase_window(st, acked)

    def increase_window(self, st: TcpState, acked: int) -> None:
        """Window growth on an ACK of new data (Linux cong_avoid)."""
        raise NotImplementedError

    def on_congestion_event(self, st: TcpState) -> None:
        """A loss was detected (fast retransmit or the first timeout of a segment); called
        before `ssthresh_after_loss`, with cwnd still as it was (CUBIC records W_max)."""

    def ssthresh_after_loss(self, st: TcpState) -> int:
        """RFC 5681 eq. (4): ssthresh = max(FlightSize / 2, 2 * SMSS)."""
        return max(st.flight_size // 2, 2 * st.mss)

    def loss_window(self, st: TcpState) -> int:
        """RFC 5681 3.1: after a retransmission timeout cwnd is the loss window, 1 SMSS."""
        return st.mss

    def on_rtt_sample(self, st: TcpState, rtt: float) -> None:
        """A valid RTT measurement (Karn's rule already applied)."""

    def on_ack_rtt(self, st: TcpState, rtt: float) -> None:
        """Every ACK of new data, before it is processed: the RTT of the oldest segment it
        covers (echoed by the receiver, as the timestamps option would), when
        `ack_samples`."""

    def on_state_change(self, st: TcpState, phase: Phase) -> None:
        """Notify-only: the sender moved to `phase`."""

    def on_recovery_exit(self, st: TcpState) -> None:
        """Fast recovery ended by a full ACK; cwnd has been set by the recovery strategy."""

    def cong_control(self, st: TcpState, rs: RateSample, rate: DeliveryRate, in_flight: int) -> int:
        """Only when `rate_based`: an ACK was processed (recovery included); return the
        congestion window in Linux's sense, the bytes allowed in flight (`in_flight`
        excludes what is known delivered out of order or lost). `rs` is the ACK's
        `RateSample`, `rate` the connection's `DeliveryRate`."""
        raise NotImplementedError

    def pacing_rate(self, st: TcpState) -> float:
        """Bytes of payload per second the sender paces at when pacing is on; 0: no pacing
        yet. Linux's tcp_update_pacing_rate (and ns-3's): the current rate cwnd/srtt times
        2 (tcp_pacing_ss_ratio) while cwnd < ssthresh / 2, else times 1.2
        (tcp_pacing_ca_ratio), so slow start can still double per round trip."""
        if st.srtt <= 0:
            return 0.0
        ratio = PACING_SS_RATIO if st.cwnd < st.ssthresh / 2 else PACING_CA_RATIO
        outstanding = st.snd_max - st.snd_una
        return ratio * (st.cwnd if st.cwnd > outstanding else outstanding) / st.srtt


@mypyc_attr(allow_interpreted_subclasses=True)
class RenoGrowth(CongestionOps):
    """RFC 5681 3.1 window growth shared by Tahoe, Reno, NewReno and SACK senders (their
    variants, in engine.tcp.cc.reno, differ only in recovery), and the slow start of
    the variants that keep Reno's (CUBIC, Vegas).

    `tcp.ack_counting` says what an ACK is worth. `acks`, RFC 5681 to the letter (ns-2,
    OPNET, ns-3's TcpNewReno): each ACK adds min(N, SMSS) in slow start (eq. 2) and
    SMSS*SMSS/cwnd in congestion avoidance (eq. 3), so an ACK of two segments is worth
    one. `segments`, Linux's (tcp_reno_cong_avoid):

        if tcp_in_slow_start(tp):                 # cwnd < ssthresh
            acked = tcp_slow_start(tp, acked)     # cwnd = min(cwnd + acked, ssthresh),
            if not acked: return                  # the rest is returned
        tcp_cong_avoid_ai(tp, cwnd, acked)        # snd_cwnd_cnt += acked; one segment
                                                  # per cwnd segments acknowledged

    which is RFC 3465's byte counting (with no limit L on one ACK) in both phases.
    """

    name = "reno"

    def __init__(self, spec: TcpSpec) -> None:
        super().__init__(spec)
        self.count_segments = spec.ack_counting == "segments"
        #: Bytes acknowledged toward the next segment of growth (Linux's snd_cwnd_cnt).
        self.cwnd_cnt = 0

    def increase_window(self, st: TcpState, acked: int) -> None:
        if st.cwnd < st.ssthresh:
            acked = self.slow_start_grow(st, acked)
            if not acked:
                return
        self.congestion_avoidance(st, acked)

    def slow_start_grow(self, st: TcpState, acked: int) -> int:
        """Slow start on an ACK of `acked` bytes; returns what is left for congestion
        avoidance (counting segments, what took cwnd past ssthresh)."""
        # By `slow_start.increment`: HyStart++'s conservative phase grows less.
        grow = self.slow_start.increment(st, acked)
        if not self.count_segments:
            st.cwnd += grow  # eq. 2; cwnd may pass ssthresh by less than a segment
            return 0
        room = st.ssthresh - st.cwnd
        if grow <= room:
            st.cwnd += grow
            return 0
        st.cwnd = st.ssthresh
        return acked - room if acked > room else 0

    def congestion_avoidance(self, st: TcpState, acked: int) -> None:
        """Growth past ssthresh: one segment per round trip."""
        mss = st.mss
        if not self.count_segments:
            # Eq. 3: cwnd += SMSS*SMSS/cwnd per ACK, at least 1 byte.
            st.cwnd += max(1, mss * mss // st.cwnd)
            return
        # tcp_cong_avoid_ai(w = cwnd), in bytes: credits banked at a larger window are
        # spent gently (one segment), then one segment per window acknowledged.
        w = st.cwnd
        if self.cwnd_cnt >= w:
            self.cwnd_cnt = 0
            st.cwnd += mss
        self.cwnd_cnt += acked
        if self.cwnd_cnt >= w:
            delta = self.cwnd_cnt // w
            self.cwnd_cnt -= delta * w
            st.cwnd += delta * mss

    def on_congestion_event(self, st: TcpState) -> None:
        self.cwnd_cnt = 0  # tcp_enter_loss / a cwnd reduction start counting afresh
