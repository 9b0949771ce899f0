"""The packet: a small slotted record that travels a precomputed path of egress ports.

Sizes are IP datagram bytes (headers included); each link adds its own framing when it
serialises the packet. A packet carries its path and the index of the next hop, so a
forwarding decision is a list index, not a table lookup.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

#: SACK blocks as an ACK carries them: (start, end) byte ranges, RFC 2018.
SackBlocks = tuple[tuple[int, int], ...]
#: The sender's delivery-rate snapshot at transmission (engine.tcp.rate): delivered bytes,
#: delivered time, first send time, application-limited, send time, is a retransmission.
TxSnapshot = tuple[int, float, float, bool, float, bool]


#: The hops a packet crosses, the receiving endpoint last. Each has `accept(pkt)`, but
#: they are of several kinds (ports, Frame Relay stages, endpoints) and a stage reads more
#: of the hop beside it (a PVC's entry asks the port after it for its framing): hence
#: `Any`, which costs nothing per packet where a cast would be a call.
Path = tuple[Any, ...]


class Kind(IntEnum):
    DATA = 0  # TCP segment carrying payload
    ACK = 1  # pure TCP acknowledgement
    SYN = 2
    SYNACK = 3
    UDP = 4


class Owner:
    """The flow a packet belongs to, as the network and the TCP endpoints see it: where a
    drop, an arrival, a delivery and an RTT sample are counted (engine.flows' flows are
    its subclasses; a UDP flow has none of the TCP notifications).

    A base class here rather than a Protocol, so that a packet, a port and an endpoint name
    it without importing the flows, which import all three: its calls stay native in the
    compiled engine, where a Protocol's would go through Python's attribute lookup on
    every packet."""

    __slots__ = ("id",)

    def __init__(self, flow_id: str):
        self.id = flow_id

    def dropped(self, pkt: Packet) -> None:
        raise NotImplementedError

    def data_received(self, pkt: Packet) -> None:
        raise NotImplementedError

    def delivered(self, rcv_nxt: int) -> None:
        raise NotImplementedError

    def rtt_sample(self, r: float) -> None:
        raise NotImplementedError


class Packet:
    # What every hop reads comes first, beside the object's header: with a thousand flows
    # a packet is cold at each hop, and these then share its first cache line.
    __slots__ = (
        "hop",  # index into path of the element that holds the packet now
        "path",  # tuple of hops: egress ports, then the receiving endpoint
        "size",  # IP bytes
        "due",  # on a link (engine.kernel.Line): when it reaches the next hop
        "eid",  # on a link: its event id, the order among packets due at the same time
        "flow",  # the flow's endpoint pair (owner of counters for this packet)
        "kind",
        "seq",  # first payload byte (TCP) or datagram number (UDP)
        "length",  # payload bytes
        "ack",  # cumulative ACK (next byte expected)
        "wnd",  # advertised receive window, bytes (already scaled)
        "sack",  # tuple of (start, end) SACK blocks, or None
        "sent_at",  # time the sender handed it to the network
        # Frame Relay: the PVC direction carrying it now (engine.framerelay.PvcDirection),
        # or None. `Any`, as the path is: the Frame Relay stages import this module, and
        # the switch that reads it gives it its type in one check.
        "pvc",
        "de",  # Frame Relay discard eligibility
        "fecn",
        "becn",
        "tx",  # data: the sender's delivery-rate snapshot at transmission (engine.tcp.rate)
        "echo",  # ACK: the data packet whose arrival triggered it (a TSecr), or None
        # ACK: the send time of the oldest segment this ACK covers (as the timestamps option
        # echoes it); set by the receiver only, never on data.
        "echo_at",
        # ACK with the timestamps option: TSecr, the echoed segment's send time (RFC 7323
        # 4.3); set by a receiver with timestamps only.
        "tsecr",
    )

    echo_at: float  # set on ACKs only (see above)
    tsecr: float
    due: float  # set by the link carrying it
    eid: int

    def __init__(self, flow: Owner, kind: Kind, size: int, path: Path, sent_at: float):
        self.flow = flow
        self.kind = kind
        self.size = size
        self.path = path
        self.hop = 0
        self.sent_at = sent_at
        self.seq = 0
        self.length = 0
        self.ack = 0
        self.wnd = 0
        self.sack: SackBlocks | None = None
        self.pvc: Any = None
        self.de = False
        self.fecn = False
        self.becn = False
        self.tx: TxSnapshot | None = None
        self.echo: Packet | None = None

    @property
    def carries_data(self) -> bool:
        return self.kind == Kind.DATA or self.kind == Kind.UDP
