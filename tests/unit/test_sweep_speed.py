"""The engine speed a sweep is priced at (api.sweeps.speed): a run's engine time is a setup
plus a cost per event, fitted to measured runs of different sizes. Synthetic runs with a
known setup and per-event cost must give them back; runs too alike give no fit (nothing is
extrapolated from small runs to large ones)."""

from __future__ import annotations

import numpy as np
import pytest

from api.sweeps import speed

pytestmark = pytest.mark.unit
EPS = 419_000.0  # the batch user's real per-event speed (issue 31)


def runs(
    events: np.ndarray, setup: float, noise: float, seed: int = 1
) -> list[tuple[float, float]]:
    rng = np.random.default_rng(seed)
    seconds = (setup + events / EPS) * rng.normal(1.0, noise, len(events))
    return list(zip(events.tolist(), seconds.tolist(), strict=True))


def test_a_fit_over_sizes_gives_back_the_setup_and_the_per_event_cost() -> None:
    events = np.geomspace(2_000, 2_000_000, 60)
    got = speed.fit(runs(events, setup=0.04, noise=0.03))
    assert got is not None and got.runs == 60
    assert got.events_per_second == pytest.approx(EPS, rel=0.05)
    assert got.setup_seconds == pytest.approx(0.04, abs=0.01)


def test_small_runs_that_are_mostly_setup_do_not_inflate_the_speed() -> None:
    # Issue 31: 0.03 s runs (0.028 s of setup, ~800 events) beside a few large ones. A fixed
    # 0.04 s subtraction counted them at a tenth of their time: 3.37 M events/s.
    small = runs(np.full(150, 800.0), setup=0.028, noise=0.05)
    large = runs(np.array([2e6, 3e6, 4e6, 5e6, 6e6] * 6), setup=0.028, noise=0.05, seed=2)
    got = speed.fit(small + large)
    assert got is not None
    assert got.events_per_second == pytest.approx(EPS, rel=0.05)
    # A 25 MB run (~40 M events) is priced at its real time within 5%, not a tenth of it.
    predicted = got.setup_seconds + 40e6 / got.events_per_second
    assert predicted == pytest.approx(0.028 + 40e6 / EPS, rel=0.05)


def test_a_few_large_runs_among_many_small_ones_are_enough() -> None:
    small = runs(np.full(200, 1_000.0), setup=0.002, noise=0.05)
    large = runs(np.full(3, 24_000.0), setup=0.002, noise=0.02, seed=3)
    got = speed.fit(small + large)
    assert got is not None and got.events_per_second == pytest.approx(EPS, rel=0.05)
    assert speed.fit(small + large[:2]) is None  # two may be one slow moment


def test_runs_of_one_size_cannot_tell_setup_from_events() -> None:
    assert speed.fit(runs(np.full(50, 800.0), setup=0.028, noise=0.05)) is None
    # Too few runs, or too little time among them.
    assert speed.fit(runs(np.geomspace(1e3, 1e6, 4), setup=0.04, noise=0.0)) is None
    assert speed.fit(runs(np.geomspace(1e3, 1e4, 10), setup=0.001, noise=0.0)) is None


def test_a_negative_intercept_is_a_line_through_zero() -> None:
    # Time exactly proportional to events, but for noise that tips the intercept below 0.
    samples = [(5e4, 0.099), (1e5, 0.199), (4e5, 0.80), (8e5, 1.60), (1.6e6, 3.21)]
    got = speed.fit(samples)
    assert got is not None and got.setup_seconds == 0.0
    x, y = np.array(samples).T
    assert got.seconds_per_event == pytest.approx(float(x @ y / (x @ x)), rel=1e-9)


def test_the_estimate_prices_events_at_the_fitted_speed() -> None:
    s = speed.Speed(EPS, 25_000, "measured", 60, 0.03)
    cpu, wall = speed.wall_seconds(40_000_000, 4, 2, s)
    assert cpu == pytest.approx((40e6 + 4 * 25_000) / EPS)
    assert wall == pytest.approx(cpu / 2)
