"""The scenario language: models, whole-scenario errors and their paths, hash, warnings."""

import copy
import json
import re

import pytest
import yaml
from pydantic import ValidationError

from engine.analysis.warnings import scenario_warnings
from engine.scenario import (
    LossSpec,
    QueueSpec,
    Scenario,
    ScenarioFormatError,
    TcpBulkFlow,
    UdpCbrFlow,
    load_scenario,
)

pytestmark = pytest.mark.unit

# The example of SCENARIO.md, as a client would write it.
EXAMPLE_YAML = """
name: riverbed-t1-8k
description: "WAN backup over a T1 Frame Relay PVC"
seed: 1
duration: 3600s
stop_when_done: true
sample_interval: 100ms
nodes:
  - {id: ws, kind: host}
  - {id: branch, kind: router}
  - {id: cloud, kind: fr_switch}
  - {id: dc, kind: router}
  - {id: server, kind: host}
links:
  - id: lan1
    a: ws
    b: branch
    rate: 10BaseT
    delay: 0.1ms
    encap: ethernet
    mtu: 1500
    queue: {discipline: droptail, limit_packets: 100}
    loss: {model: none}
  - {id: access1, a: branch, b: cloud, rate: T1, delay: 39ms, encap: frame_relay}
  - {id: access2, a: cloud, b: dc, rate: T1, delay: 39ms, encap: frame_relay}
  - {id: lan2, a: dc, b: server, rate: 10BaseT, delay: 0.1ms, encap: ethernet}
frame_relay:
  switch: {congestion_threshold: 0.5, de_discard_threshold: 0.75}
  pvcs:
    - {id: pvc1, dlci: 100, src: branch, dst: dc, cir: 1.544Mbps, bc: 1544000, be: 0}
flows:
  - id: backup
    kind: tcp_bulk
    src: ws
    dst: server
    start: 0s
    bytes: 25MB
    tcp:
      variant: reno
      mss: 1460
      rcv_buf: 8760
      snd_buf: 8760
      window_scaling: false
      initial_cwnd: 1
      delayed_ack: {enabled: true, count: 2, timeout: 200ms}
      min_rto: 1s
      handshake: true
  - {id: cross, kind: udp_cbr, src: ws, dst: server, rate: 256kbps, packet_size: 512,
     start: 10s, stop: 60s}
"""
EXAMPLE = yaml.safe_load(EXAMPLE_YAML)


def example(**changes) -> dict:
    """A deep copy of the example with top-level fields replaced."""
    data = copy.deepcopy(EXAMPLE)
    data.update(changes)
    return data


def errors_of(data: dict) -> list[dict]:
    """The validation errors of `data` (which must be invalid)."""
    with pytest.raises(ValidationError) as excinfo:
        Scenario.model_validate(data)
    return excinfo.value.errors(include_url=False)


def only_error(data: dict) -> dict:
    """The single validation error of `data`."""
    errors = errors_of(data)
    assert len(errors) == 1, errors
    return errors[0]


# --- values -------------------------------------------------------------------------------


def test_example_validates_to_si_numbers():
    scenario = Scenario.model_validate(EXAMPLE)
    assert scenario.duration == 3600.0
    assert scenario.sample_interval == 0.1
    lan1, access1 = scenario.links[0], scenario.links[1]
    assert lan1.rate == 10e6 and lan1.delay == 1e-4
    assert access1.rate == 1.544e6 and access1.delay == 0.039
    assert access1.queue.limit_packets == 100 and access1.queue.limit_bytes is None
    backup, cross = scenario.flows
    assert isinstance(backup, TcpBulkFlow) and isinstance(cross, UdpCbrFlow)
    assert backup.bytes == 25_000_000
    assert backup.tcp.rcv_buf == 8760 and backup.tcp.delayed_ack.timeout == 0.2
    assert (cross.rate, cross.start, cross.stop) == (256e3, 10.0, 60.0)
    assert scenario.frame_relay.pvcs[0].cir == 1.544e6


