"""Dotted scenario paths read and written in one place (engine/study.py): `flatten` names
every leaf by the path `set_path` and `get_path` take."""

from __future__ import annotations

import copy

import pytest

from engine.example import EXAMPLE_SCENARIO
from engine.study import NOT_SIMULATED, flatten, get_path, set_path

pytestmark = pytest.mark.unit


def test_every_flattened_path_reads_back_its_value() -> None:
    flat = flatten(EXAMPLE_SCENARIO)
    assert flat
    for path, value in flat.items():
        assert get_path(EXAMPLE_SCENARIO, path) == value, path


def test_a_path_written_is_the_path_flattened() -> None:
    data = copy.deepcopy(EXAMPLE_SCENARIO)
    path = next(p for p in flatten(data) if p.startswith("links.") and not p.endswith(".id"))
    set_path(data, path, "changed")
    changed = {p for p, v in flatten(data).items() if flatten(EXAMPLE_SCENARIO).get(p) != v}
    assert changed == {path}


def test_skipped_top_level_fields_are_left_out() -> None:
    flat = flatten({"name": "x", "seed": 1, "links": [{"id": "l", "rate": 5}]}, skip=NOT_SIMULATED)
    assert flat == {"links.l.id": "l", "links.l.rate": 5}
