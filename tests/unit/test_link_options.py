"""Link options for matching other simulators: `encap: none` (ns-2: the IP packet is all
that crosses), an explicit `overhead_bytes` (ns-3's point-to-point adds 2 bytes), and a
queue per direction (RED for the data, DropTail for the ACKs); and the warning for a PVC
whose contract cannot pass one frame."""

from __future__ import annotations

import pytest
from engine_helpers import IP_TCP, bulk, cbr, one_link, run, ser
from pydantic import ValidationError

from engine import Scenario
from engine.analysis.warnings import scenario_warnings
from engine.net import DropTail, Red
from engine.simulation import Network

pytestmark = pytest.mark.unit

SEGMENTS = 50


@pytest.mark.parametrize(
    ("fields", "overhead"),
    [
        ({"encap": "none"}, 0),
        ({"encap": "ppp", "overhead_bytes": 2}, 2),
        ({"encap": "ethernet", "overhead_bytes": 0}, 0),  # replaces 38 B and the 46 B padding
        ({"encap": "atm_aal5", "overhead_bytes": 5}, 5),  # and ATM's cells
    ],
)
def test_the_wire_carries_the_ip_packet_plus_the_stated_overhead(fields, overhead):
    """50 full segments and a 28-byte-payload UDP stream: each packet on the wire is its IP
    size plus `overhead`, and serialises in (size + overhead) * 8 / rate."""
    scenario = one_link(rate=1e6, delay=0.01, flows=[bulk(nbytes=SEGMENTS * 1460)])
    d = scenario.model_dump(mode="json")
    d["links"][0].update(fields)
    result = run(Scenario.model_validate(d))
    data = result.links["wan:h1>h2"]
    assert data.packets == SEGMENTS
    assert data.bytes == SEGMENTS * (1460 + IP_TCP + overhead)
    assert data.utilization * result.sim_time == pytest.approx(
        SEGMENTS * ser(1460 + IP_TCP + overhead, 1e6), rel=1e-9
    )
    acks = result.links["wan:h2>h1"]
    assert acks.bytes == acks.packets * (IP_TCP + overhead)


def test_overhead_bytes_is_validated_at_its_path():
    d = one_link().model_dump(mode="json")
    d["links"][0]["overhead_bytes"] = -1
    with pytest.raises(ValidationError) as info:
        Scenario.model_validate(d)
    assert info.value.errors()[0]["loc"] == ("links", 0, "overhead_bytes")


def red(**fields) -> dict:
    return {"discipline": "red", "limit_packets": 50, "min_th": 5, "max_th": 15, **fields}


def test_a_single_queue_still_means_both_directions():
    d = one_link().model_dump(mode="json")
    d["links"][0]["queue"] = red()
    d["links"][0].pop("queue_a_to_b", None)
    d["links"][0].pop("queue_b_to_a", None)
    net = Network(Scenario.model_validate(d), 1)
    assert type(net.ports[("wan", "h1", "h2")].queue) is Red
    assert type(net.ports[("wan", "h2", "h1")].queue) is Red


def test_each_direction_can_have_its_own_queue():
    """RED on the data direction only: the ACK direction keeps a 10-packet DropTail."""
    d = one_link().model_dump(mode="json")
    d["links"][0]["queue"] = {"discipline": "droptail", "limit_packets": 10}
    d["links"][0]["queue_a_to_b"] = red()
    net = Network(Scenario.model_validate(d), 1)
    data, acks = net.ports[("wan", "h1", "h2")].queue, net.ports[("wan", "h2", "h1")].queue
    assert type(data) is Red and data.limit_packets == 50
    assert type(acks) is DropTail and acks.limit_packets == 10
    d["links"][0]["queue_b_to_a"] = {"discipline": "droptail", "limit_bytes": 3000}
    net = Network(Scenario.model_validate(d), 1)
    assert net.ports[("wan", "h2", "h1")].queue.limit_bytes == 3000


def test_per_direction_red_thresholds_are_checked_and_warned_at_their_path():
    d = one_link().model_dump(mode="json")
    d["links"][0]["queue_b_to_a"] = red(limit_packets=10)
    assert scenario_warnings(Scenario.model_validate(d)) == [
        "links.wan.queue_b_to_a.max_th 15 is not below limit_packets 10: the queue "
        "overflows before RED's max_th is reached"
    ]
    d["links"][0]["queue_b_to_a"] = red(min_th=20)
    with pytest.raises(ValidationError) as info:
        Scenario.model_validate(d)
    assert info.value.errors()[0]["loc"] == ("links", 0, "queue_b_to_a", "max_th")


def test_a_pvc_whose_bc_plus_be_is_below_one_frame_is_warned_about():
    """Bc + Be = 8,000 bit; a full TCP segment is a 1,508-byte (12,064-bit) frame on the
    Frame Relay access link: the policer can never admit it."""
    from test_engine_framerelay import fr_net, greedy, pvc

    scenario = fr_net(pvcs=[pvc(cir=256e3, bc=6000, be=2000)], flows=[greedy()])
    warning = (
        "frame_relay.pvcs.p: bc + be (8,000 bit) is smaller than one frame of flow f "
        "(12,064 bit on link a1): the policer discards every such frame, so the PVC "
        "delivers none of them; raise bc (or be) to at least one frame"
    )
    assert warning in scenario_warnings(scenario)
    result = run(scenario)
    assert warning in result.warnings and result.flows["f"].bytes_delivered == 0
    # One frame exactly is enough: no warning.
    fine = fr_net(pvcs=[pvc(cir=256e3, bc=12064, be=0)], flows=[greedy(), cbr(rate=10e3)])
    assert not [w for w in scenario_warnings(fine) if "smaller than one frame" in w]
