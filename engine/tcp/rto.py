"""The retransmission timer's expiry on data (RFC 6298 5.4-5.7, RFC 5681 3.1, RFC 6582 3.2):
ssthresh and the loss window from the variant, the recovery strategy told, and go-back-N
from the first unacknowledged byte."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from engine.tcp.recovery.base import Sender
from engine.tcp.state import Phase

if TYPE_CHECKING:
    from engine.accounting import FlowClock
    from engine.kernel import Timer
    from engine.tcp.cc.base import CongestionOps
    from engine.tcp.rate import DeliveryRate
    from engine.tcp.recovery.base import NoRecovery
    from engine.tcp.rtt import RttEstimator


class TimingOut(Sender, Protocol):
    """What a timeout reads and writes of the sender (engine.tcp.sender, which calls this
    module and is therefore named by this protocol), beyond what recovery may."""

    cc: CongestionOps
    recovery: NoRecovery
    rate: DeliveryRate | None
    rtt: RttEstimator
    timer: Timer
    clock: FlowClock
    timeouts: int
    #: snd_una at the last timeout: a segment timing out again keeps its ssthresh.
    rto_una: int | None

    def congestion_event(self) -> None: ...

    def in_flight(self) -> int: ...

    def show_state(self) -> None: ...


def data_timeout(snd: TimingOut) -> None:
    st = snd.st
    if st.snd_una >= st.snd_max:
        return
    snd.timeouts += 1
    st.now = snd.env.now
    snd.clock.timeout(st.now, snd.timer.started)
    # RFC 5681 3.1: ssthresh from FlightSize on the first timeout of a segment; held
    # constant when the same segment times out again.
    if snd.rto_una != st.snd_una:
        snd.congestion_event()
    snd.rto_una = st.snd_una
    if snd.rate is not None:
        snd.rate.on_timeout(snd.in_flight())  # tcp_enter_loss: all of it deemed lost
    snd.recovery.on_timeout(snd)
    st.cwnd = snd.cc.loss_window(st)
    st.recover = st.snd_max  # RFC 6582 3.2 step 4
    snd.dupacks = 0
    snd.set_phase(Phase.LOSS)
    snd.cc.slow_start.on_timeout(st)
    snd.rtt.backoff()  # RFC 6298 5.5
    snd.go_back_n()  # 5.4: retransmit the earliest unacknowledged segment first
    snd.try_send()
    snd.show_state()
