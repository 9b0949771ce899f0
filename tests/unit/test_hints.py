"""Validation errors rewritten for people (api.hints), on the real request models."""

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
