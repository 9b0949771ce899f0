"""Hosts as senders, not routers (engine/host.py, `Node.egress`): a Linux host holds data in
the socket (TCP Small Queues, the qdisc's room) instead of dropping it at its own
interface, and answers a full interface as local congestion, not as loss.

Topology: h1 -[wan]- h2, the host's own link is the bottleneck (10 Mb/s, 25 ms one way,
PPP: a 1,460 B segment is 1,508 B on the wire, 1.2064 ms).
"""

from __future__ import annotations

import math

import pytest
from engine_helpers import bulk, cbr, one_link
from pydantic import ValidationError

from engine import Scenario, simulate
from engine.host import PACING_SHIFT

pytestmark = pytest.mark.unit

RATE, DELAY = 10e6, 0.025
MSS = 1460
WIRE = MSS + 40 + 8  # PPP framing
TX = WIRE * 8 / RATE
BASE_RTT = 2 * DELAY + TX + (40 + 8) * 8 / RATE  # a segment out, its ACK back
WINDOW = 1 << 20


def with_egress(scenario: Scenario, egress: str) -> Scenario:
    data = scenario.model_dump(mode="json")
    for node in data["nodes"]:
        node["egress"] = egress
    return Scenario.model_validate(data)


def bulk_over_own_link(egress: str, *, limit_packets: int = 1000, flows: int = 1) -> Scenario:
    specs = [
        bulk(
            f"f{i}",
            nbytes=3_000_000,
            variant="reno",
            rcv_buf=WINDOW,
            window_scaling=True,
            initial_cwnd=10,
        )
        for i in range(flows)
    ]
    base = one_link(rate=RATE, delay=DELAY, limit_packets=limit_packets, flows=specs)
    return with_egress(base, egress)


def test_the_small_queue_keeps_about_a_millisecond_of_the_pacing_rate_in_the_interface():
    """TCP Small Queues: a sender keeps at most max(2 packets, pacing rate >> 10) bytes in
    its interface, plus the segment that crossed the limit. The pacing rate is Linux's
    cwnd / srtt times at most 2 (slow start); cwnd never exceeds the 1 MiB window and
    srtt is at least the base RTT, so the bytes stay below 2 * 1 MiB / BASE_RTT / 1024 and
    the packets waiting behind the one on the wire below that / 1,500 B. Routed like a
    router's (`egress: drop`), the same window piles into the interface: its queue holds
    the window less the path's bandwidth-delay product (62.5 kB, 41 packets)."""
    held = simulate(bulk_over_own_link("backpressure"))
    dropped = simulate(bulk_over_own_link("drop"))
    limit_bytes = 2 * WINDOW / BASE_RTT / (1 << PACING_SHIFT)
    waiting_bound = math.floor((limit_bytes + MSS + 40) / (MSS + 40))  # the one on the wire
    port = held.links["wan:h1>h2"]
    assert port.drops == 0
    assert port.queue_max <= waiting_bound, (port.queue_max, waiting_bound)
    # The sender's RTT then excludes its wait in the socket: at most the base round trip
    # plus the small queue's packets ahead of it.
    rtt_bound = BASE_RTT + waiting_bound * TX
    assert held.flows["f0"].rtt_max <= rtt_bound * (1 + 1e-9), held.flows["f0"].rtt_max
    assert dropped.links["wan:h1>h2"].queue_max > 10 * waiting_bound
    # Holding data in the socket never starves the link: the transfer takes its
    # serialisation time, the link's idle time in slow start (windows of 10, 20 and 40
    # segments against a 51 ms round trip: 39 + 27 + 3 ms) and the last packet's one-way
    # delay (25 ms): 97 ms beyond serialisation, under two round trips, in both models.
    serialisation = 3_000_000 / MSS * TX
    for result in (held, dropped):
        assert result.flows["f0"].completion_time < serialisation + 2 * BASE_RTT


def test_a_full_interface_is_local_congestion_not_loss():
    """Three senders on one host, whose interface queue holds 4 packets: their small queues
    (2 packets or more each) overfill it. Linux refuses the segment (NET_XMIT_DROP), keeps
    it in the socket and enters CWR: ssthresh falls although nothing is lost. Routed like a
    router's, the same queue drops the segments and each costs a loss recovery."""
    held = simulate(bulk_over_own_link("backpressure", limit_packets=4, flows=3))
    assert held.links["wan:h1>h2"].drops == 0
    for fid in ("f0", "f1", "f2"):
        flow = held.flows[fid]
        assert flow.completed and flow.retransmissions == 0, (fid, flow)
    assert any(f"flow.{fid}.ssthresh" in held.series for fid in ("f0", "f1", "f2"))
    dropped = simulate(bulk_over_own_link("drop", limit_packets=4, flows=3))
    assert dropped.links["wan:h1>h2"].drops > 0
    assert sum(dropped.flows[f].retransmissions for f in ("f0", "f1", "f2")) > 0


def test_udp_datagrams_beyond_the_queue_are_still_dropped():
    """A datagram socket is not held back: 12 Mb/s of CBR into a 10 Mb/s interface loses
    the excess at the host's queue, as Linux's qdisc drops it."""
    scenario = with_egress(
        one_link(rate=RATE, delay=DELAY, limit_packets=50, flows=[cbr(rate=12e6, stop=2.0)]),
        "backpressure",
    )
    result = simulate(scenario)
    assert result.links["wan:h1>h2"].drops > 0


def test_egress_is_a_hosts_option_and_defaults_to_backpressure():
    data = one_link().model_dump(mode="json")
    for node in data["nodes"]:
        del node["egress"]
    scenario = Scenario.model_validate(data)
    assert {n.egress for n in scenario.nodes} == {"backpressure"}
    data = scenario.model_dump(mode="json")
    data["nodes"].append({"id": "r", "kind": "router", "egress": "drop"})
    with pytest.raises(ValidationError) as caught:
        Scenario.model_validate(data)
    assert caught.value.errors()[0]["loc"] == ("nodes", 2, "egress")
    data["nodes"][2] = {"id": "r", "kind": "router"}
    again = Scenario.model_validate(data)
    assert again.nodes[2].egress is None
    assert Scenario.model_validate(again.model_dump(mode="json")) == again


def test_a_scenario_pinned_to_dropping_hosts_keeps_its_old_identity():
    """`egress: drop` simulates what a scenario without the field did before it existed:
    the identity leaves it out, so such a scenario keeps its hash and cached results;
    the new default is a different simulation and hashes differently."""
    dropping = with_egress(one_link(), "drop")
    assert '"egress"' not in dropping.canonical_json()
    linux = with_egress(one_link(), "backpressure")
    assert '"egress":"backpressure"' in linux.canonical_json()
