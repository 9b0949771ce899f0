"""The scenario language's whole-scenario checks (topology, ids, PVCs, paths), each error
at its field's path."""

import pytest
from scenario_example import EXAMPLE, errors_of, example, only_error

from engine.scenario import Scenario

pytestmark = pytest.mark.unit


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
