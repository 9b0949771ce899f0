"""What the analytic bounds allow a TCP flow after a set of changes, without simulating.

The same arithmetic as the path facts (engine/analysis/paths.py, the diagnosis' static
bounds): each hop's payload capacity `rate x MSS / wire(MSS + 40)`, the base round trip of
one full segment out and one ACK back, the window per round trip, and a PVC's contract
`CIR + Be / Tc` on the frames of its first link; plus what the facts do not hold, a BECN
shaper's CIR. Evaluated per flow in O(hops), so every remedy of every flow of a 4,000-flow
run can carry its prediction, and the advisor can prune a lever before running it.

Every figure is optimistic: the best the flow could do (no cross traffic, no loss, no slow
start), so a change whose bound cannot reach a target certainly does not reach it in the
simulation. tests/unit/test_advice_properties.py checks it against `flow_facts` of the
changed scenario, on generated scenarios and changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from engine.advice.alike import SharedBounds, change_key, renamed
from engine.advice.levers import parse_value
from engine.net import link_wire
from engine.scenario import Link, Pvc, QueueSpec, Scenario, TcpBulkFlow, TcpSpec
from engine.scenario.shaping import ShapingSpec
from engine.scenario.topology import Hop, Topology
from engine.tcp.receiver import effective_window

SLACK = 0.02  # relative margin before a bound counts as ruling a target out


@dataclass(frozen=True)
class Bound:
    """The best a flow can do under one configuration."""

    goodput_bps: float  # upper bound over a long transfer
    completion_time: float | None  # lower bound of a finite transfer, s
    limit: str  # which bound binds: link | pvc | shaper | window | ack
    resource: str  # its port key or pvc:<id> (for ack: the ACKs' slowest port)
    rtt: float  # base round trip, s
    capacity_bps: float  # payload rate of the path's tightest resource
    bdp_bytes: float  # capacity x rtt
    window_bytes: int
    queue_bytes: float | None  # the tightest link's egress queue, in bytes of full segments
    queue_packets: int | None
    ack_clock_bps: float = float("inf")  # what the ACKs' way back can clock


# The TCP settings the bounds depend on (the window, the segment, the handshake's wait).
# The TCP settings the bounds read: timestamps for the 12 bytes they take from each segment.
_TCP_BOUND = frozenset({"rcv_buf", "snd_buf", "window_scaling", "mss", "handshake", "timestamps"})


@dataclass(frozen=True)
class _Hop:
    link: Link
    key: str  # "<link>:<from>><to>"
    direction: str  # a_to_b | b_to_a


# The tightest hop: its payload capacity, resource, hop, limit (link | shaper) and burst.
_Tightest = tuple[float, str, _Hop, str, float]


class PathModel:
    """One TCP flow's path, ready to be re-evaluated under changes (dotted paths)."""

    def __init__(
        self,
        flow: TcpBulkFlow,
        hops: list[_Hop],
        back: list[_Hop],
        pvc: Pvc | None,
        pvc_first: int | None,
        shared: SharedBounds[Bound] | None = None,
    ):
        self.flow = flow
        self.hops = hops
        self.back = back
        self.pvc = pvc
        self.pvc_first = pvc_first
        self._base: Bound | None = None  # the bound without changes, asked for often
        # Bounds by their changes: a remedy's rule asks for the bound it then builds the
        # remedy with, whose effect asks again (two of every five evaluations in a run's
        # diagnosis). By each value's repr, so that True, 1 and 1.0 stay apart.
        self._known: dict[tuple[tuple[str, str], ...], Bound] = {}
        # The run's other alike paths' bounds (engine/advice/alike.py), and this path's kind.
        self._shared = shared
        self._kind: int | None = None
        self._indices: dict[str, int] = {}
        self._keys = tuple(h.key for h in (*hops, *back))

    @classmethod
    def of(
        cls,
        scenario: Scenario,
        flow: TcpBulkFlow,
        topo: Topology | None = None,
        links: Mapping[str, Link] | None = None,
        route: list[Hop] | None = None,
        shared: SharedBounds[Bound] | None = None,
    ) -> PathModel | None:
        """The flow's model, or None when it has no route (`route`: its hops, when known;
        `shared`: the bounds of the run's other flows, engine/advice/alike.py)."""
        topo = topo or Topology(scenario)
        links = links if links is not None else {link.id: link for link in scenario.links}
        if route is None:
            route = topo.route(flow.src, flow.dst) or []
        back = topo.route(flow.dst, flow.src) or []
        if not route:
            return None
        span = topo.pvc_span(route)
        return cls(
            flow,
            [_hop(links, h) for h in route],
            [_hop(links, h) for h in back],
            span.pvc if span else None,
            span.first if span else None,
            shared,
        )

    def bound(self, changes: Mapping[str, Any] | None = None) -> Bound:
        """The flow's bounds with `changes` ({dotted path: value}) applied; paths that do not
        touch this path (another flow, another link) change nothing."""
        key = tuple((path, repr(value)) for path, value in (changes or {}).items())
        known = self._known.get(key)
        if known is not None:
            return known
        if self._shared is None:
            bound = self._work_out(changes or {})
        else:
            bound = self._alike(changes or {})
        self._known[key] = bound
        return bound

    def _alike(self, changes: Mapping[str, Any]) -> Bound:
        """The bound as an alike path of the run worked it out, renamed; else worked out."""
        assert self._shared is not None
        key = (self.kind(), change_key(changes, self.flow.id, self._indices))
        found = self._shared.get(key)
        if found is None:
            bound = self._work_out(changes)
            self._shared.put(key, bound, self._keys)
            return bound
        bound, keys = found
        resource = renamed(bound.resource, self._keys, keys)
        return bound if resource == bound.resource else replace(bound, resource=resource)

    def kind(self) -> int:
        """What the bounds read of the path (engine/advice/alike.py), without its names."""
        if self._kind is None:
            assert self._shared is not None
            hops = (*self.hops, *self.back)
            for h in hops:
                self._indices.setdefault(h.link.id, len(self._indices))
            links = {h.link.id: h.link for h in hops}
            self._kind = self._shared.kind(
                (
                    tuple((self._indices[h.link.id], h.direction) for h in self.hops),
                    tuple((self._indices[h.link.id], h.direction) for h in self.back),
                    tuple(self._shared.link_kind(link) for link in links.values()),
                    self._shared.model_kind(self.pvc),
                    self.pvc_first,
                    self._shared.model_kind(self.flow.tcp),
                    self.flow.bytes,
                )
            )
        return self._kind

    def _work_out(self, changes: Mapping[str, Any]) -> Bound:
        applied = self._apply(changes)
        if applied is None:  # nothing the bounds depend on changes (a variant, SACK...)
            if self._base is None:
                self._base = self._bound({}, self.flow.tcp, self.pvc, _shaper(self.pvc, {}))
            bound = self._base
        else:
            bound = self._bound(*applied)
        return bound

    def _bound(
        self, links: dict[str, Link], tcp: TcpSpec, pvc: Pvc | None, shaper: _Shaper | None
    ) -> Bound:
        payload = tcp.payload
        size = payload + tcp.headers
        window = effective_window(tcp)
        seg = size if window >= payload else window + tcp.headers
        one_way, best = self._forward(links, payload, size, seg)
        ack_way, ack_clock, ack_port = self._way_back(links, tcp)
        rtt = one_way + ack_way
        capacity, resource, tight, limit, burst = best
        if pvc is not None and self.pvc_first is not None:
            capacity, limit, resource, burst = self._pvc_limit(
                links, pvc, shaper, payload, size, (capacity, limit, resource, burst)
            )
        window_bps = window * 8 / rtt if rtt > 0 else float("inf")
        pace = capacity  # what paces the flow: the path's capacity, or its ACKs' way back
        if ack_clock < capacity:  # a slow way back (ADSL's uplink) clocks the flow
            # A window's worth leaves ahead of the clock: slow start sends two segments per
            # ACK until the window is full, one after.
            pace, limit, resource, burst = ack_clock, "ack", ack_port, window * 8.0
        goodput = min(pace, window_bps)
        q_bytes, q_packets = _queue(links, tight, payload)
        return Bound(
            goodput_bps=goodput,
            completion_time=self._completion(links, pace, burst, window, rtt),
            limit="window" if window_bps < pace else limit,
            resource=resource,
            rtt=rtt,
            capacity_bps=capacity,
            bdp_bytes=capacity * rtt / 8,
            window_bytes=window,
            queue_bytes=None if q_bytes is None else float(q_bytes),
            queue_packets=q_packets,
            ack_clock_bps=ack_clock,
        )

    def _forward(
        self, links: Mapping[str, Link], payload: int, size: int, seg: int
    ) -> tuple[float, _Tightest]:
        """One segment's one-way time (each hop's delay and serialisation of `seg` bytes)
        and the hop of least payload capacity: its link's rate, or its interface shaper's."""
        one_way = 0.0
        best: _Tightest | None = None
        for hop in self.hops:
            link = links.get(hop.link.id, hop.link)
            rate, delay = _way(link, hop.direction)
            one_way += delay + link_wire(link, seg) * 8 / rate
            frame_share = payload / link_wire(link, size)
            capacity, limit, resource, burst = rate * frame_share, "link", hop.key, 0.0
            shaping = link.shaping_a_to_b if hop.direction == "a_to_b" else link.shaping_b_to_a
            if shaping is not None and shaping.rate is not None:
                shaped = shaping.rate * frame_share  # an interface's shaper (issue 25.5)
                if shaped < capacity:
                    capacity, limit, resource = shaped, "shaper", f"shaper:{hop.key}"
                    burst = (shaping.committed(shaping.rate) + shaping.be) * frame_share
            if best is None or capacity < best[0]:
                best = (capacity, resource, hop, limit, burst)
        assert best is not None  # a model has at least one hop
        return one_way, best

    def _way_back(self, links: Mapping[str, Link], tcp: TcpSpec) -> tuple[float, float, str]:
        """A bare ACK's way back, as the path facts have it: each return hop's delay and
        serialisation of a bare ACK (40 bytes and any options); the payload it can clock, its slowest hop's ACKs per
        second times the segments each acknowledges times the MSS; and that hop's port key."""
        ack_way, acks, port = 0.0, float("inf"), ""
        for h in self.back:
            link = links.get(h.link.id, h.link)
            rate, delay = _way(link, h.direction)
            bits = link_wire(link, tcp.headers) * 8
            ack_way += delay + bits / rate
            if rate / bits < acks:
                acks, port = rate / bits, h.key
        per_ack = tcp.delayed_ack.count if tcp.delayed_ack.enabled else 1
        return ack_way, acks * per_ack * tcp.payload * 8, port

    def _pvc_limit(
        self,
        links: Mapping[str, Link],
        pvc: Pvc,
        shaper: _Shaper | None,
        payload: int,
        size: int,
        hop_limit: tuple[float, str, str, float],
    ) -> tuple[float, str, str, float]:
        """The tighter of `hop_limit` (capacity, limit, resource, burst) and the PVC's: its
        BECN shaper's rate, its CIR when it shapes on BECN, else its contract CIR + Be / Tc;
        all on the frames of the PVC's first link."""
        capacity, limit, resource, burst = hop_limit
        assert self.pvc_first is not None  # the caller checks
        first = links.get(self.hops[self.pvc_first].link.id, self.hops[self.pvc_first].link)
        wire = link_wire(first, size)
        frame_share = payload / wire
        bc = pvc.bc or pvc.cir
        # In the path facts' order of operations, so that equal figures compare equal.
        contract = (pvc.cir + pvc.be * pvc.cir / bc) * payload / wire
        shaped = pvc.cir * payload / wire
        if shaper is not None and shaper.rate * frame_share <= min(capacity, contract):
            capacity, limit, resource = shaper.rate * frame_share, "shaper", f"pvc:{pvc.id}"
            burst = (shaper.bc + shaper.be) * frame_share
        elif pvc.becn_shaping and shaped < min(capacity, contract):
            capacity, limit, resource = shaped, "shaper", f"pvc:{pvc.id}"
            burst = bc * frame_share
        elif contract < capacity:
            capacity, limit, resource = contract, "pvc", f"pvc:{pvc.id}"
            burst = (bc + pvc.be) * frame_share  # the buckets start full
        return capacity, limit, resource, burst

    def _completion(
        self, links: Mapping[str, Link], capacity: float, burst: float, window: int, rtt: float
    ) -> float | None:
        """At least the handshake's propagation, then the bytes at the capacity (less what
        full token buckets let through at once) or a window per round trip, whichever is
        slower."""
        nbytes = self.flow.bytes
        if nbytes is None:
            return None
        bits = nbytes * 8
        handshake = 0.0
        if self.flow.tcp.handshake:
            handshake = sum(
                _way(links.get(h.link.id, h.link), h.direction)[1] for h in (*self.hops, *self.back)
            )
        by_rate = max(bits - burst, 0.0) / capacity if capacity > 0 else float("inf")
        by_window = rtt * max(nbytes / window - 1, 0.0) if window > 0 else float("inf")
        return handshake + max(by_rate, by_window)

    def _apply(
        self, changes: Mapping[str, Any]
    ) -> tuple[dict[str, Link], TcpSpec, Pvc | None, _Shaper | None] | None:
        """The path's links, TCP and PVC with the changes that touch them; None when none
        does."""
        links: dict[str, Link] = {}
        tcp_update: dict[str, Any] = {}
        delayed_update: dict[str, Any] = {}
        pvc_update: dict[str, Any] = {}
        shaping_update: dict[str, Any] = {}
        mine = {h.link.id: h.link for h in (*self.hops, *self.back)}
        for path, value in changes.items():
            parts = path.split(".")
            if parts[0] == "links" and len(parts) >= 3 and parts[1] in mine:
                link = links.get(parts[1], mine[parts[1]])
                links[parts[1]] = _set(link, parts[2:], parse_value(path, value))
            elif (
                parts[:3] == ["flows", self.flow.id, "tcp"]
                and len(parts) == 4
                and parts[3] in _TCP_BOUND
            ):
                tcp_update[parts[3]] = parse_value(path, value)
            elif parts[:4] == ["flows", self.flow.id, "tcp", "delayed_ack"] and len(parts) == 5:
                delayed_update[parts[4]] = parse_value(path, value)
            elif (
                self.pvc is not None
                and parts[:2] == ["frame_relay", "pvcs"]
                and len(parts) == 4
                and parts[2] == self.pvc.id
            ):
                pvc_update[parts[3]] = parse_value(path, value)
            elif (
                self.pvc is not None
                and len(parts) == 5
                and parts[:4] == ["frame_relay", "pvcs", self.pvc.id, "shaping"]
            ):
                shaping_update[parts[4]] = parse_value(path, value)
        if delayed_update:  # the ACKs per segment, so the way back's clock
            tcp_update["delayed_ack"] = self.flow.tcp.delayed_ack.model_copy(update=delayed_update)
        if not links and not tcp_update and not pvc_update and not shaping_update:
            return None
        # Copies without validation: the values are parsed (parse_value) and every remedy of
        # every flow of a run is evaluated here, so this is on the diagnosis' path.
        tcp = self.flow.tcp.model_copy(update=tcp_update) if tcp_update else self.flow.tcp
        pvc = self.pvc
        if pvc is not None and pvc_update:
            pvc = pvc.model_copy(update=pvc_update)
        return links, tcp, pvc, _shaper(pvc, shaping_update)


