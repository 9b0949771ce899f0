"""Static routing over a scenario's topology: shortest paths, path MTU, and PVC selection.

Rules (SCENARIO.md, "Routing"):

- A route is a shortest path by hop count. Links are full duplex, so a link can be used in
  either direction, and parallel links between the same two nodes are allowed.
- Hosts never forward transit traffic: only routers and fr_switches are intermediate nodes.
- Ties are broken by link id: among the equal-length paths the route is the one whose
  sequence of link ids is lexicographically smallest (ids compared as strings).
- A flow is carried by a PVC when the PVC's two routers both lie on its path: `src` before
  `dst` (the forward direction of the PVC) or `dst` before `src` (the reverse direction,
  e.g. the flow's ACKs). When several PVCs qualify, the path enters the first one it meets,
  the longest span on a tie, then the smallest PVC id.

This module reads the scenario models and never modifies them.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from engine.scenario import Link, Pvc, Scenario

__all__ = [
    "Hop",
    "PvcSpan",
    "Topology",
    "bottleneck_link",
    "narrowest_link",
    "path_mtu",
    "pvc_for",
    "pvc_span",
    "route",
]


class Hop(NamedTuple):
    """One hop of a route: crossing link `link_id` from node `src` to node `dst`."""

    link_id: str
    src: str
    dst: str


class PvcSpan(NamedTuple):
    """The part of a path carried by a PVC: `hops[first:last]`, in the PVC's direction or not."""

    pvc: Pvc
    first: int
    last: int
    forward: bool


class Topology:
    """A scenario's adjacency, built once and queried for many routes."""

    def __init__(self, scenario: Scenario) -> None:
        """Index the scenario's nodes and links."""
        self._nodes = {node.id: node.kind for node in scenario.nodes}
        adjacent: dict[str, list[tuple[str, str]]] = {node_id: [] for node_id in self._nodes}
        for link in scenario.links:
            adjacent.setdefault(link.a, []).append((link.id, link.b))
            adjacent.setdefault(link.b, []).append((link.id, link.a))
        # Sorted by link id so that the first distance-decreasing neighbour is the tie-break.
        self._adjacent = {node: sorted(edges) for node, edges in adjacent.items()}
        self._distances: dict[str, dict[str, int]] = {}

    def _can_forward(self, node: str) -> bool:
        """Whether `node` may be an intermediate node of a route (not a host)."""
        return self._nodes.get(node) != "host"

    def _distances_to(self, dst: str) -> dict[str, int]:
        """Hop counts to `dst` from every node that can reach it (BFS, cached per dst)."""
        cached = self._distances.get(dst)
        if cached is not None:
            return cached
        distances = {dst: 0}
        queue = deque([dst])
        while queue:
            node = queue.popleft()
            # A node reached from a host would have to go through that host: stop there.
            if node != dst and not self._can_forward(node):
                continue
            for _, neighbour in self._adjacent.get(node, ()):
                if neighbour not in distances:
                    distances[neighbour] = distances[node] + 1
                    queue.append(neighbour)
        self._distances[dst] = distances
        return distances

    def route(self, src: str, dst: str) -> list[Hop] | None:
        """Return the route from `src` to `dst`, or None when there is none."""
        if src not in self._nodes or dst not in self._nodes:
            return None
        distances = self._distances_to(dst)
        if src not in distances:
            return None
        hops: list[Hop] = []
        node = src
        while node != dst:
            wanted = distances[node] - 1
            # The node that discovered `node` in the BFS qualifies, so one always exists.
            link_id, nxt = next(
                (link_id, neighbour)
                for link_id, neighbour in self._adjacent[node]
                if distances.get(neighbour) == wanted
                and (neighbour == dst or self._can_forward(neighbour))
            )
            hops.append(Hop(link_id, node, nxt))
            node = nxt
        return hops


def route(scenario: Scenario, src: str, dst: str) -> list[Hop] | None:
    """Return the route from `src` to `dst` in `scenario`, or None when there is none."""
    return Topology(scenario).route(src, dst)


def _links_on(scenario: Scenario, hops: list[Hop]) -> list[Link]:
    """The links crossed by `hops`, in path order."""
    if not hops:
        raise ValueError("an empty path has no links")
    links = {link.id: link for link in scenario.links}
    return [links[hop.link_id] for hop in hops]


def narrowest_link(scenario: Scenario, hops: list[Hop]) -> Link:
    """Return the first link with the smallest MTU on the path."""
    return min(_links_on(scenario, hops), key=lambda link: link.mtu)


def path_mtu(scenario: Scenario, hops: list[Hop]) -> int:
    """Return the smallest MTU of the links on the path, in bytes."""
    return narrowest_link(scenario, hops).mtu


def bottleneck_link(scenario: Scenario, hops: list[Hop]) -> Link:
    """Return the first link with the lowest rate on the path."""
    return min(_links_on(scenario, hops), key=lambda link: link.rate)


def pvc_span(scenario: Scenario, hops: list[Hop]) -> PvcSpan | None:
    """Return the PVC carrying the path and which of its hops it carries, or None."""
    if scenario.frame_relay is None or not hops:
        return None
    position = {hops[0].src: 0} | {hop.dst: index + 1 for index, hop in enumerate(hops)}
    spans: list[PvcSpan] = []
    for pvc in scenario.frame_relay.pvcs:
        at_src, at_dst = position.get(pvc.src), position.get(pvc.dst)
        if at_src is None or at_dst is None or at_src == at_dst:
            continue
        # Node i is where hop i starts, so the PVC carries hops[entry:exit].
        entry, exit_ = min(at_src, at_dst), max(at_src, at_dst)
        spans.append(PvcSpan(pvc, entry, exit_, forward=at_src < at_dst))
    if not spans:
        return None
    return min(spans, key=lambda span: (span.first, span.first - span.last, span.pvc.id))


def pvc_for(scenario: Scenario, hops: list[Hop]) -> Pvc | None:
    """Return the PVC that carries the path (either direction), or None."""
    span = pvc_span(scenario, hops)
    return None if span is None else span.pvc
