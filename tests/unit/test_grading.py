"""The rule the findings tables are graded by (engine/presets/grading.py, grading.md)."""

from __future__ import annotations

import pytest

from engine.presets.grading import change, grade, ordering, reading, shape, size, unmodelled

pytestmark = pytest.mark.unit


def test_a_number_is_reproduced_within_fifteen_percent_of_the_papers():
    assert size("t", 114.9, 100).holds
    assert size("t", 85.1, 100).holds
    assert not size("t", 115.1, 100).holds
    assert not size("t", 162, 192).holds  # seed 000's 64 KB window: −15.6 %


def test_a_change_needs_the_same_sign_and_a_size_within_one_and_a_half_times():
    assert change("c", -0.11, -0.15).holds  # 0.73 of the paper's
    assert not change("c", -0.09, -0.157).holds  # 0.57
    assert not change("c", 0.05, -0.05).holds  # the wrong way
    assert change("c", 1.49, 1.0).holds
    assert not change("c", 1.51, 1.0).holds


def test_the_verdict_follows_the_tests():
    ok, bad = ordering("a < b", True), ordering("a < b", False)
    near, far = size("t", 101, 100), size("t", 200, 100)
    assert grade([ok, near]) == "reproduced"
    assert grade([ok, far]) == "partly"  # the ordering holds, a number does not
    assert grade([bad, near]) == "not"  # the claim fails
    assert grade([far]) == "not"  # a claim that is only a number misses it
    assert grade([shape("flat", False)]) == "not"
    assert grade([ok, near, unmodelled("no such statistic")]) == "not"
    assert grade([ok, near, reading("undefined statistic")]) == "partly"
    assert grade([near, reading("undefined statistic")]) == "partly"
    assert grade([]) == "not"