@dataclass(frozen=True)
class _Shaper:
    """A PVC's shaper at any rate (`Pvc.shaping`, issue 25 item 5): its token bucket."""

    rate: float
    bc: float
    be: float


SHAPER_TC = 0.125  # Cisco's default shaping interval: Bc = rate x 125 ms unless given


def _shaper(pvc: Pvc | None, update: Mapping[str, Any]) -> _Shaper | None:
    """The PVC's shaper with `update` applied. The scenario language gains `Pvc.shaping`
    with the network work of issue 25; until then only a change can put one there."""
    if pvc is None:
        return None
    spec = getattr(pvc, "shaping", None)
    data: dict[str, Any] = dict(spec.model_dump()) if spec is not None else {}
    if not data and not update:
        return None
    data.update(update)
    rate = float(data.get("rate") or pvc.cir)
    bc = data.get("bc")
    return _Shaper(
        rate, float(bc) if bc is not None else rate * SHAPER_TC, float(data.get("be") or 0)
    )


def _queue(links: Mapping[str, Link], tight: _Hop, payload: int) -> tuple[int | None, int | None]:
    """The tightest hop's egress queue: (bytes of full segments or its byte limit, packets)."""
    tight_link = links.get(tight.link.id, tight.link)
    queue = tight_link.queue_of(tight.direction)  # type: ignore[arg-type]
    q_packets = queue.limit_packets
    q_bytes = (q_packets * payload) if q_packets is not None else queue.limit_bytes
    return q_bytes, q_packets


