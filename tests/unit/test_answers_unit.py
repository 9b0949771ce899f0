"""Validation errors rewritten for people (api.hints), on the real request models; and the
sweep time estimate's formula (api.sweeps.speed)."""

from __future__ import annotations

import copy

import pytest
from pydantic import ValidationError

from api import hints
from api.runs.schemas import RunCreate
from engine import Scenario
from engine.example import EXAMPLE_SCENARIO

pytestmark = pytest.mark.unit


def errors_of(body: dict) -> list[dict]:
    with pytest.raises(ValidationError) as info:
        RunCreate.model_validate(body)
    return hints.improve(info.value.errors(), RunCreate)


def scenario(**changes) -> dict:
    sc = copy.deepcopy(EXAMPLE_SCENARIO)
    sc.update(changes)
    return sc


def test_nearest_field_names_and_aliases() -> None:
    assert hints.suggest("window", ["rcv_buf", "snd_buf", "mss"]) == "rcv_buf"
    assert hints.suggest("flow", ["nodes", "links", "flows"]) == "flows"
    assert hints.suggest("Rate", ["rate", "delay"]) == "rate"
    assert hints.suggest("zzz", ["rate", "delay"]) is None


def test_the_type_at_a_location_goes_through_lists_and_discriminated_unions() -> None:
    from engine.scenario import TcpSpec

    assert hints.resolve(RunCreate, ["scenario", "flows", 0, "tcp"]) is TcpSpec


def test_a_misnamed_tcp_field_and_a_missing_kind() -> None:
    sc = scenario()
    sc["flows"][0]["tcp"]["window"] = 65535
    (err,) = errors_of({"scenario": sc})
    assert "did you mean 'rcv_buf'" in err["msg"]
    sc = scenario()
    del sc["flows"][0]["kind"]
    (err,) = errors_of({"scenario": sc})
    assert err["loc"][-1] == "kind" and "'tcp_bulk', 'udp_cbr'" in err["msg"]


def test_a_bare_scenario_is_told_to_wrap_itself() -> None:
    with pytest.raises(ValidationError) as info:
        RunCreate.model_validate(scenario())
    hint = hints.wrapping_hint(info.value.errors(), RunCreate, Scenario)
    assert hint is not None and '{"scenario": {...}}' in hint["msg"]


def test_line_and_column() -> None:
    assert hints.line_column('{\n  "a": 1,,\n}', 11) == (2, 10)
    assert hints.line_column("x", 0) == (1, 1)


def test_a_sweeps_time_is_events_and_per_run_overhead_at_the_engine_speed() -> None:
    from api.sweeps.speed import Speed, probe, wall_seconds
    from settings import Settings

    s = Speed(events_per_second=100_000.0, run_overhead_events=25_000, basis="measured", runs=9)
    # 66 small runs (gupta-study): the overhead dominates; 2 workers share them.
    cpu = (330_000 + 66 * 25_000) / 100_000
    assert wall_seconds(330_000, 66, 2, s) == pytest.approx((cpu, cpu / 2))
    assert s.run_overhead_seconds == pytest.approx(0.25)
    # Fewer runs than workers: the idle worker does not help.
    assert wall_seconds(1_000_000, 1, 4, s) == pytest.approx((10.25, 10.25))
    assert wall_seconds(0, 0, 2, s) == (0.0, 0.0)
    measured = probe(Settings())
    assert measured.basis == "probe" and 1e3 < measured.events_per_second < 1e8
