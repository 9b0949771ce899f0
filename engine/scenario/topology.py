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

Cost: a `Topology` is built once per scenario in linear time and answers every route of
it. Routes toward one destination share a breadth-first search rooted where the
destination's "tail" joins the rest of the network (see `_Target`): every host behind a
router, every branch router behind one Frame Relay switch, shares its router's or switch's
search, so a scenario of thousands of flows costs a few searches, not one per flow.

This module reads the scenario models and never modifies them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

if TYPE_CHECKING:
    from engine.scenario.framerelay import FrameRelaySpec, Pvc
    from engine.scenario.network import Link, Node

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


class Network(Protocol):
    """What routing reads of a scenario (engine.scenario.document's `Scenario`, which
    routes its flows while it validates, and is therefore named by this protocol)."""

    @property
    def nodes(self) -> Sequence[Node]: ...

    @property
    def links(self) -> Sequence[Link]: ...

    @property
    def frame_relay(self) -> FrameRelaySpec | None: ...


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


class _Search(NamedTuple):
    """A breadth-first search from `root` through forwarding nodes: each node's level, and
    for each node but the root its first step back toward the root, (link id, node), the
    smallest link id among the neighbours one level closer (the tie-break rule)."""

    level: dict[str, int]
    parent: dict[str, tuple[str, str]]


class _Target(NamedTuple):
    """How far every node is from one destination.

    `tail` is the destination followed by the nodes that can only be reached through the
    next one: a host and its single router, a branch router and its single switch. Every
    route from elsewhere enters the tail at its last node, `tail[-1]`, so the distance of
    any other node is `len(tail) - 1` plus its level in the search rooted there.
    """

    tail: list[str]
    distance: dict[str, int]  # position in `tail` = distance to the destination
    search: _Search


