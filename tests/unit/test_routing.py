"""Static routing: shortest paths, tie-breaking, host transit, path MTU, PVCs (engine.scenario.topology)."""

import pytest

from engine.scenario import FrameRelaySpec, Link, Node, Pvc, Scenario
from engine.scenario.topology import (
    Hop,
    Topology,
    bottleneck_link,
    narrowest_link,
    path_mtu,
    pvc_for,
    pvc_span,
    route,
)

pytestmark = pytest.mark.unit


def topology(nodes: str, links: list[tuple], pvcs: list[Pvc] | None = None) -> Scenario:
    """A scenario holding only a topology: "h1:host r1:router" and (id, a, b[, mtu, rate])."""
    node_list = [Node(id=spec.split(":")[0], kind=spec.split(":")[1]) for spec in nodes.split()]
    link_list = []
    for spec in links:
        link_id, a, b, mtu, rate = spec if len(spec) == 5 else (*spec, 1500, 1e6)
        link_list.append(Link(id=link_id, a=a, b=b, mtu=mtu, rate=rate))
    frame_relay = FrameRelaySpec(pvcs=pvcs) if pvcs is not None else None
    # Routing reads only the topology: skip the whole-scenario checks (flows, routes).
    return Scenario.model_construct(nodes=node_list, links=link_list, frame_relay=frame_relay)


def link_ids(hops: list[Hop] | None) -> list[str] | None:
    return None if hops is None else [hop.link_id for hop in hops]


DIAMOND = topology(
    "h1:host r1:router r2:router r3:router r4:router h2:host",
    [
        ("x", "h1", "r1"),
        ("n", "r1", "r2"),
        ("m", "r1", "r3"),
        ("a", "r2", "r4"),
        ("z", "r3", "r4"),
        ("y", "r4", "h2"),
    ],
)


def test_diamond_tie_is_broken_by_the_lexicographically_smallest_link_ids():
    # [x, m, z, y] < [x, n, a, y]: the first differing link decides, not the later "a".
    assert route(DIAMOND, "h1", "h2") == [
        Hop("x", "h1", "r1"),
        Hop("m", "r1", "r3"),
        Hop("z", "r3", "r4"),
        Hop("y", "r4", "h2"),
    ]


def test_reverse_direction_breaks_its_own_tie():
    # From h2 the first choice is at r4: "a" (to r2) beats "z" (to r3).
    assert link_ids(route(DIAMOND, "h2", "h1")) == ["y", "a", "n", "x"]


def test_fewer_hops_beat_smaller_link_ids():
    scenario = topology(
        "h1:host r1:router r2:router r3:router h2:host",
        [
            ("a1", "h1", "r1"),
            ("a2", "r1", "r2"),
            ("a3", "r2", "r3"),
            ("z", "r1", "r3"),
            ("a4", "r3", "h2"),
        ],
    )
    assert link_ids(route(scenario, "h1", "h2")) == ["a1", "z", "a4"]


def test_parallel_links_use_the_smallest_id_in_both_directions():
    scenario = topology(
        "h1:host r1:router h2:host",
        [("p2", "h1", "r1"), ("p1", "h1", "r1"), ("q", "r1", "h2")],
    )
    assert link_ids(route(scenario, "h1", "h2")) == ["p1", "q"]
    assert route(scenario, "h2", "h1") == [Hop("q", "h2", "r1"), Hop("p1", "r1", "h1")]


def test_link_ids_compare_as_strings():
    scenario = topology(
        "h1:host r1:router r2:router r3:router h2:host",
        [
            ("l0", "h1", "r1"),
            ("l2", "r1", "r2"),
            ("l10", "r1", "r3"),
            ("l3", "r2", "h2"),
            ("l4", "r3", "h2"),
        ],
    )
    assert link_ids(route(scenario, "h1", "h2")) == ["l0", "l10", "l4"]


def test_hosts_do_not_carry_transit_traffic():
    # The two-hop path through host "mid" is shorter, but hosts do not forward.
    scenario = topology(
        "h1:host mid:host r1:router r2:router h2:host",
        [
            ("a", "h1", "mid"),
            ("b", "mid", "h2"),
            ("c", "h1", "r1"),
            ("d", "r1", "r2"),
            ("e", "r2", "h2"),
        ],
    )
    assert link_ids(route(scenario, "h1", "h2")) == ["c", "d", "e"]
    assert link_ids(route(scenario, "h1", "mid")) == ["a"]


