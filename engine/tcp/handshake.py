"""The sender's side of the three-way handshake: the SYN, its retries on the retransmission
timer, and the SYN-ACK that opens the connection (RFC 9293 3.5, RFC 6298 2.2 and 5.7)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from engine.packet import Kind, Owner, Packet, Path
from engine.protocol import TCP_IP_HEADERS

if TYPE_CHECKING:
    from engine.accounting import FlowClock
    from engine.kernel import Kernel, Timer
    from engine.scenario import TcpSpec
    from engine.tcp.rtt import RttEstimator
    from engine.tcp.state import TcpState


class Handshaking(Protocol):
    """What the handshake reads and writes of the sender (engine.tcp.sender, which calls
    this module and is therefore named by this protocol)."""

    env: Kernel
    flow: Owner
    spec: TcpSpec
    path: Path
    st: TcpState
    rtt: RttEstimator
    timer: Timer
    clock: FlowClock
    established: bool
    rwnd: int
    syn_sent_at: float | None
    syn_retries: int
    timeouts: int

    def try_send(self) -> None: ...


def send_syn(snd: Handshaking) -> None:
    now = snd.env.now
    pkt = Packet(snd.flow, Kind.SYN, TCP_IP_HEADERS + snd.spec.syn_options, snd.path, now)
    snd.syn_sent_at = now if snd.syn_retries == 0 else None  # Karn: a resent SYN is not timed
    snd.timer.start(snd.rtt.rto)
    snd.path[0].accept(pkt)


def syn_timeout(snd: Handshaking) -> None:
    """The SYN (or its SYN-ACK) was lost: back off and send it again."""
    snd.syn_retries += 1
    snd.timeouts += 1
    snd.clock.timeout(snd.env.now, snd.timer.started)
    snd.rtt.backoff()
    send_syn(snd)


def on_synack(snd: Handshaking, pkt: Packet) -> None:
    if snd.established:
        return
    snd.established = True
    snd.rwnd = pkt.wnd
    snd.timer.stop()
    snd.st.now = snd.env.now
    sent_at = snd.syn_sent_at
    if sent_at is None and snd.spec.timestamps:
        sent_at = pkt.tsecr  # the SYN-ACK echoes the SYN that arrived, resent or not
    if sent_at is not None:
        # The SYN's round trip seeds the RTO estimator (RFC 6298 2.2) and nothing else:
        # a 52 B segment's RTT is not a data segment's, and congestion control taking
        # it for BaseRTT/min RTT would see a queue that is not there.
        snd.rtt.sample(snd.env.now - sent_at)
        snd.st.srtt = snd.rtt.srtt or 0.0
    elif snd.syn_retries:
        snd.rtt.reset_for_data_after_syn_loss()
    snd.try_send()
