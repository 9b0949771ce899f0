"""A parameter's unit comes from the scenario language's types (api.compare.units): the
values a sweep's table holds for it are what the scenario stores once parsed."""

from __future__ import annotations

import pytest

from api.compare.units import unit_of
from engine import Scenario
from engine.presets import load_preset

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("path", "unit"),
    [
        ("links.access1.rate", "bit/s"),  # Rate: "T1" is stored as 1544000.0
        ("links.access1.delay", "s"),  # Duration
        ("flows.backup.tcp.rcv_buf", "bytes"),  # ByteSize
        ("flows.backup.bytes", "bytes"),  # optional ByteSize
        ("frame_relay.pvcs.p1.bc", "bit"),  # optional Bits
        ("duration", "s"),
        ("links.wan.queue.limit_packets", None),  # a count
        ("flows.backup.tcp.variant", None),  # a name
        ("no.such.path", None),
    ],
)
def test_a_parameters_unit_is_its_types(path: str, unit: str | None) -> None:
    assert unit_of(path) == unit


def test_the_unit_is_what_the_stored_scenario_holds() -> None:
    # What a table shows for a rate written "T3" and a delay written "41.75ms".
    body = load_preset("riverbed-t1-8k").model_dump(mode="json")
    body["links"][0]["rate"], body["links"][0]["delay"] = "T3", "41.75ms"
    link = Scenario.model_validate(body).model_dump(mode="json")["links"][0]
    assert unit_of(f"links.{link['id']}.rate") == "bit/s" and link["rate"] == 44_736_000.0
    assert unit_of(f"links.{link['id']}.delay") == "s" and link["delay"] == pytest.approx(0.04175)