def test_no_route_when_only_a_host_connects():
    scenario = topology(
        "h1:host r1:router mid:host r2:router h2:host",
        [("a", "h1", "r1"), ("b", "r1", "mid"), ("c", "mid", "r2"), ("d", "r2", "h2")],
    )
    assert route(scenario, "h1", "h2") is None
    assert route(scenario, "h1", "mid") is not None


def test_fr_switches_forward_and_disconnected_or_unknown_nodes_have_no_route():
    scenario = topology(
        "h1:host sw:fr_switch h2:host lone:host",
        [("a", "h1", "sw"), ("b", "sw", "h2")],
    )
    assert link_ids(route(scenario, "h1", "h2")) == ["a", "b"]
    assert route(scenario, "h1", "lone") is None
    assert route(scenario, "h1", "nowhere") is None
    assert route(scenario, "h1", "h1") == []


def test_topology_answers_many_queries_consistently():
    topo = Topology(DIAMOND)
    assert topo.route("h1", "h2") == route(DIAMOND, "h1", "h2")
    assert topo.route("r2", "h2") == [Hop("a", "r2", "r4"), Hop("y", "r4", "h2")]
    assert topo.route("h1", "h2") == route(DIAMOND, "h1", "h2")  # cached distances


def test_path_mtu_and_bottleneck():
    scenario = topology(
        "h1:host r1:router r2:router h2:host",
        [
            ("a", "h1", "r1", 1500, 10e6),
            ("b", "r1", "r2", 576, 1.544e6),
            ("c", "r2", "h2", 576, 1.544e6),
        ],
    )
    hops = route(scenario, "h1", "h2")
    assert path_mtu(scenario, hops) == 576
    assert narrowest_link(scenario, hops).id == "b"  # the first of equals
    assert bottleneck_link(scenario, hops).id == "b"
    with pytest.raises(ValueError, match="empty path"):
        path_mtu(scenario, [])


FR_NODES = "ws:host branch:router cloud:fr_switch dc:router server:host"
FR_LINKS = [
    ("lan1", "ws", "branch"),
    ("access1", "branch", "cloud"),
    ("access2", "cloud", "dc"),
    ("lan2", "dc", "server"),
]


def pvc(pvc_id: str, dlci: int, src: str, dst: str) -> Pvc:
    return Pvc(id=pvc_id, dlci=dlci, src=src, dst=dst, cir="T1", bc=1544000)


def test_pvc_carries_both_directions_of_a_flow_between_its_routers():
    scenario = topology(FR_NODES, FR_LINKS, [pvc("pvc1", 100, "branch", "dc")])
    forward = route(scenario, "ws", "server")
    backward = route(scenario, "server", "ws")
    assert pvc_for(scenario, forward).id == "pvc1"
    assert pvc_for(scenario, backward).id == "pvc1"
    span = pvc_span(scenario, forward)
    assert (span.first, span.last, span.forward) == (1, 3, True)
    assert [hop.link_id for hop in forward[span.first : span.last]] == ["access1", "access2"]
    assert pvc_span(scenario, backward)[1:] == (1, 3, False)


def test_no_pvc_when_the_path_misses_one_of_its_routers():
    scenario = topology(FR_NODES, FR_LINKS, [pvc("pvc1", 100, "branch", "dc")])
    assert pvc_for(scenario, route(scenario, "ws", "branch")) is None
    assert pvc_for(topology(FR_NODES, FR_LINKS), route(scenario, "ws", "server")) is None
    assert pvc_for(scenario, []) is None


def test_first_pvc_met_wins_then_longest_then_id():
    nodes = "h1:host r1:router s1:fr_switch r2:router s2:fr_switch r3:router h2:host"
    links = [
        ("a", "h1", "r1"),
        ("b", "r1", "s1"),
        ("c", "s1", "r2"),
        ("d", "r2", "s2"),
        ("e", "s2", "r3"),
        ("f", "r3", "h2"),
    ]
    pvcs = [
        pvc("late", 101, "r2", "r3"),
        pvc("short", 102, "r1", "r2"),
        pvc("long", 103, "r1", "r3"),
        pvc("again", 104, "r3", "r1"),
    ]
    scenario = topology(nodes, links, pvcs)
    hops = route(scenario, "h1", "h2")
    span = pvc_span(scenario, hops)
    # "long" and "again" both span r1..r3; "again" is in reverse but its id is smaller.
    assert (span.pvc.id, span.first, span.last, span.forward) == ("again", 1, 5, False)
    scenario = topology(nodes, links, pvcs[:3])
    assert pvc_for(scenario, hops).id == "long"
