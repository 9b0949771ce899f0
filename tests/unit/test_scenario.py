"""The scenario language: models, field errors and their paths, loading, hash, schema
(whole-scenario errors: test_scenario_whole.py; warnings: test_scenario_warnings.py)."""

import json
import re

import pytest
from scenario_example import EXAMPLE, EXAMPLE_YAML, errors_of, example, only_error

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


# --- schema --------------------------------------------------------------------------------


def test_json_schema_has_the_flow_discriminator_and_unit_inputs():
    schema = Scenario.model_json_schema()
    flows = schema["properties"]["flows"]["items"]
    assert flows["discriminator"]["propertyName"] == "kind"
    rate = schema["$defs"]["Link"]["properties"]["rate"]
    assert {"type": "string"} in rate["anyOf"] and "T1" in rate["examples"]
    assert schema["$defs"]["Link"]["additionalProperties"] is False
