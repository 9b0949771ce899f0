"""What is in flight, as Linux's tcp_packets_in_flight counts it, and the hook through
which a rate-based strategy (BBR, Linux's cong_control) sets the window from it on every
ACK. Both read the sender's state and its recovery strategy's view of the holes, which the
sender passes as they are (concrete objects: the compiled engine reads them natively on
every ACK; the sender imports this module, which therefore does not name it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.tcp.state import Phase

if TYPE_CHECKING:
    from engine.packet import Packet
    from engine.tcp.cc.base import CongestionOps
    from engine.tcp.rate import DeliveryRate
    from engine.tcp.recovery.base import NoRecovery
    from engine.tcp.state import TcpState


def in_flight(st: TcpState, recovery: NoRecovery, rate: DeliveryRate | None) -> int:
    """Bytes believed in the network: sent, less what is acknowledged, known delivered
    out of order, or deemed lost (after a timeout, or marked by the recovery strategy)."""
    if st.phase == Phase.LOSS:
        # What go-back-N has resent; it skipped what the receiver SACKed (the blocks
        # crossed are those of the resent stretch, holes the resends have yet to fill).
        flight = st.snd_nxt - st.snd_una
        if recovery.scoreboard and flight > 0:
            flight -= recovery.board.sacked.covered_between(st.snd_una, st.snd_nxt)
        return flight
    if st.phase == Phase.RECOVERY and recovery.scoreboard:
        return recovery.pipe(st)
    assert rate is not None  # asked by rate-based strategies only
    return st.snd_max - st.snd_una - rate.dup_bytes


def cong_control(
    st: TcpState,
    cc: CongestionOps,
    recovery: NoRecovery,
    rate: DeliveryRate,
    pkt: Packet,
    acked: int,
    dupack: bool,
    prior_in_flight: int,
) -> None:
    """A rate-based strategy sets cwnd from the ACK's delivery-rate sample, after the
    recovery strategy (whose window changes it overrides), as Linux's cong_control.
    Its cwnd counts bytes in flight; the sender's window test counts from snd_una
    (or, in an RFC 6675 recovery, the pipe), so what is known delivered out of order
    is added back."""
    rs = rate.on_ack(pkt, st.now, acked, dupack, st.mss, st.snd_max - st.snd_una, prior_in_flight)
    flight = in_flight(st, recovery, rate)
    cwnd = cc.cong_control(st, rs, rate, flight)
    if not (st.phase == Phase.RECOVERY and recovery.paces_recovery):
        beyond = st.snd_nxt - st.snd_una - flight
        if beyond > 0:
            cwnd += beyond
    st.cwnd = cwnd
