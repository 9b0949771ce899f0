"""The packet: a small slotted record that travels a precomputed path of egress ports.

Sizes are IP datagram bytes (headers included); each link adds its own framing when it
serialises the packet. A packet carries its path and the index of the next hop, so a
forwarding decision is a list index, not a table lookup.
"""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.flows import Flow
    from engine.framerelay import PvcDirection


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
        "pvc",  # Frame Relay: the PVC direction carrying it now (engine.framerelay), or None
        "de",  # Frame Relay discard eligibility
        "fecn",
        "becn",
        "tx",  # data: the sender's delivery-rate snapshot at transmission (engine.tcp.rate)
        "echo",  # ACK: the data packet whose arrival triggered it (a TSecr), or None
        # ACK: the send time of the oldest segment this ACK covers (as the timestamps option
        # echoes it); set by the receiver only, never on data.
        "echo_at",
    )

    echo_at: float  # set on ACKs only (see above)
    due: float  # set by the link carrying it
    eid: int

    def __init__(self, flow: Flow, kind: Kind, size: int, path: Path, sent_at: float):
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
        self.pvc: PvcDirection | None = None
        self.de = False
        self.fecn = False
        self.becn = False
        self.tx: TxSnapshot | None = None
        self.echo: Packet | None = None

    @property
    def carries_data(self) -> bool:
        return self.kind == Kind.DATA or self.kind == Kind.UDP
