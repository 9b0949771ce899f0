"""Property test of engine.scenario.topology: the Topology's shared searches give the same route as a
plain breadth-first search from each destination, on random topologies with hosts,
routers, switches, parallel links and ties (hypothesis)."""

from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.scenario import Link, Node, Scenario
from engine.scenario.topology import Hop, Topology

pytestmark = pytest.mark.unit


def reference_route(scenario: Scenario, src: str, dst: str) -> list[Hop] | None:
    """The rule of SCENARIO.md spelled out: BFS distances to `dst` in which hosts other
    than `dst` are not expanded, then from `src` the first neighbour (by link id) one hop
    closer that is `dst` or may forward."""
    kinds = {node.id: node.kind for node in scenario.nodes}
    if src not in kinds or dst not in kinds:
        return None
    adjacent: dict[str, list[tuple[str, str]]] = {node: [] for node in kinds}
    for link in scenario.links:
        adjacent.setdefault(link.a, []).append((link.id, link.b))
        adjacent.setdefault(link.b, []).append((link.id, link.a))
    adjacent = {node: sorted(edges) for node, edges in adjacent.items()}
    distances = {dst: 0}
    queue = deque([dst])
    while queue:
        node = queue.popleft()
        if node != dst and kinds.get(node) == "host":
            continue
        for _, neighbour in adjacent.get(node, ()):
            if neighbour not in distances:
                distances[neighbour] = distances[node] + 1
                queue.append(neighbour)
    if src not in distances:
        return None
    hops = []
    node = src
    while node != dst:
        link_id, nxt = next(
            (link_id, neighbour)
            for link_id, neighbour in adjacent[node]
            if distances.get(neighbour) == distances[node] - 1
            and (neighbour == dst or kinds.get(neighbour) != "host")
        )
        hops.append(Hop(link_id, node, nxt))
        node = nxt
    return hops


@st.composite
def topologies(draw) -> Scenario:
    n = draw(st.integers(min_value=2, max_value=12))
    kinds = draw(st.lists(st.sampled_from(["host", "router", "fr_switch"]), min_size=n, max_size=n))
    nodes = [Node(id=f"n{i}", kind=kind) for i, kind in enumerate(kinds)]
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n))
    # Few distinct ids, so that ties between paths (and parallel links) are frequent.
    ids = draw(st.permutations([f"l{i}" for i in range(len(pairs))]))
    links = [
        Link(id=ids[k], a=f"n{a}", b=f"n{b}", rate=1e6) for k, (a, b) in enumerate(pairs) if a != b
    ]
    return Scenario.model_construct(nodes=nodes, links=links, frame_relay=None)


@settings(max_examples=300, deadline=None)
@given(topologies())
def test_every_route_matches_a_search_from_its_destination(scenario: Scenario) -> None:
    topology = Topology(scenario)
    names = [node.id for node in scenario.nodes] + ["missing"]
    for src in names:
        for dst in names:
            assert topology.route(src, dst) == reference_route(scenario, src, dst), (src, dst)
