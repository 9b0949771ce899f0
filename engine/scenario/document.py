"""`Scenario`: the whole document, the checks that need all of it (unique ids, references,
routes, MTU, PVCs, captures) reported at the offending field's path, and its identity
(canonical JSON and hash)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from pydantic import (
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from engine.example import EXAMPLE_SCENARIO
from engine.protocol import TCP_IP_HEADERS
from engine.scenario.common import (
    MAX_CAPTURE_BYTES,
    MAX_CAPTURE_TOTAL,
    MAX_CAPTURES,
    MAX_ITEMS,
    PCAP_RECORD_HEADER,
    PositiveDuration,
    Seed,
    _Errors,
    _Model,
)
from engine.scenario.flows import CaptureSpec, Flow, TcpBulkFlow
from engine.scenario.framerelay import FrameRelaySpec
from engine.scenario.network import Link, Node
from engine.scenario.topology import Topology
from engine.units import format_duration


class Scenario(_Model):
    """A complete simulation: topology, Frame Relay PVCs, traffic, and run settings."""

    model_config = ConfigDict(json_schema_extra={"examples": [EXAMPLE_SCENARIO]})

    name: str = Field(min_length=1, max_length=200)
    description: str = Field(default="", max_length=10_000)
    seed: Seed = 1
    """Run seed; a run request may override it."""
    duration: PositiveDuration = 3600.0
    """Simulated-time cap."""
    stop_when_done: bool = True
    """End the run when every finite flow has finished."""
    sample_interval: PositiveDuration = 0.1
    """Sampling period of rate-type series."""
    nodes: list[Node] = Field(min_length=2, max_length=MAX_ITEMS)
    links: list[Link] = Field(min_length=1, max_length=MAX_ITEMS)
    frame_relay: FrameRelaySpec | None = None
    flows: list[Flow] = Field(min_length=1, max_length=MAX_ITEMS)
    capture: list[CaptureSpec] = Field(default_factory=list, max_length=MAX_CAPTURES)
    """Packet captures to take (libpcap files of link directions); none by default."""

    @field_validator("name", "description")
    @classmethod
    def _no_nul(cls, text: str) -> str:
        """Text, not binary: a NUL cannot be stored (PostgreSQL text) or shown (terminals)."""
        if "\x00" in text:
            raise PydanticCustomError("nul_character", "must not contain NUL (U+0000) characters")
        return text

    @model_validator(mode="after")
    def _check_whole(self) -> Scenario:
        """Cross-references: unique ids, existing endpoints, a route and a fitting MSS per flow."""
        errors = _Errors("Scenario")
        if self.sample_interval > self.duration:
            errors.add(
                ("sample_interval",),
                "invalid_range",
                f"sample_interval {format_duration(self.sample_interval)} exceeds "
                f"duration {format_duration(self.duration)}",
                self.sample_interval,
            )
        before_topology = len(errors.lines)
        _check_unique(errors, ("nodes",), self.nodes)
        _check_unique(errors, ("links",), self.links)
        nodes: dict[str, Node] = {}
        for node in self.nodes:
            nodes.setdefault(node.id, node)
        for index, link in enumerate(self.links):
            for end in ("a", "b"):
                if getattr(link, end) not in nodes:
                    _unknown_node(errors, ("links", index, end), getattr(link, end))
            if link.a == link.b:
                errors.add(
                    ("links", index, "b"),
                    "same_endpoints",
                    f"link {link.id!r} connects node {link.a!r} to itself",
                    link.b,
                )
            for end, field in (("a", "shaping_a_to_b"), ("b", "shaping_b_to_a")):
                shaped = nodes.get(getattr(link, end))
                if getattr(link, field) is not None and shaped and shaped.kind == "host":
                    errors.add(
                        ("links", index, field),
                        "field_not_allowed",
                        f"{shaped.id!r} is a host: traffic shaping is a router's (a host holds "
                        "its data back in the socket, see nodes[].egress)",
                        None,
                    )
        # Routes are only meaningful on a sound topology; otherwise report the topology alone.
        topology = Topology(self) if len(errors.lines) == before_topology else None
        if self.frame_relay is not None:
            self._check_pvcs(errors, nodes, topology)
        self._check_flows(errors, nodes, topology)
        self._check_captures(errors)
        errors.raise_if_any()
        return self

    def _check_captures(self, errors: _Errors) -> None:
        """Captures name existing links and flows, take each link direction once, and stay
        within the run's bounds on packets and bytes."""
        links = {link.id: link for link in self.links}
        flows = {flow.id for flow in self.flows}
        taken: dict[tuple[str, str], int] = {}
        total = size = 0
        for index, capture in enumerate(self.capture):
            loc = ("capture", index)
            link = links.get(capture.link)
            if link is None:
                errors.add(
                    (*loc, "link"),
                    "unknown_link",
                    f"no link has id {capture.link!r}",
                    capture.link,
                )
            for k, flow_id in enumerate(capture.flows or ()):
                if flow_id not in flows:
                    errors.add(
                        (*loc, "flows", k), "unknown_flow", f"no flow has id {flow_id!r}", flow_id
                    )
            ways = ("a_to_b", "b_to_a") if capture.direction == "both" else (capture.direction,)
            for way in ways:
                other = taken.setdefault((capture.link, way), index)
                if other != index:
                    errors.add(
                        (*loc, "direction"),
                        "duplicate_capture",
                        f"direction {way} of link {capture.link!r} is already captured by "
                        f"capture[{other}]",
                        capture.direction,
                    )
                    break
            total += capture.max_packets
            # A record holds at most the link's MTU (a whole packet) or the snap length.
            kept = min(capture.snaplen, link.mtu) if link is not None else capture.snaplen
            size += capture.max_packets * (PCAP_RECORD_HEADER + kept)
        if total > MAX_CAPTURE_TOTAL:
            errors.add(
                ("capture",),
                "too_many_packets",
                f"the captures ask for {total:,} packets in all; at most "
                f"{MAX_CAPTURE_TOTAL:,} per run",
                total,
            )
        elif size > MAX_CAPTURE_BYTES:
            errors.add(
                ("capture",),
                "capture_too_large",
                f"the captures could make {size / 2**20:,.1f} MiB of files; at most "
                f"{MAX_CAPTURE_BYTES // 2**20} MiB per run: lower max_packets or snaplen",
                size,
            )

    def _check_pvcs(
        self, errors: _Errors, nodes: dict[str, Node], topology: Topology | None
    ) -> None:
        """PVC ids and DLCIs are unique; each joins two distinct, connected routers."""
        assert self.frame_relay is not None
        base = ("frame_relay", "pvcs")
        pvcs = self.frame_relay.pvcs
        _check_unique(errors, base, pvcs)
        _check_unique(errors, base, pvcs, field="dlci")
        for index, pvc in enumerate(pvcs):
            ends_ok = True
            for end in ("src", "dst"):
                ends_ok &= _check_node(
                    errors, (*base, index, end), getattr(pvc, end), nodes, "router"
                )
            if pvc.src == pvc.dst:
                errors.add(
                    (*base, index, "dst"),
                    "same_endpoints",
                    f"PVC {pvc.id!r} starts and ends at router {pvc.src!r}",
                    pvc.dst,
                )
            elif ends_ok and topology is not None and topology.route(pvc.src, pvc.dst) is None:
                errors.add(
                    (*base, index, "dst"),
                    "no_route",
                    f"no route from router {pvc.src!r} to router {pvc.dst!r} for PVC {pvc.id!r}",
                    pvc.dst,
                )

    def _check_flows(
        self, errors: _Errors, nodes: dict[str, Node], topology: Topology | None
    ) -> None:
        """Flow ids are unique; each runs host to host over a route its MSS fits, in time."""
        _check_unique(errors, ("flows",), self.flows)
        for index, flow in enumerate(self.flows):
            loc = ("flows", index)
            src_ok = _check_node(errors, (*loc, "src"), flow.src, nodes, "host")
            dst_ok = _check_node(errors, (*loc, "dst"), flow.dst, nodes, "host")
            if flow.start >= self.duration:
                errors.add(
                    (*loc, "start"),
                    "invalid_range",
                    f"start {format_duration(flow.start)} is not before "
                    f"duration {format_duration(self.duration)}",
                    flow.start,
                )
            if flow.src == flow.dst:
                errors.add(
                    (*loc, "dst"),
                    "same_endpoints",
                    f"flow {flow.id!r} sends from host {flow.src!r} to itself",
                    flow.dst,
                )
                continue
            if not (src_ok and dst_ok and topology is not None):
                continue
            hops = topology.route(flow.src, flow.dst)
            if hops is None:
                errors.add(
                    (*loc, "dst"),
                    "no_route",
                    f"no route from {flow.src!r} to {flow.dst!r} "
                    "(only routers and fr_switches forward; hosts carry no transit traffic)",
                    flow.dst,
                )
            elif isinstance(flow, TcpBulkFlow):
                link = topology.narrowest(hops)
                largest = link.mtu - TCP_IP_HEADERS
                if flow.tcp.mss > largest:
                    errors.add(
                        (*loc, "tcp", "mss"),
                        "mss_exceeds_mtu",
                        f"mss {flow.tcp.mss} B does not fit the path MTU {link.mtu} B "
                        f"(link {link.id!r}) minus {TCP_IP_HEADERS} B of IP and TCP headers: "
                        f"at most {largest} B",
                        flow.tcp.mss,
                    )

    def canonical_json(self) -> str:
        """What is simulated: sorted, compact JSON of SI numbers without name, description,
        seed, and without the fields that simulate what their absence did (`_AS_BEFORE`)."""
        exclude = {"name", "description", "seed"}
        if not self.capture:
            exclude.add("capture")  # so scenarios from before captures keep their hash
        data = self.model_dump(mode="json", exclude=exclude)
        _drop_as_before(data["nodes"], _AS_BEFORE["nodes"])
        _drop_as_before(data["links"], _AS_BEFORE["links"])
        if data["frame_relay"] is not None:
            _drop_as_before(data["frame_relay"]["pvcs"], _AS_BEFORE["pvcs"])
        _drop_as_before([f["tcp"] for f in data["flows"] if "tcp" in f], _AS_BEFORE["tcp"])
        return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)

    def scenario_hash(self) -> str:
        """Identity of what is simulated: "sha256:" and the hex digest of canonical_json()."""
        return "sha256:" + hashlib.sha256(self.canonical_json().encode()).hexdigest()


