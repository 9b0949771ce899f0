"""The scenario language's warnings: advisory findings that do not reject a scenario."""

import pytest
from scenario_example import EXAMPLE, example

from engine.analysis.warnings import scenario_warnings
from engine.scenario import Scenario

pytestmark = pytest.mark.unit


# --- warnings ------------------------------------------------------------------------------


def with_tcp(**tcp) -> Scenario:
    data = example()
    data["flows"][0]["tcp"].update(tcp)
    return Scenario.model_validate(data)


def test_example_has_no_warnings():
    assert scenario_warnings(Scenario.model_validate(EXAMPLE)) == []


def test_large_window_without_scaling_is_reported_not_capped():
    scenario = with_tcp(rcv_buf=200000, snd_buf=None)
    assert scenario.flows[0].tcp.rcv_buf == 200000
    assert scenario_warnings(scenario) == [
        "flows.backup.tcp.rcv_buf 200000 B exceeds 65,535 B without window_scaling: "
        "capped at 65,535 B (RFC 7323)"
    ]
    assert scenario_warnings(with_tcp(rcv_buf=200000, snd_buf=None, window_scaling=True)) == []


def test_send_buffer_smaller_than_the_window():
    assert scenario_warnings(with_tcp(rcv_buf=65535, snd_buf=8760)) == [
        "flows.backup.tcp.snd_buf 8760 B is smaller than the receive window 65,535 B: "
        "the send buffer limits the flight size"
    ]


def test_initial_rto_outside_bounds_and_sack_without_congestion_control():
    found = scenario_warnings(with_tcp(min_rto="2s", variant="none", sack=True))
    assert found == [
        "flows.backup.tcp.initial_rto 1 s is outside [min_rto 2 s, max_rto 60 s]: the bounds apply",
        "flows.backup.tcp.sack has no effect with variant none (go-back-N on timeout)",
    ]


def test_transfer_that_cannot_finish_before_the_end_of_the_run():
    # 25 MB at one 8,760 B window per 156.4 ms round trip takes about 446 s.
    scenario = Scenario.model_validate(example(duration="300s"))
    (warning,) = scenario_warnings(scenario)
    assert warning.startswith("flows.backup cannot deliver 25,000,000 B by 300 s (duration)")
    assert "bottleneck 1.544 Mbit/s on link access1" in warning
    assert "window 8,760 B per 156.4 ms round trip" in warning
    assert scenario_warnings(Scenario.model_validate(example(duration="500s"))) == []


def test_flow_stop_after_duration_and_udp_faster_than_the_bottleneck():
    data = example(duration="100s")
    data["flows"] = [dict(EXAMPLE["flows"][1], rate="2Mbps", stop="200s", packet_size=1500)]
    assert scenario_warnings(Scenario.model_validate(data)) == [
        "flows.cross.stop 200 s is after duration 100 s: the flow ends at 100 s",
        "flows.cross.rate 2 Mbit/s exceeds the bottleneck 1.544 Mbit/s (link access1): "
        "its queue will overflow",
        "flows.cross.packet_size 1,500 B plus 28 B of UDP and IP headers exceeds the path MTU "
        "1,500 B (link lan1)",
    ]


def test_queue_and_pvc_warnings():
    data = example()
    data["links"][0]["queue"] = {"discipline": "red", "limit_packets": 10}
    data["frame_relay"]["pvcs"][0].update(cir="2Mbps", min_cir="T1")
    assert scenario_warnings(Scenario.model_validate(data)) == [
        "links.lan1.queue.max_th 15 is not below limit_packets 10: the queue overflows before "
        "RED's max_th is reached",
        "frame_relay.pvcs.pvc1.cir 2 Mbit/s exceeds the bottleneck 1.544 Mbit/s (link access1) "
        "on its path",
        "frame_relay.pvcs.pvc1.min_cir has no effect without becn_shaping",
    ]
