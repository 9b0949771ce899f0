"""Packet captures: taps on link directions, and the libpcap files made from what they saw.

A capture is a look at one end's interface on a link (`at`): a `Tap` with a `TapPoint` on
the `Egress` port of each link direction it takes. The port calls its point once per
packet it transmits; a packet leaving the capturing end is seen when its transmission
starts, one arriving there when its last bit arrives (after the link's delay, unless the
link lost it), so a capture at a sender shows what tcpdump on that host would: the ACKs
before what the sender does about them. The tap keeps a small tuple per packet, up to
`max_packets`; a port without a tap pays one attribute test. When the run ends,
`pcap_file` turns the tuples into a libpcap file of raw IPv4 packets with real headers,
the payload zero-filled up to the snap length:

- addresses: each node has a stable private address, 10.x.y.z from the first bytes of
  the sha256 of its id (`node_address`), so a node keeps its address whatever else
  the scenario holds;
- ports: the flow at index i of `flows` sends from port 49152 + i (the dynamic range) to
  port 9 (the discard service, RFC 863: a sink, and no Wireshark dissector claims it);
- sequence numbers: the engine counts payload bytes from 0 after the SYN; on the wire each
  side starts at an initial sequence number taken from the sha256 of the flow id (`isn`),
  the SYN takes one number, so payload byte n is ISN + 1 + n; ACK numbers, SACK blocks
  likewise. No FIN is sent (the engine closes nothing);
- SYN and SYN-ACK carry MSS, window scale (when `window_scaling`) and SACK-permitted (when
  the flow uses SACK) in the 12 option bytes the engine counts for them, padded after an
  end-of-options, so a packet's length on the wire is the engine's; ACKs carry their SACK
  blocks (RFC 2018); the window field is the advertised window shifted by the negotiated
  scale (RFC 7323); with `timestamps`, every segment after the handshake carries two
  NOPs and the timestamps option (RFC 7323 3.2) ahead of any SACK blocks, as Linux orders
  them: TSval the send time on a 1 ms clock (Linux's), an ACK's TSecr the TSval it echoes,
  a data segment's 0 (the engine models no data the other way, whose timestamps it would
  echo);
- TTL is 64 less the routers the packet crossed; IP and TCP/UDP checksums are correct
  (the zero payload adds nothing to them).

The libpcap format (a 24-byte file header, a 16-byte header per record) is written here
rather than with dpkt or scapy: it is a few lines of `struct`, and the headers are our
domain anyway (built from engine state, field by field, whatever library holds them).
scapy is a large dependency that is slow to import in every worker; dpkt would only wrap
the same `struct` calls in its own packet classes.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from engine.packet import Kind, Owner, Packet, Path, SackBlocks
from engine.protocol import IP_HEADER, TCP_HEADER, UDP_HEADER
from engine.tcp.cc import variant
from engine.tcp.receiver import advertised_window, window_shift

if TYPE_CHECKING:
    from collections.abc import Mapping

    from engine.scenario import CaptureSpec, Link, Scenario, TcpBulkFlow, UdpCbrFlow

# libpcap file header, nanosecond-resolution variant (Wireshark, tshark and tcpdump >= 4.6
# read it): simulated times keep their sub-microsecond order on fast links.
PCAP_MAGIC_NS = 0xA1B23C4D
LINKTYPE_RAW = 101  # raw IP: each record starts with the IPv4 header
FIRST_PORT = 49152
SINK_PORT = 9
INITIAL_TTL = 64
PROTO_TCP, PROTO_UDP = 6, 17
DONT_FRAGMENT = 0x4000
SYN, ACK = 0x02, 0x10  # TCP flags
NOP, EOL = b"\x01", b"\x00"

#: What a tap keeps of a packet: time, flow, kind, seq, length, ack, window, SACK blocks,
#: path and hop (the packet's fields at the time, as the packet itself moves on), its send
#: time and the send time an ACK echoes (-1 without timestamps).
Record = tuple[float, Owner, Kind, int, int, int, int, SackBlocks | None, Path, int, float, float]
TIMESTAMP_HZ = 1000  # Linux's TCP timestamp clock (TCP_TS_HZ)


# What a capture reads of the model, which imports this module (a port holds its tap).


class Port(Protocol):
    """A link direction's egress port, as a tap hangs on it."""

    tap: TapPoint | None


