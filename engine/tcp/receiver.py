"""The TCP receiver: reassembly, cumulative ACKs, delayed ACKs (RFC 1122 4.2.3.2,
RFC 5681 4.2), the advertised window with RFC 7323 scaling, and SACK blocks (RFC 2018).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.kernel import Timer
from engine.packet import Kind, Owner, Packet, Path, SackBlocks
from engine.protocol import MAX_UNSCALED_WINDOW, MAX_WINDOW_SHIFT, TCP_IP_HEADERS
from engine.tcp.cc import variant
from engine.tcp.ranges import Ranges

if TYPE_CHECKING:
    from engine.kernel import Kernel
    from engine.scenario import TcpSpec

MAX_SACK_BLOCKS = 4  # 40 bytes of options: 2 + 4 * 8 (no timestamps option)
MAX_SACK_BLOCKS_WITH_TIMESTAMPS = 3  # 12 + 2 + 3 * 8 (+ 2 NOPs) = 40 bytes (RFC 2018 3)
MAX_QUICKACKS = 16  # Linux TCP_MAX_QUICKACKS
LINUX_INIT_RCVWND = 10  # Linux TCP_DEFAULT_INIT_RCVWND, segments of 1460 B


def quick_acks(spec: TcpSpec, wnd: int) -> int:
    """How many data segments are ACKed at once when a connection starts.

    Linux (tcp_event_data_recv on the first data segment, tcp_incr_quickack): rcv_wnd /
    (2 * rcv_mss), at least 2, at most TCP_MAX_QUICKACKS; rcv_wnd is then the initial
    receive window, which tcp_select_initial_window caps at 10 segments (of 1460 B for a
    larger MSS), and rcv_mss the first segment's length. ns-3 (TcpSocketBase::
    ProcessSynRcvd sets m_delAckCount to its maximum): the first segment only.
    """
    mode = spec.delayed_ack.quickack
    if mode == "off" or not spec.delayed_ack.enabled:
        return 0
    if mode == "ns3":
        return 1
    mss = spec.payload  # rcv_mss: the first segment's length
    init_segments = LINUX_INIT_RCVWND if mss <= 1460 else max(1460 * LINUX_INIT_RCVWND // mss, 2)
    rcv_wnd = min(wnd, init_segments * mss)
    return min(max(rcv_wnd // (2 * mss), 2), MAX_QUICKACKS)


def window_shift(rcv_buf: int) -> int:
    """RFC 7323 2.3: the smallest shift that fits the buffer into the 16-bit field."""
    shift = 0
    while (rcv_buf >> shift) > MAX_UNSCALED_WINDOW and shift < MAX_WINDOW_SHIFT:
        shift += 1
    return shift


def advertised_window(spec: TcpSpec) -> int:
    """The window in bytes the receiver can advertise for a given TcpSpec."""
    if not spec.window_scaling:
        return min(spec.rcv_buf, MAX_UNSCALED_WINDOW)
    shift = window_shift(spec.rcv_buf)
    return min(spec.rcv_buf >> shift, MAX_UNSCALED_WINDOW) << shift


def effective_window(spec: TcpSpec) -> int:
    """The largest flight the receiver's advertised window and the send buffer allow: what
    the cost estimate, the diagnosis and the scenario's warnings all reason with."""
    w = advertised_window(spec)
    return w if spec.snd_buf is None else min(w, spec.snd_buf)