class Topology:
    """A scenario's adjacency and link index, built once and queried for many routes."""

    def __init__(self, scenario: Network) -> None:
        """Index the scenario's nodes, links and PVCs (linear time)."""
        self._nodes = nodes = {node.id: node.kind for node in scenario.nodes}
        adjacent: dict[str, list[tuple[str, str]]] = {node_id: [] for node_id in nodes}
        self._links: dict[str, Link] = {}
        for link in scenario.links:
            adjacent.setdefault(link.a, []).append((link.id, link.b))
            adjacent.setdefault(link.b, []).append((link.id, link.a))
            self._links.setdefault(link.id, link)
        # Sorted by link id so that the first qualifying neighbour is the tie-break.
        self._adjacent = {node: sorted(edges) for node, edges in adjacent.items()}
        # Searches walk forwarding neighbours only: a router's hundreds of hosts are not
        # visited by every search that crosses it.
        self._forwarding = {
            node: [edge for edge in edges if nodes.get(edge[1]) != "host"]
            for node, edges in self._adjacent.items()
        }
        # The first link between two nodes, for steps whose next node is already known.
        self._first_link: dict[tuple[str, str], str] = {}
        for node, edges in self._adjacent.items():
            for link_id, neighbour in reversed(edges):
                self._first_link[(node, neighbour)] = link_id
        # PVCs by their src router, and by (src, dst) for a hub that is the src of many.
        self._pvcs_at: dict[str, list[tuple[int, Pvc]]] = {}
        self._pvcs_between: dict[tuple[str, str], list[tuple[int, Pvc]]] = {}
        if scenario.frame_relay is not None:
            for order, pvc in enumerate(scenario.frame_relay.pvcs):
                self._pvcs_at.setdefault(pvc.src, []).append((order, pvc))
                self._pvcs_between.setdefault((pvc.src, pvc.dst), []).append((order, pvc))
        self._searches: dict[str, _Search] = {}
        self._targets: dict[str, _Target] = {}
        self._routes: dict[tuple[str, str], list[Hop] | None] = {}

    def _can_forward(self, node: str) -> bool:
        """Whether `node` may be an intermediate node of a route (not a host)."""
        return self._nodes.get(node) != "host"

    # --- distances -----------------------------------------------------------------------

    def _search(self, root: str) -> _Search:
        """Breadth-first search from `root` (of any kind) through forwarding nodes, cached."""
        cached = self._searches.get(root)
        if cached is not None:
            return cached
        level = {root: 0}
        parent: dict[str, tuple[str, str]] = {}
        queue = deque([root])
        forwarding = self._forwarding
        while queue:
            node = queue.popleft()
            below = level[node] + 1
            for link_id, neighbour in forwarding.get(node, ()):
                seen = level.get(neighbour)
                if seen is None:
                    level[neighbour] = below
                    parent[neighbour] = (link_id, node)
                    queue.append(neighbour)
                elif seen == below and (link_id, node) < parent[neighbour]:
                    parent[neighbour] = (link_id, node)
        found = self._searches[root] = _Search(level, parent)
        return found

    def _target(self, dst: str) -> _Target:
        """The destination's tail and the search rooted at its end, cached per destination."""
        cached = self._targets.get(dst)
        if cached is not None:
            return cached
        tail = [dst]
        index = {dst: 0}
        while True:
            # The forwarding neighbours of the tail's end that are not in the tail already:
            # exactly one means every route from outside comes in through it.
            nxt = self._single_way_out(tail[-1], index)
            if nxt is None:
                break
            index[nxt] = len(tail)
            tail.append(nxt)
        found = self._targets[dst] = _Target(tail, index, self._search(tail[-1]))
        return found

    def _single_way_out(self, node: str, inside: dict[str, int]) -> str | None:
        """The one forwarding neighbour of `node` not `inside`, or None when there are none
        or several (stopping at the second: a switch may have thousands)."""
        found = None
        for _, neighbour in self._forwarding.get(node, ()):
            if neighbour in inside or neighbour == found:
                continue
            if found is not None:
                return None
            found = neighbour
        return found

    @staticmethod
    def _distance(target: _Target, node: str) -> int | None:
        """Hops from a forwarding `node` (or the destination) to the destination."""
        at = target.distance.get(node)
        if at is not None:
            return at
        level = target.search.level.get(node)
        return None if level is None else len(target.tail) - 1 + level

    # --- routes --------------------------------------------------------------------------

    def route(self, src: str, dst: str) -> list[Hop] | None:
        """Return the route from `src` to `dst`, or None when there is none."""
        key = (src, dst)
        if key not in self._routes:
            self._routes[key] = self._find_route(src, dst)
        hops = self._routes[key]
        return None if hops is None else list(hops)

    def _find_route(self, src: str, dst: str) -> list[Hop] | None:
        if src not in self._nodes or dst not in self._nodes:
            return None
        if src == dst:
            return []
        target = self._target(dst)
        hops: list[Hop] = []
        node = src
        if not self._can_forward(src) and src not in target.distance:
            # A host first steps to the neighbour closest to dst, smallest link id first.
            best: tuple[int, str, str] | None = None
            for link_id, neighbour in self._adjacent[src]:
                if neighbour != dst and not self._can_forward(neighbour):
                    continue
                d = self._distance(target, neighbour)
                if d is not None and (best is None or d < best[0]):
                    best = (d, link_id, neighbour)  # sorted: the first of equals wins
            if best is None:
                return None
            hops.append(Hop(best[1], src, best[2]))
            node = best[2]
        elif self._distance(target, src) is None:
            return None
        while node != dst:
            at = target.distance.get(node)
            if at is not None:
                nxt = target.tail[at - 1]  # within the tail there is one way in
                link_id = self._first_link[(node, nxt)]
            else:
                link_id, nxt = target.search.parent[node]
            hops.append(Hop(link_id, node, nxt))
            node = nxt
        return hops

    # --- facts about paths ---------------------------------------------------------------

    def link(self, link_id: str) -> Link:
        """The first link with id `link_id`."""
        return self._links[link_id]

    def links_on(self, hops: list[Hop]) -> list[Link]:
        """The links crossed by `hops`, in path order."""
        if not hops:
            raise ValueError("an empty path has no links")
        return [self._links[hop.link_id] for hop in hops]

    def narrowest(self, hops: list[Hop]) -> Link:
        """The first link with the smallest MTU on the path."""
        return min(self.links_on(hops), key=lambda link: link.mtu)

    def bottleneck(self, hops: list[Hop]) -> tuple[Link, float]:
        """The first link with the lowest rate in the path's direction, and that rate."""
        if not hops:
            raise ValueError("an empty path has no links")
        rates = [(self._links[hop.link_id].rate_from(hop.src), i) for i, hop in enumerate(hops)]
        rate, i = min(rates)
        return self._links[hops[i].link_id], rate

    def round_trip_delay(self, hops: list[Hop]) -> float:
        """Propagation delay out along `hops` and back over the same links, s."""
        return sum(
            self._links[hop.link_id].delay_from(hop.src)
            + self._links[hop.link_id].delay_from(hop.dst)
            for hop in hops
        )

    def pvc_span(self, hops: list[Hop]) -> PvcSpan | None:
        """The PVC carrying the path and which of its hops it carries, or None."""
        if not self._pvcs_at or not hops:
            return None
        position = {hops[0].src: 0} | {hop.dst: index + 1 for index, hop in enumerate(hops)}
        candidates: list[tuple[int, Pvc]] = []
        for node in position:
            starting = self._pvcs_at.get(node, ())
            if len(starting) <= len(position):
                candidates.extend(starting)
            else:  # a hub: look up the path's nodes rather than scan all its PVCs
                for other in position:
                    candidates.extend(self._pvcs_between.get((node, other), ()))
        spans: list[PvcSpan] = []
        for _, pvc in sorted(candidates, key=lambda item: item[0]):  # scenario order
            at_src, at_dst = position.get(pvc.src), position.get(pvc.dst)
            if at_src is None or at_dst is None or at_src == at_dst:
                continue
            # Node i is where hop i starts, so the PVC carries hops[entry:exit].
            entry, exit_ = min(at_src, at_dst), max(at_src, at_dst)
            spans.append(PvcSpan(pvc, entry, exit_, forward=at_src < at_dst))
        if not spans:
            return None
        return min(spans, key=lambda span: (span.first, span.first - span.last, span.pvc.id))


def route(scenario: Network, src: str, dst: str) -> list[Hop] | None:
    """Return the route from `src` to `dst` in `scenario`, or None when there is none.
    For many routes build one `Topology` and ask it."""
    return Topology(scenario).route(src, dst)


def narrowest_link(scenario: Network, hops: list[Hop]) -> Link:
    """Return the first link with the smallest MTU on the path."""
    return Topology(scenario).narrowest(hops)


def path_mtu(scenario: Network, hops: list[Hop]) -> int:
    """Return the smallest MTU of the links on the path, in bytes."""
    return narrowest_link(scenario, hops).mtu


def bottleneck_link(scenario: Network, hops: list[Hop]) -> Link:
    """Return the first link with the lowest rate in the path's direction."""
    return Topology(scenario).bottleneck(hops)[0]


def pvc_span(scenario: Network, hops: list[Hop]) -> PvcSpan | None:
    """Return the PVC carrying the path and which of its hops it carries, or None."""
    return Topology(scenario).pvc_span(hops)


def pvc_for(scenario: Network, hops: list[Hop]) -> Pvc | None:
    """Return the PVC that carries the path (either direction), or None."""
    span = pvc_span(scenario, hops)
    return None if span is None else span.pvc