def test_defaults_match_the_contract():
    scenario = Scenario.model_validate(
        {
            "name": "minimal",
            "nodes": [{"id": "a", "kind": "host"}, {"id": "b", "kind": "host"}],
            "links": [{"id": "l", "a": "a", "b": "b", "rate": "T1"}],
            "flows": [{"id": "f", "kind": "tcp_bulk", "src": "a", "dst": "b"}],
        }
    )
    assert (scenario.seed, scenario.duration, scenario.sample_interval) == (1, 3600.0, 0.1)
    assert scenario.stop_when_done is True and scenario.frame_relay is None
    link = scenario.links[0]
    assert (link.delay, link.encap, link.mtu) == (0.0, "ethernet", 1500)
    assert link.queue.model_dump()["limit_packets"] == 100
    assert link.loss.model == "none"
    tcp = scenario.flows[0].tcp
    assert (tcp.variant, tcp.mss, tcp.rcv_buf, tcp.snd_buf) == ("newreno", 1460, 65535, None)
    assert (tcp.min_rto, tcp.initial_rto, tcp.max_rto) == (1.0, 1.0, 60.0)
    assert tcp.delayed_ack.model_dump() == {
        "enabled": True,
        "count": 2,
        "timeout": 0.2,
        "quickack": "linux",
    }
    assert scenario.flows[0].bytes is None and scenario.flows[0].stop is None


def test_queue_limit_bytes_replaces_the_default_packet_limit():
    assert QueueSpec(limit_bytes="64KiB").model_dump()["limit_packets"] is None
    assert QueueSpec(limit_bytes="64KiB").limit_bytes == 65536


def test_pvc_bc_defaults_to_one_second_of_cir():
    data = example()
    del data["frame_relay"]["pvcs"][0]["bc"]
    assert Scenario.model_validate(data).frame_relay.pvcs[0].bc == 1_544_000


def test_script_drops_are_sorted_and_deduplicated():
    assert LossSpec(model="script", drop=[7, 3, 7, 0]).drop == [0, 3, 7]


def test_dump_round_trips():
    scenario = Scenario.model_validate(EXAMPLE)
    assert Scenario.model_validate(scenario.model_dump()) == scenario
    assert Scenario.model_validate_json(scenario.model_dump_json()) == scenario


# --- loading ------------------------------------------------------------------------------


def test_load_scenario_from_yaml_json_files_and_mappings(tmp_path):
    expected = Scenario.model_validate(EXAMPLE)
    yaml_file = tmp_path / "s.yaml"
    yaml_file.write_text(EXAMPLE_YAML)
    json_file = tmp_path / "s.json"
    json_file.write_text(json.dumps(EXAMPLE))
    assert load_scenario(EXAMPLE_YAML) == expected
    assert load_scenario(json.dumps(EXAMPLE)) == expected
    assert load_scenario(json.dumps(EXAMPLE).encode()) == expected
    assert load_scenario(yaml_file) == expected
    assert load_scenario(str(json_file)) == expected
    assert load_scenario(EXAMPLE) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON or YAML"),
        ("a: [1", "not valid JSON or YAML"),
        ("- 1\n- 2\n", "must be a mapping"),
    ],
)
def test_load_scenario_rejects_malformed_text(text, message):
    with pytest.raises(ScenarioFormatError, match=re.escape(message)):
        load_scenario(text)


def test_load_scenario_reports_a_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_scenario(str(tmp_path / "missing.yaml"))


# --- identity -----------------------------------------------------------------------------


def test_hash_ignores_how_values_are_written_and_what_is_not_simulated():
    base = Scenario.model_validate(EXAMPLE)
    data = example(name="other", description="", seed=42, duration=3600)
    data["links"][1]["rate"] = 1544000
    data["links"][1]["delay"] = 0.039
    data["links"][2]["rate"] = "1.544 Mbit/s"
    data["flows"][0]["bytes"] = 25_000_000
    data["links"][0]["queue"] = {}  # the default limit is 100 packets
    rewritten = Scenario.model_validate(data)
    assert rewritten.canonical_json() == base.canonical_json()
    assert rewritten.scenario_hash() == base.scenario_hash()
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", base.scenario_hash())


def test_hash_changes_with_what_is_simulated():
    base = Scenario.model_validate(EXAMPLE).scenario_hash()
    data = example()
    data["links"][1]["rate"] = "T3"
    assert Scenario.model_validate(data).scenario_hash() != base
    data = example()
    data["flows"][0]["tcp"]["rcv_buf"] = 8761
    assert Scenario.model_validate(data).scenario_hash() != base


