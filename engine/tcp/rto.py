"""The retransmission timer's expiry on data (RFC 6298 5.4-5.7, RFC 5681 3.1, RFC 6582 3.2):
ssthresh and the loss window from the variant, the recovery strategy told, and go-back-N
from the first unacknowledged byte."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.tcp.state import Phase

if TYPE_CHECKING:  # the sender calls it
    from engine.tcp.sender import TcpSender


def data_timeout(snd: TcpSender) -> None:
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
    if snd.probe is not None:
        snd.probe.on_state(snd)