def _way(link: Link, direction: str) -> tuple[float, float]:
    """Rate and delay of one direction of a link. An asymmetric link (`rate_b_to_a`,
    `delay_b_to_a`, issue 25 item 6) has its own for b -> a, where the language has them."""
    if direction == "a_to_b":
        return link.rate, link.delay
    rate = getattr(link, "rate_b_to_a", None)
    delay = getattr(link, "delay_b_to_a", None)
    return (link.rate if rate is None else rate), (link.delay if delay is None else delay)


def _hop(links: Mapping[str, Link], hop: Hop) -> _Hop:
    link = links[hop.link_id]
    direction = "a_to_b" if hop.src == link.a else "b_to_a"
    return _Hop(link, f"{hop.link_id}:{hop.src}>{hop.dst}", direction)


def _set(link: Link, field: list[str], value: Any) -> Link:
    """A copy of the link with one field changed, or one field of one of its queues."""
    if len(field) == 1:
        return link.model_copy(update={field[0]: value})
    queue = getattr(link, field[0]) or (
        ShapingSpec() if field[0].startswith("shaping") else QueueSpec()
    )
    update = {field[1]: value}
    other = {"limit_packets": "limit_bytes", "limit_bytes": "limit_packets"}.get(field[1])
    if other is not None:
        update[other] = None  # one limit at most
    return link.model_copy(update={field[0]: queue.model_copy(update=update)})


def reaches(bound: Bound, metric: str, value: float) -> bool:
    """Whether the optimistic bound leaves the target within reach (with SLACK)."""
    if metric == "completion_time":
        t = bound.completion_time
        return t is not None and t <= value * (1 + SLACK)
    return bound.goodput_bps * (1 + SLACK) >= value
