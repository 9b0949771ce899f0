"""Hosts as senders, not routers (`Node.egress: backpressure`, Linux's behaviour): a host's
own interface pushes back on its TCP sockets instead of dropping their packets.

In Linux a TCP segment leaves the socket for the qdisc and the device only when two checks
pass (net/ipv4/tcp_output.c, tcp_write_xmit):

- **TCP Small Queues** (tcp_small_queue_check): the socket's bytes in the qdisc and the
  device (sk_wmem_alloc, freed at TX completion) may not exceed max(2 packets, the pacing
  rate >> sk_pacing_shift (10): ~1 ms of it), capped at tcp_limit_output_bytes unless the
  flow is paced. A socket with at most one segment unacknowledged always sends. A
  throttled socket is woken by the completion of its own packets (the TSQ handler).
- **The qdisc's room**: a full qdisc refuses the segment (NET_XMIT_DROP); the segment
  stays in the socket, and TCP enters CWR (tcp_enter_cwr): local congestion, answered as
  a congestion signal once per window, not as a loss on the path.

Here the interface is the `Egress` port the host's link starts with; `SmallQueue` is one
sender's view of it (the sender asks `room()` before each new segment and tells `sent()`
after each data segment), and `HostQueue` is the port's discipline: it admits every
packet of a TCP connection (its socket decided already; retransmissions, ACKs and SYNs are
never held back) and judges UDP datagrams by the configured queue, which drops what does
not fit, as Linux's qdisc drops a datagram (ENOBUFS to the application).

Simplified: the whole CWR reduction is applied at once (ns-3's response to ECE), where
Linux's PRR spreads it over the round trip; truesize is the IP packet's size; BBR, whose
window Linux's CWR does not touch, ignores local congestion.

Cost: nothing for hosts with `egress: drop` and for routers; for a backpressure sender a
bookkeeping entry per data segment, and one event per wake-up while it is held back.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from engine.kernel import Kernel, Timer
from engine.net import Discipline, Egress
from engine.packet import Kind, Packet, Path
from engine.tcp.state import Phase

if TYPE_CHECKING:
    from engine.scenario import TcpSpec
    from engine.tcp.cc.base import CongestionOps
    from engine.tcp.state import TcpState

#: tcp_limit_output_bytes: 4 MB in current Linux (1 MB in 4.x to 6.x kernels before it);
#: it caps an unpaced socket's small queue.
LIMIT_OUTPUT_BYTES = 4 << 20
#: sk_pacing_shift: the small queue holds the pacing rate's bytes >> 10, ~1 ms of them.
PACING_SHIFT = 10


class HostQueue:
    """A backpressure host interface's discipline: TCP packets always join (their socket
    checked for room already), UDP datagrams are judged by the configured queue."""

    def __init__(self, inner: Discipline):
        self.inner = inner
        # Whether a packet finding nothing waiting joins without asking: as `inner` has it.
        self.admits_when_idle: bool = getattr(inner, "admits_when_idle", False)
        self.limit_packets = inner.limit_packets
        self.limit_bytes = inner.limit_bytes

    def admit(self, port: Egress, waiting: int, wire: int, now: float, pkt: Packet) -> bool:
        if pkt.kind != Kind.UDP:
            return True
        return self.inner.admit(port, waiting, wire, now, pkt)


class LocalSender(Protocol):
    """What a small queue reads of its TCP sender when it is made (engine.tcp.sender, which
    holds the queue and is therefore named by this protocol). The queue keeps the sender's
    state record and strategy as the objects they are, read on every segment."""

    path: Path
    spec: TcpSpec
    st: TcpState
    cc: CongestionOps
    pacing: bool
    local: SmallQueue | None

    def try_send(self) -> None: ...


class SmallQueue:
    """One TCP sender's data in its host's interface, and when it may add a segment."""

    __slots__ = (
        "env",
        "port",
        "st",
        "cc",
        "cwr_high",
        "ends",
        "queued",
        "timer",
        "capped",
        "full_packets",
        "headers",
    )

    def __init__(self, env: Kernel, port: Egress, sender: LocalSender):
        self.env = env
        self.port = port
        self.st = sender.st
        self.cc = sender.cc
        self.cwr_high = 0  # local congestion answered until snd_una reaches this
        # (end of transmission, IP bytes) of this sender's packets in the port, in order:
        # the port is FIFO, so they complete in this order.
        self.ends: deque[tuple[float, int]] = deque()
        self.queued = 0  # their bytes: sk_wmem_alloc
        self.timer = Timer(env, sender.try_send)
        self.capped = not sender.pacing  # Linux caps only unpaced sockets' small queues
        self.headers = sender.spec.headers  # of each segment, options included
        self.full_packets = 2 * (sender.spec.payload + self.headers)

    def sent(self, size: int) -> None:
        """A data segment of `size` IP bytes joined the port (at its tail)."""
        self.ends.append((self.port.busy_until, size))
        self.queued += size

    def room(self, length: int) -> bool:
        """Whether the sender may hand the interface a new segment of `length` payload
        bytes now; when not, it is woken when there may be room (and a full queue has
        entered CWR)."""
        now = self.env._now
        ends = self.ends
        while ends and ends[0][0] <= now:
            self.queued -= ends.popleft()[1]
        if self.queued and self._throttled():
            self.timer.start(ends[0][0] - now)
            return False
        port = self.port
        if port.busy_until > now and self._full(port, now, length + self.headers):
            self._enter_cwr()
            # The first waiting packet starts (and leaves the queue) when the port frees.
            self.timer.start(port.next_start() - now)
            return False
        return True

    def _enter_cwr(self) -> None:
        """The interface had no room for a segment: Linux's tcp_enter_cwr on NET_XMIT_DROP,
        once per window. ssthresh from the variant, cwnd down to it at once; `recover` is
        untouched, so a loss found meanwhile is still fast-retransmitted. BBR's window
        ignores it, as Linux's cong_control does."""
        st = self.st
        cc = self.cc
        if st.phase != Phase.OPEN or st.snd_una < self.cwr_high or cc.rate_based:
            return
        self.cwr_high = st.snd_max
        cc.on_congestion_event(st)
        cc.slow_start.on_congestion(st)
        st.ssthresh = cc.ssthresh_after_loss(st)
        if st.cwnd > st.ssthresh:
            st.cwnd = st.ssthresh

    def _throttled(self) -> bool:
        """tcp_small_queue_check: the socket's bytes in the interface exceed its limit."""
        st = self.st
        if st.snd_max - st.snd_una <= st.mss:
            return False  # at most one segment unacknowledged: always sent
        limit = self.full_packets
        if self.queued <= limit:
            return False
        rate = self.cc.pacing_rate(st)
        per_shift = int(rate) >> PACING_SHIFT if rate > 0 else LIMIT_OUTPUT_BYTES
        if per_shift > limit:
            limit = per_shift
        if self.capped and limit > LIMIT_OUTPUT_BYTES:
            limit = LIMIT_OUTPUT_BYTES
        return self.queued > limit

    @staticmethod
    def _full(port: Egress, now: float, size: int) -> bool:
        """The port's queue (its configured limit) has no room for a packet of `size`."""
        waiting = port.waiting(now)
        queue = port.queue
        if queue.limit_packets is not None:
            return waiting >= queue.limit_packets
        assert queue.limit_bytes is not None  # the queue model requires one of the two
        return port.queued_bytes + port.wire(size) > queue.limit_bytes


def hold_back(hosts: set[str], ports: dict[tuple[str, str, str], Egress]) -> None:
    """Give the interfaces of the backpressure `hosts` their discipline (before Frame Relay
    wraps a port's discipline in its own, so that the switch's marking still sees every
    frame)."""
    for port in ports.values():
        if port.src in hosts:
            port.use_queue(HostQueue(port.queue))


def attach_small_queues(env: Kernel, hosts: set[str], senders: Sequence[LocalSender]) -> None:
    """Give each TCP sender leaving one of the backpressure `hosts` its small queue."""
    for sender in senders:
        first = sender.path[0]
        if isinstance(first, Egress) and first.src in hosts:
            sender.local = SmallQueue(env, first, sender)