def test_canonical_json_is_sorted_compact_and_excludes_identity_fields():
    canonical = Scenario.model_validate(EXAMPLE).canonical_json()
    data = json.loads(canonical)
    assert canonical == json.dumps(data, sort_keys=True, separators=(",", ":"))
    assert not {"name", "description", "seed"} & data.keys()
    assert data["links"][1]["rate"] == 1544000.0
    assert data["flows"][0]["bytes"] == 25000000


# --- field errors and their paths -----------------------------------------------------------


def test_unknown_fields_are_rejected_at_their_path():
    data = example()
    data["links"][0]["colour"] = "red"
    error = only_error(data)
    assert (error["loc"], error["type"]) == (("links", 0, "colour"), "extra_forbidden")


def test_unit_errors_name_the_field():
    data = example()
    data["links"][1]["rate"] = "5ms"
    error = only_error(data)
    assert error["loc"] == ("links", 1, "rate")
    assert error["type"] == "rate_parsing"
    assert error["msg"] == "invalid rate '5ms': 'ms' is a duration, not a rate"


def test_zero_rate_is_rejected():
    data = example()
    data["links"][1]["rate"] = 0
    error = only_error(data)
    assert (error["loc"], error["type"]) == (("links", 1, "rate"), "greater_than_equal")


def test_flow_errors_have_no_union_tag_in_their_path():
    data = example()
    data["flows"][0]["bytes"] = "1.5B"
    data["flows"][1]["packet_size"] = 70000
    errors = errors_of(data)
    assert [e["loc"] for e in errors] == [("flows", 0, "bytes"), ("flows", 1, "packet_size")]
    assert errors[0]["type"] == "size_parsing"
    assert errors[1]["type"] == "less_than_equal"


def test_flow_stop_must_follow_start():
    data = example()
    data["flows"][1]["stop"] = "5s"
    error = only_error(data)
    assert error["loc"] == ("flows", 1, "stop")
    assert error["msg"] == "stop 5 s must be after start 10 s"


def test_unknown_flow_kind():
    data = example()
    data["flows"][1]["kind"] = "udp_vbr"
    error = only_error(data)
    assert (error["loc"], error["type"]) == (("flows", 1), "union_tag_invalid")


@pytest.mark.parametrize(
    ("queue", "loc", "message"),
    [
        ({"limit_packets": 10, "limit_bytes": 1000}, "limit_bytes", "not both"),
        (
            {"discipline": "red", "min_th": 20, "max_th": 15},
            "max_th",
            "max_th 15 must be greater than min_th 20",
        ),
        ({"discipline": "red", "max_p": 0}, "max_p", "greater than 0"),
        ({"discipline": "red", "weight": 1.5}, "weight", "less than or equal to 1"),
    ],
)
def test_queue_errors(queue, loc, message):
    data = example()
    data["links"][0]["queue"] = queue
    error = only_error(data)
    assert error["loc"] == ("links", 0, "queue", loc)
    assert message in error["msg"]


@pytest.mark.parametrize(
    ("loss", "loc", "message"),
    [
        ({"model": "bernoulli"}, "rate", "loss model 'bernoulli' needs rate"),
        ({"model": "bernoulli", "rate": 1.5}, "rate", "less than or equal to 1"),
        (
            {"model": "bernoulli", "rate": 0.1, "ber": 1e-6},
            "ber",
            "ber does not apply to loss model 'bernoulli' (it takes rate)",
        ),
        ({"model": "ber", "ber": 1}, "ber", "less than 1"),
        ({"model": "gilbert_elliott", "p_gb": 0.01}, "p_bg", "needs p_bg"),
        ({"model": "script"}, "drop", "needs drop"),
        ({"model": "script", "drop": [3, -1]}, "drop", "greater than or equal to 0"),
        ({"model": "none", "drop": [1]}, "drop", "(it takes no parameters)"),
        ({"model": "none", "rate": 0.5}, "rate", "rate does not apply to loss model 'none'"),
    ],
)
def test_loss_errors(loss, loc, message):
    data = example()
    data["links"][0]["loss"] = loss
    error = only_error(data)
    assert error["loc"][:4] == ("links", 0, "loss", loc)
    assert message in error["msg"]