# Fields added after scenarios were first stored, with the values at which they simulate
# what a scenario without them did: left out of the identity at those values, so that such
# a scenario keeps its hash (and its cached results) while one that uses them does not.
_AS_BEFORE: dict[str, dict[str, tuple[Any, ...]]] = {
    "nodes": {"egress": (None, "drop")},
    "links": {
        "rate_b_to_a": (None,),
        "delay_b_to_a": (None,),
        "shaping_a_to_b": (None,),
        "shaping_b_to_a": (None,),
    },
    "pvcs": {"shaping": (None,)},
    "tcp": {"timestamps": (False,)},
}


def _drop_as_before(items: list[dict[str, Any]], fields: dict[str, tuple[Any, ...]]) -> None:
    """Remove from each dumped item the `fields` whose value simulates as before."""
    for item in items:
        for name, values in fields.items():
            if item[name] in values:
                del item[name]


def _check_unique(
    errors: _Errors, base: tuple[str, ...], items: Iterable[Any], field: str = "id"
) -> None:
    """Report each repeat of an id (or `field`) at the repeating item."""
    seen: dict[Any, int] = {}
    for index, item in enumerate(items):
        value = getattr(item, field)
        if value in seen:
            errors.add(
                (*base, index, field),
                f"duplicate_{field}",
                f"{field} {value!r} is already used by {base[-1]}[{seen[value]}]",
                value,
            )
        else:
            seen[value] = index


def _unknown_node(errors: _Errors, loc: tuple[str | int, ...], node_id: str) -> None:
    """Report a reference to a node that does not exist."""
    errors.add(loc, "unknown_node", f"no node has id {node_id!r}", node_id)


def _check_node(
    errors: _Errors, loc: tuple[str | int, ...], node_id: str, nodes: dict[str, Node], kind: str
) -> bool:
    """Check that `node_id` names a node of `kind`; report and return False otherwise."""
    node = nodes.get(node_id)
    if node is None:
        _unknown_node(errors, loc, node_id)
        return False
    if node.kind != kind:
        errors.add(
            loc, "wrong_node_kind", f"node {node_id!r} is a {node.kind}, expected a {kind}", node_id
        )
        return False
    return True