class TcpReceiver:
    __slots__ = (
        "env",
        "flow",
        "path",
        "wnd",
        "sack",
        "delack_enabled",
        "delack_count",
        "delack_timeout",
        "timer",
        "rcv_nxt",
        "ooo",
        "recent",
        "pending",
        "latest",
        "quick",
        "echo_at",
        "syn_options",
        "headers",
        "max_sack_blocks",
        "timestamps",
        "ts_recent",
        "last_ack_sent",
        "sent",
        "waits",
    )

    def __init__(self, env: Kernel, flow: Owner, spec: TcpSpec, path: Path):
        self.env = env
        self.flow = flow
        self.path = path
        self.wnd = advertised_window(spec)
        self.sack = variant(spec.variant).sack_permitted(spec)
        self.delack_enabled = spec.delayed_ack.enabled
        self.delack_count = spec.delayed_ack.count
        self.delack_timeout = spec.delayed_ack.timeout
        self.timer = Timer(env, self.send_ack)
        self.rcv_nxt = 0
        self.ooo = Ranges()  # out-of-order data held above rcv_nxt
        self.recent: tuple[int, int] | None = None  # the block of the latest arrival
        self.pending = 0  # in-order segments not yet acknowledged
        self.latest: Packet | None = None  # the last data segment to arrive, echoed by ACKs
        # Immediate ACKs left at the connection's start (Linux quickack mode); every ACK
        # sent uses one, as Linux's tcp_dec_quickack_mode counts them.
        self.quick = quick_acks(spec, self.wnd)
        self.echo_at = 0.0  # send time of the oldest segment the next ACK covers
        self.syn_options = spec.syn_options
        self.headers = spec.headers  # of every ACK, the timestamps option included
        self.timestamps = spec.timestamps
        self.max_sack_blocks = (
            MAX_SACK_BLOCKS_WITH_TIMESTAMPS if self.timestamps else MAX_SACK_BLOCKS
        )
        # RFC 7323 4.3: TS.Recent, the timestamp the next ACK echoes (here the echoed
        # segment's send time: the simulated clock is the timestamp clock), and
        # Last.ACK.sent, the ACK field of the last ACK sent.
        self.ts_recent = 0.0
        self.last_ack_sent = 0
        self.sent = 0  # ACKs and SYN-ACKs sent
        self.waits: list[float] = []  # queueing of the flow's data per hop, set by the flow

    def accept(self, pkt: Packet) -> None:
        if pkt.kind == Kind.SYN:
            self.ts_recent = pkt.sent_at  # the SYN-ACK echoes the SYN that arrived
            self._send(Kind.SYNACK, TCP_IP_HEADERS + self.syn_options)
            return
        if pkt.kind != Kind.DATA:
            return
        self.flow.data_received(pkt)
        self.latest = pkt
        if not self.pending:
            self.echo_at = pkt.sent_at
        seq = pkt.seq
        end = seq + pkt.length
        if self.timestamps and seq <= self.last_ack_sent < end and pkt.sent_at >= self.ts_recent:
            # RFC 7323 4.3 (2), as Linux's tcp_replace_ts_recent: only a segment holding
            # the left edge of the window last acknowledged is remembered (and not an older
            # one, PAWS). So a delayed ACK echoes the earliest segment it covers (3.4 A),
            # the ACKs of out-of-order data what the last ACK echoed, never the newer
            # segments above the hole (B), and the ACK of a hole filled the segment that
            # filled it (C): after a retransmission, the retransmission's own.
            self.ts_recent = pkt.sent_at
        rcv_nxt = self.rcv_nxt
        if seq <= rcv_nxt < end:
            ooo = self.ooo
            filled_gap = bool(ooo)
            rcv_nxt = end
            if filled_gap:
                # The blocks the segment reaches join the in-order data.
                starts, ends = ooo.starts, ooo.ends
                k = 0
                while k < len(starts) and starts[k] <= rcv_nxt:
                    if ends[k] > rcv_nxt:
                        rcv_nxt = ends[k]
                    k += 1
                ooo.drop_below(rcv_nxt)
            self.rcv_nxt = rcv_nxt
            self.recent = None
            self.flow.delivered(rcv_nxt)
            if filled_gap or not self.delack_enabled or self.quick:
                # RFC 5681 4.2: ACK at once when a gap is filled; and in quickack mode.
                self.send_ack()
                return
            self.pending += 1
            if self.pending >= self.delack_count:
                self.send_ack()
            elif not self.timer.running:
                self.timer.start(self.delack_timeout)
            return
        if end > rcv_nxt:
            # Out of order: held, and the block holding it is reported first (RFC 2018 4).
            i = self.ooo.add(seq, end)[0]
            self.recent = (self.ooo.starts[i], self.ooo.ends[i])
        # Out of order or duplicate: an immediate (duplicate) ACK, RFC 5681 4.2.
        self.send_ack()

    def sack_blocks(self) -> SackBlocks | None:
        """RFC 2018 4: the block holding the latest segment first, then the highest others."""
        ooo = self.ooo
        if not self.sack or not ooo:
            return None
        blocks = []
        if self.recent is not None:
            blocks.append(self.recent)
        starts, ends = ooo.starts, ooo.ends
        k = len(starts) - 1
        while k >= 0 and len(blocks) < self.max_sack_blocks:
            block = (starts[k], ends[k])
            if block != self.recent:
                blocks.append(block)
            k -= 1
        return tuple(blocks)

    def send_ack(self) -> None:
        if self.quick:
            self.quick -= 1
        self.pending = 0
        self.timer.stop()
        blocks = self.sack_blocks()
        size = self.headers if blocks is None else self.headers + 4 + 8 * len(blocks)
        self._send(Kind.ACK, size, blocks)

    def _send(self, kind: Kind, size: int, sack: SackBlocks | None = None) -> None:
        pkt = Packet(self.flow, kind, size, self.path, self.env.now)
        self.sent += 1
        pkt.ack = self.rcv_nxt
        pkt.wnd = self.wnd
        pkt.sack = sack
        pkt.echo = self.latest
        pkt.echo_at = self.echo_at
        if self.timestamps:
            pkt.tsecr = self.ts_recent
            self.last_ack_sent = self.rcv_nxt
        self.path[0].accept(pkt)