class Captured(Protocol):
    """A flow, as the file's addresses and ports are derived from it."""

    id: str

    @property
    def spec(self) -> TcpBulkFlow | UdpCbrFlow: ...


class Tap:
    """What one capture saw: one tuple per packet, in the order they were recorded."""

    __slots__ = ("spec", "ports", "flows", "limit", "records", "missed")

    def __init__(self, spec: CaptureSpec, ports: frozenset[int]):
        self.spec = spec
        # The ids of the egress ports: each hop of a path that is one was a router's
        # (the source host's first excepted), and took one from the TTL.
        self.ports = ports
        self.flows = frozenset(spec.flows) if spec.flows is not None else None
        self.limit = spec.max_packets
        self.records: list[Record] = []
        self.missed = 0  # packets that went by once the capture was full

    def add(self, t: float, pkt: Packet) -> None:
        """`pkt` is seen at the capturing interface at time `t`."""
        flows = self.flows
        if flows is not None and pkt.flow.id not in flows:
            return
        records = self.records
        if len(records) >= self.limit:
            self.missed += 1
            return
        records.append(
            (
                t,
                pkt.flow,
                pkt.kind,
                pkt.seq,
                pkt.length,
                pkt.ack,
                pkt.wnd,
                pkt.sack,
                pkt.path,
                pkt.hop,
                pkt.sent_at,
                getattr(pkt, "tsecr", -1.0),  # set on ACKs of a receiver with timestamps
            )
        )


class TapPoint:
    """A tap on one port (link direction): at its sending end, a packet is seen when its
    transmission starts; at its receiving end, when its last bit arrives, unless lost."""

    __slots__ = ("tap", "arriving", "delay")

    def __init__(self, tap: Tap, arriving: bool, delay: float):
        self.tap, self.arriving, self.delay = tap, arriving, delay

    def record(self, start: float, end: float, pkt: Packet, lost: bool) -> None:
        """The port transmits `pkt` from `start` to `end`; the link loses it or not."""
        if not self.arriving:
            self.tap.add(start, pkt)
        elif not lost:
            self.tap.add(end + self.delay, pkt)


def attach(
    captures: list[CaptureSpec],
    ports: Mapping[tuple[str, str, str], Port],
    links: dict[str, Link],
) -> list[Tap]:
    """A tap per capture, hung on the ports of the link directions it names."""
    taps = []
    ids = frozenset(id(port) for port in ports.values())
    for spec in captures:
        tap = Tap(spec, ids)
        link = links[spec.link]
        at = link.a if spec.at == "a" else link.b
        ways = []
        if spec.direction in ("a_to_b", "both"):
            ways.append((link.a, link.b))
        if spec.direction in ("b_to_a", "both"):
            ways.append((link.b, link.a))
        for src, dst in ways:
            ports[(link.id, src, dst)].tap = TapPoint(tap, src != at, link.delay_from(src))
        taps.append(tap)
    return taps


# --- addressing ---------------------------------------------------------------------------


def node_address(node_id: str) -> bytes:
    """The node's IPv4 address: 10. and three bytes of sha256(id), never .0 or .255 last."""
    digest = hashlib.sha256(node_id.encode()).digest()
    last = 1 + digest[2] % 254
    return bytes((10, digest[0], digest[1], last))


def addresses(scenario: Scenario) -> dict[str, bytes]:
    """Every node's address; a clash (one in millions for a few nodes) moves the later id,
    in sorted order, to the next free address."""
    taken: set[bytes] = set()
    out: dict[str, bytes] = {}
    for node_id in sorted(node.id for node in scenario.nodes):
        addr = node_address(node_id)
        while addr in taken or addr[3] in (0, 255):
            addr = (int.from_bytes(addr, "big") + 1).to_bytes(4, "big")
            if addr[0] != 10:
                addr = bytes((10, 0, 0, 1))
        taken.add(addr)
        out[node_id] = addr
    return out


def isn(flow_id: str, side: str) -> int:
    """Initial sequence number of one side (`src` or `dst`) of a TCP flow."""
    return int.from_bytes(hashlib.sha256(f"{flow_id}/{side}".encode()).digest()[:4], "big")