def test_loss_models_accept_their_own_fields_and_direction():
    assert LossSpec(model="ber", ber=1e-7, direction="a_to_b").ber == 1e-7
    spec = LossSpec(model="gilbert_elliott", p_gb=0.01, p_bg=0.3, loss_bad=0.5)
    assert (spec.loss_good, spec.loss_bad) == (0.0, 0.5)
    assert LossSpec.model_validate(spec.model_dump()) == spec


@pytest.mark.parametrize(
    ("tcp", "loc", "message"),
    [
        ({"min_rto": "2s", "max_rto": "1s"}, ("max_rto",), "max_rto 1 s is below min_rto 2 s"),
        ({"delayed_ack": {"timeout": "600ms"}}, ("delayed_ack", "timeout"), "less than or equal"),
        ({"initial_cwnd": 0}, ("initial_cwnd",), "greater than or equal to 1"),
        ({"mss": 32}, ("mss",), "greater than or equal to 64"),
        ({"variant": "westwood"}, ("variant",), "Input should be"),
        ({"rcv_buf": 0}, ("rcv_buf",), "greater than 0"),
        ({"vegas_alpha": 5, "vegas_beta": 4}, ("vegas_beta",), "below vegas_alpha 5"),
    ],
)
def test_tcp_errors(tcp, loc, message):
    data = example()
    data["flows"][0]["tcp"] = tcp
    error = only_error(data)
    assert error["loc"] == ("flows", 0, "tcp", *loc)
    assert message in error["msg"]


@pytest.mark.parametrize(
    ("changes", "loc"),
    [
        ({"name": ""}, ("name",)),
        ({"seed": 2**63}, ("seed",)),
        ({"seed": -1}, ("seed",)),
        ({"duration": 0}, ("duration",)),
        ({"nodes": [{"id": "ws", "kind": "host"}]}, ("nodes",)),
        ({"flows": []}, ("flows",)),
    ],
)
def test_top_level_errors(changes, loc):
    errors = errors_of(example(**changes))
    assert errors[0]["loc"] == loc


def test_ids_cannot_hold_path_separators():
    data = example()
    data["flows"][0]["id"] = "back.up"
    error = only_error(data)
    assert (error["loc"], error["type"]) == (("flows", 0, "id"), "string_pattern_mismatch")


# --- whole-scenario errors and their paths ---------------------------------------------------


def test_link_to_an_unknown_node():
    data = example()
    data["links"][1]["b"] = "clowd"
    error = only_error(data)
    assert error["loc"] == ("links", 1, "b")
    assert error["type"] == "unknown_node"
    assert error["msg"] == "no node has id 'clowd'"


def test_link_to_itself():
    data = example()
    data["links"][1]["b"] = "branch"
    errors = errors_of(data)
    assert errors[0]["loc"] == ("links", 1, "b")
    assert errors[0]["msg"] == "link 'access1' connects node 'branch' to itself"


@pytest.mark.parametrize(
    ("section", "index", "loc_field"),
    [("nodes", 4, "id"), ("links", 3, "id"), ("flows", 1, "id")],
)
def test_duplicate_ids_are_reported_at_the_repeat(section, index, loc_field):
    data = example()
    data[section][index]["id"] = data[section][0]["id"]
    errors = errors_of(data)
    assert errors[0]["loc"] == (section, index, loc_field)
    assert errors[0]["type"] == "duplicate_id"
    assert f"already used by {section}[0]" in errors[0]["msg"]


def test_duplicate_pvc_ids_and_dlcis():
    data = example()
    pvcs = data["frame_relay"]["pvcs"]
    pvcs.append(dict(pvcs[0], dlci=101))
    pvcs.append(dict(pvcs[0], id="pvc3"))
    errors = errors_of(data)
    assert [(e["loc"], e["type"]) for e in errors] == [
        (("frame_relay", "pvcs", 1, "id"), "duplicate_id"),
        (("frame_relay", "pvcs", 2, "dlci"), "duplicate_dlci"),
    ]