# --- checksums ----------------------------------------------------------------------------


def _ones_sum(data: bytes) -> int:
    """The 16-bit one's complement sum of `data` (RFC 1071), via 2**16 = 1 (mod 2**16 - 1)."""
    if len(data) % 2:
        data += b"\0"
    n = int.from_bytes(data, "big")
    r = n % 0xFFFF
    return 0xFFFF if r == 0 and n else r


def _checksum(*parts: bytes) -> int:
    total = sum(_ones_sum(p) for p in parts)
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


# --- one flow's view of the wire ----------------------------------------------------------


class _Endpoints:
    """Everything a flow's headers need that is the same for all its packets."""

    __slots__ = (
        "src",
        "dst",
        "sport",
        "dport",
        "isn_src",
        "isn_dst",
        "shift",
        "window",
        "syn_options",
        "tcp",
        "timestamps",
    )

    def __init__(self, flow: Captured, index: int, addrs: dict[str, bytes]):
        spec = flow.spec
        self.src, self.dst = addrs[spec.src], addrs[spec.dst]
        self.sport, self.dport = FIRST_PORT + index, SINK_PORT
        self.tcp = spec.kind == "tcp_bulk"
        self.timestamps = False
        if spec.kind != "tcp_bulk":  # not self.tcp, spelled so that the spec's type narrows
            return
        tcp = spec.tcp
        self.timestamps = tcp.timestamps
        self.isn_src, self.isn_dst = isn(spec.id, "src"), isn(spec.id, "dst")
        self.shift = window_shift(tcp.rcv_buf) if tcp.window_scaling else 0
        # Both ends run the flow's TcpSpec: the same buffer, window and options each way.
        self.window = advertised_window(tcp)
        # The SYN carries `tcp.syn_options` bytes (12 by default): MSS, window scale and
        # SACK-permitted, 4 bytes each, as many as fit, then the end of the option list and
        # zeros (NOPs would read as options a middlebox removed).
        budget = tcp.syn_options
        wanted = [struct.pack("!BBH", 2, 4, tcp.mss)]
        if tcp.window_scaling:
            wanted.append(NOP + struct.pack("!BBB", 3, 3, self.shift))
        if variant(tcp.variant).sack_permitted(tcp):
            wanted.append(NOP * 2 + b"\x04\x02")
        options = b"".join(wanted[: budget // 4])
        if len(options) < budget:
            options += EOL + bytes(budget - len(options) - 1)
        self.syn_options = options


def _ts_clock(t: float) -> int:
    return int(t * TIMESTAMP_HZ) & 0xFFFFFFFF


def _tcp_segment(ep: _Endpoints, record: Record) -> tuple[bytes, bytes, bytes, int]:
    """(source address, destination address, TCP header without checksum, payload length)."""
    _, _, kind, seq, length, ack, wnd, sack, _, _, sent_at, tsecr = record
    options = b""
    if kind == Kind.DATA or kind == Kind.SYN:
        src, dst, sport, dport = ep.src, ep.dst, ep.sport, ep.dport
        base, peer = ep.isn_src, ep.isn_dst
    else:
        src, dst, sport, dport = ep.dst, ep.src, ep.dport, ep.sport
        base, peer = ep.isn_dst, ep.isn_src
    if kind == Kind.SYN:
        number, ack_number, flags = base, 0, SYN
        window, options = min(ep.window, 0xFFFF), ep.syn_options
    elif kind == Kind.SYNACK:
        number, ack_number, flags = base, peer + 1, SYN | ACK
        window, options = min(wnd, 0xFFFF), ep.syn_options  # unscaled (RFC 7323 2.2)
    elif kind == Kind.DATA:
        # The sender's segments acknowledge the peer's SYN and advertise its own window.
        number, ack_number, flags = base + 1 + seq, peer + 1, ACK
        window = ep.window >> ep.shift
        if ep.timestamps:
            options = NOP * 2 + struct.pack("!BBII", 8, 10, _ts_clock(sent_at), 0)
    else:
        # The receiver's ACKs carry the window it advertises (the engine's, in bytes).
        number, ack_number, flags = base + 1, peer + 1 + ack, ACK
        window = min(wnd >> ep.shift, 0xFFFF)
        if ep.timestamps:
            options = NOP * 2 + struct.pack("!BBII", 8, 10, _ts_clock(sent_at), _ts_clock(tsecr))
        if sack:
            options += (
                NOP * 2
                + struct.pack("!BB", 5, 2 + 8 * len(sack))
                + b"".join(
                    struct.pack("!II", (peer + 1 + s) & 0xFFFFFFFF, (peer + 1 + e) & 0xFFFFFFFF)
                    for s, e in sack
                )
            )
    offset = (TCP_HEADER + len(options)) // 4
    header = (
        struct.pack(
            "!HHIIBBHHH",
            sport,
            dport,
            number & 0xFFFFFFFF,
            ack_number & 0xFFFFFFFF,
            offset << 4,
            flags,
            window,
            0,
            0,
        )
        + options
    )
    return src, dst, header, length


def _ip_header(src: bytes, dst: bytes, proto: int, total: int, ttl: int) -> bytes:
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, DONT_FRAGMENT, ttl, proto, 0, src, dst)
    return header[:10] + struct.pack("!H", _checksum(header)) + header[12:]


def _packet(ep: _Endpoints, record: Record, ttl: int) -> tuple[bytes, int]:
    """(the packet's headers, its length on the wire) for one tap record."""
    length = record[4]
    if ep.tcp:
        src, dst, tcp, length = _tcp_segment(ep, record)
        seg_len = len(tcp) + length
        pseudo = struct.pack("!4s4sBBH", src, dst, 0, PROTO_TCP, seg_len)
        tcp = tcp[:16] + struct.pack("!H", _checksum(pseudo, tcp)) + tcp[18:]
        total = IP_HEADER + seg_len
        return _ip_header(src, dst, PROTO_TCP, total, ttl) + tcp, total
    udp_len = UDP_HEADER + length
    udp = struct.pack("!HHHH", ep.sport, ep.dport, udp_len, 0)
    pseudo = struct.pack("!4s4sBBH", ep.src, ep.dst, 0, PROTO_UDP, udp_len)
    udp = udp[:6] + struct.pack("!H", _checksum(pseudo, udp) or 0xFFFF)
    total = IP_HEADER + udp_len
    return _ip_header(ep.src, ep.dst, PROTO_UDP, total, ttl) + udp, total


def pcap_file(
    tap: Tap, scenario: Scenario, flows: Sequence[Captured], end: float
) -> tuple[bytes, int]:
    """The libpcap file of what `tap` saw until the run ended at `end`, in time order, and
    the number of packets in it (a packet still queued or on its way at the end is not)."""
    snaplen = tap.spec.snaplen
    addrs = addresses(scenario)
    index = {spec.id: i for i, spec in enumerate(scenario.flows)}
    endpoints = {f.id: _Endpoints(f, index[f.id], addrs) for f in flows}
    routers: dict[tuple[int, int], int] = {}
    out = [struct.pack("<IHHiIII", PCAP_MAGIC_NS, 2, 4, 0, 0, snaplen, LINKTYPE_RAW)]
    # Records are added as packets enter the ports, so arrivals (seen a delay later) and
    # the other direction interleave out of order: a stable sort by time, ties kept in
    # the order they happened.
    records = sorted(tap.records, key=lambda r: r[0])
    written = 0
    for record in records:
        t, flow, path, hop = record[0], record[1], record[8], record[9]
        if t > end:
            break
        key = (id(path), hop)
        crossed = routers.get(key)
        if crossed is None:
            # Leaving by path[hop], a packet was forwarded by the routers that own
            # path[1..hop] (path[0] is its source host's): one per port before this one.
            crossed = routers[key] = sum(id(p) in tap.ports for p in path[:hop])
        headers, total = _packet(endpoints[flow.id], record, INITIAL_TTL - crossed)
        kept = min(total, snaplen)
        ns = round(t * 1e9)
        out.append(struct.pack("<IIII", ns // 1_000_000_000, ns % 1_000_000_000, kept, total))
        out.append(headers[:kept])
        if kept > len(headers):
            out.append(bytes(kept - len(headers)))
        written += 1
    return b"".join(out), written