@pytest.mark.parametrize(
    ("pvc", "loc", "message"),
    [
        ({"src": "ws"}, "src", "node 'ws' is a host, expected a router"),
        ({"dst": "nowhere"}, "dst", "no node has id 'nowhere'"),
        ({"dst": "branch"}, "dst", "PVC 'pvc1' starts and ends at router 'branch'"),
        ({"dlci": 15}, "dlci", "greater than or equal to 16"),
        ({"min_cir": "2Mbps"}, "min_cir", "min_cir 2 Mbit/s exceeds cir 1.544 Mbit/s"),
    ],
)
def test_pvc_errors(pvc, loc, message):
    data = example()
    data["frame_relay"]["pvcs"][0].update(pvc)
    error = only_error(data)
    assert error["loc"] == ("frame_relay", "pvcs", 0, loc)
    assert message in error["msg"]


def test_switch_thresholds_in_order():
    data = example()
    data["frame_relay"]["switch"] = {"congestion_threshold": 0.8, "de_discard_threshold": 0.6}
    error = only_error(data)
    assert error["loc"] == ("frame_relay", "switch", "de_discard_threshold")


@pytest.mark.parametrize(
    ("flow", "loc", "message"),
    [
        ({"src": "branch"}, "src", "node 'branch' is a router, expected a host"),
        ({"dst": "servr"}, "dst", "no node has id 'servr'"),
        ({"dst": "ws"}, "dst", "flow 'backup' sends from host 'ws' to itself"),
        ({"start": "1h"}, "start", "start 3,600 s is not before duration 3,600 s"),
    ],
)
def test_flow_endpoint_errors(flow, loc, message):
    data = example()
    data["flows"][0].update(flow)
    error = only_error(data)
    assert error["loc"] == ("flows", 0, loc)
    assert error["msg"] == message


def test_unreachable_destination_is_an_error_at_the_flow_dst():
    data = example()
    data["nodes"].append({"id": "island", "kind": "host"})
    data["flows"][1]["dst"] = "island"
    error = only_error(data)
    assert error["loc"] == ("flows", 1, "dst")
    assert error["type"] == "no_route"
    assert error["msg"].startswith("no route from 'ws' to 'island'")


def test_hosts_do_not_relay_flows():
    data = example()
    # Put a host between the branch router and the cloud: nothing else connects them.
    data["nodes"].append({"id": "relay", "kind": "host"})
    data["links"][1]["b"] = "relay"
    data["links"].append({"id": "access0", "a": "relay", "b": "cloud", "rate": "T1"})
    data["frame_relay"] = None
    errors = errors_of(data)
    assert [e["loc"] for e in errors] == [("flows", 0, "dst"), ("flows", 1, "dst")]
    assert "hosts carry no transit traffic" in errors[0]["msg"]


def test_mss_larger_than_the_path_mtu_allows():
    data = example()
    data["links"][2]["mtu"] = 576
    error = only_error(data)
    assert error["loc"] == ("flows", 0, "tcp", "mss")
    assert error["type"] == "mss_exceeds_mtu"
    assert error["msg"] == (
        "mss 1460 B does not fit the path MTU 576 B (link 'access2') minus 40 B of IP and "
        "TCP headers: at most 536 B"
    )
    data["flows"][0]["tcp"]["mss"] = 536
    Scenario.model_validate(data)


def test_sample_interval_longer_than_duration():
    error = only_error(example(duration="1s", sample_interval="2s", flows=[EXAMPLE["flows"][0]]))
    assert error["loc"] == ("sample_interval",)


def test_all_whole_scenario_errors_are_reported_together():
    data = example()
    data["links"][3]["b"] = "serverr"
    data["flows"][1]["src"] = "dc"
    errors = errors_of(data)
    # Routes are not checked on a broken topology: only the causes are reported.
    assert [e["loc"] for e in errors] == [("links", 3, "b"), ("flows", 1, "src")]


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
        "frame_relay.pvcs.pvc1.cir 2 Mbit/s exceeds the rate of link access1 (1.544 Mbit/s) "
        "on its path",
        "frame_relay.pvcs.pvc1.min_cir has no effect without becn_shaping",
    ]


# --- schema --------------------------------------------------------------------------------


def test_json_schema_has_the_flow_discriminator_and_unit_inputs():
    schema = Scenario.model_json_schema()
    flows = schema["properties"]["flows"]["items"]
    assert flows["discriminator"]["propertyName"] == "kind"
    rate = schema["$defs"]["Link"]["properties"]["rate"]
    assert {"type": "string"} in rate["anyOf"] and "T1" in rate["examples"]
    assert schema["$defs"]["Link"]["additionalProperties"] is False
