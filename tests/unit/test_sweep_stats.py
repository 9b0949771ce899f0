"""The sweep statistics against textbook formulas and worked numbers."""

from __future__ import annotations

import math

import pytest
from engine_helpers import T975_2
from scipy import stats as sps

from api.compare import stats

pytestmark = pytest.mark.unit


def test_t_interval_of_three_values() -> None:
    # n = 3, mean 2, sd 1; t(0.975, 2) = 4.302653 (any t table): half-width 4.302653/sqrt(3).
    est = stats.estimate([1.0, 2.0, 3.0])
    assert est.n == 3 and est.mean == 2.0 and est.sd == pytest.approx(1.0)
    half = T975_2 / math.sqrt(3)
    assert est.ci95 == pytest.approx((2.0 - half, 2.0 + half), rel=1e-6)


def test_large_samples_approach_the_normal_quantile() -> None:
    assert stats.t_quantile(10_000) == pytest.approx(1.95996, abs=1e-3)
    assert stats.t_quantile(1) == pytest.approx(12.7062, rel=1e-5)


def test_one_replication_has_no_interval_and_none_has_no_mean() -> None:
    one = stats.estimate([5.0])
    assert (one.n, one.mean, one.sd, one.ci95) == (1, 5.0, None, None)
    assert stats.estimate([]) == stats.Estimate(0, None, None, None)


def test_paired_difference_uses_the_per_seed_differences() -> None:
    # Differences per seed: -1, -2, -3 -> mean -2, sd 1; the paired interval ignores the
    # large spread between seeds that both points share.
    base = {1: 10.0, 2: 20.0, 3: 30.0}
    point = {1: 9.0, 2: 18.0, 3: 27.0}
    d = stats.difference(point, base)
    assert d is not None and d.paired and d.n == 3
    assert d.mean == pytest.approx(-2.0) and d.sd == pytest.approx(1.0)
    half = T975_2 / math.sqrt(3)
    assert d.ci95 == pytest.approx((-2 - half, -2 + half), rel=1e-6)
    assert d.baseline_mean == pytest.approx(20.0)
    assert d.pct == pytest.approx(-10.0)
    assert d.pct_ci95 == pytest.approx(((-2 - half) * 5, (-2 + half) * 5), rel=1e-6)


def test_only_common_seeds_are_paired() -> None:
    d = stats.difference({1: 3.0, 2: 5.0, 9: 100.0}, {1: 1.0, 2: 2.0, 7: -50.0})
    assert d is not None and d.paired and d.n == 2 and d.mean == pytest.approx(2.5)


def test_without_common_seeds_welch() -> None:
    # Welch: se^2 = s1^2/n1 + s2^2/n2 = 1/3 + 4/3; df = (5/3)^2 / ((1/3)^2/2 + (4/3)^2/2).
    a = {1: 1.0, 2: 2.0, 3: 3.0}  # mean 2, var 1
    b = {4: 2.0, 5: 4.0, 6: 6.0}  # mean 4, var 4
    d = stats.difference(a, b)
    assert d is not None and not d.paired and d.mean == pytest.approx(-2.0)
    se = math.sqrt(5 / 3)
    df = (5 / 3) ** 2 / ((1 / 3) ** 2 / 2 + (4 / 3) ** 2 / 2)  # 2.94
    half = 3.22 * se  # t(0.975, 2.94): a little above the table's 3.182 for df 3
    assert d.ci95 == pytest.approx((-2 - half, -2 + half), rel=2e-3)
    half = float(sps.t.ppf(0.975, df)) * se
    assert d.ci95 == pytest.approx((-2 - half, -2 + half), rel=1e-9)


def test_a_zero_baseline_has_no_percentage() -> None:
    d = stats.difference({1: 1.0}, {1: 0.0})
    assert d is not None and d.pct is None and d.mean == 1.0 and d.ci95 is None


def test_grid_design_one_factor_per_path() -> None:
    points = [{"a": a, "b": b} for a in (1, 2) for b in ("x", "y", "z")]
    des = stats.design(points, ["a", "b"])
    assert des.factorial and [f.name for f in des.factors] == ["a", "b"]
    assert des.factors[1].levels == ["x", "y", "z"]
    assert des.cells == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]


def test_paths_that_move_together_are_one_factor() -> None:
    # The Riverbed study: both access links change at once, crossed with the window.
    points = [
        {"l1": "T1", "l2": "T1", "w": 8760},
        {"l1": "T3", "l2": "T3", "w": 8760},
        {"l1": "T1", "l2": "T1", "w": 65535},
        {"l1": "T3", "l2": "T3", "w": 65535},
    ]
    des = stats.design(points, ["l1", "l2", "w"])
    assert des.factorial and [f.paths for f in des.factors] == [["l1", "l2"], ["w"]]
    assert des.factors[0].levels == [{"l1": "T1", "l2": "T1"}, {"l1": "T3", "l2": "T3"}]


def test_designs_that_do_not_cross_keep_their_factors_but_say_so() -> None:
    points = [{"a": 1, "b": 1}, {"a": 2, "b": 1}, {"a": 1, "b": 2}]  # no (2, 2)
    des = stats.design(points, ["a", "b"])
    assert not des.factorial and [f.name for f in des.factors] == ["a", "b"]
    assert des.cells == [(0, 0), (1, 0), (0, 1)] and "sequential" in (des.note or "")


def test_sequential_sums_of_squares_by_hand() -> None:
    # (a, b) -> y: (1, 1) -> 1, (2, 1) -> 3, (1, 2) -> 5. grand 3, SS_total = 4 + 0 + 4 = 8.
    # Alone: a's level means 3 (1 and 5) and 3 -> SS_a = 0; b's 2 (1 and 3) and 5 ->
    # SS_b = 2 (2-3)^2 + (5-3)^2 = 6. b enters first with 6; the additive model with both
    # fits the three points exactly (SS_model = 8), so a adds 2. Nothing is left.
    des = stats.design([{"a": 1, "b": 1}, {"a": 2, "b": 1}, {"a": 1, "b": 2}], ["a", "b"])
    eff = stats.main_effects(des, [[1.0], [3.0], [5.0]])
    assert eff is not None and eff.basis == "sequential"
    assert eff.shares == pytest.approx([2 / 8, 6 / 8])
    assert eff.interaction == pytest.approx(0.0, abs=1e-12) and eff.within is None


def test_sequential_shares_leave_interaction_and_noise() -> None:
    # An L-shaped design with replications; shares, interaction and noise add up to 1.
    des = stats.design([{"a": 1, "b": 1}, {"a": 2, "b": 1}, {"a": 1, "b": 2}], ["a", "b"])
    eff = stats.main_effects(des, [[1.0, 2.0], [3.0, 5.0], [5.0, 6.0]])
    assert eff is not None and eff.within is not None and eff.interaction is not None
    y = [1.0, 2.0, 3.0, 5.0, 5.0, 6.0]
    within = (0.25 + 0.25 + 1 + 1 + 0.25 + 0.25) / sum((v - 11 / 3) ** 2 for v in y)
    assert eff.within == pytest.approx(within)
    assert sum(eff.shares) + eff.interaction + eff.within == pytest.approx(1.0)


def test_two_way_anova_shares_by_hand() -> None:
    # 2x2 with 2 replications: cells (A, B) -> observations.
    #   a1b1: 1, 3   a1b2: 5, 7   a2b1: 2, 4   a2b2: 10, 12
    # grand mean 44/8 = 5.5; SS_total = sum (y - 5.5)^2 = 106
    # A means: a1 = 4, a2 = 7   -> SS_A = 4 (4-5.5)^2 + 4 (7-5.5)^2 = 18
    # B means: b1 = 2.5, b2 = 8.5 -> SS_B = 4 (3)^2 + 4 (3)^2 = 72
    # cell means 2, 6, 3, 11 -> SS_cells = 2 (12.25 + 0.25 + 6.25 + 30.25) = 98
    # SS_AB = 98 - 18 - 72 = 8; SS_within = 106 - 98 = 8 (each cell: 1 + 1)
    points = [{"A": a, "B": b} for a in (1, 2) for b in (1, 2)]
    des = stats.design(points, ["A", "B"])
    eff = stats.main_effects(des, [[1, 3], [5, 7], [2, 4], [10, 12]])
    assert eff is not None and eff.basis == "replications"
    assert eff.ss_total == pytest.approx(106)
    assert eff.shares == pytest.approx([18 / 106, 72 / 106])
    assert eff.interaction == pytest.approx(8 / 106)
    assert eff.within == pytest.approx(8 / 106)
    assert sum(eff.shares) + eff.interaction + eff.within == pytest.approx(1.0)


def test_one_way_anova_with_unequal_groups() -> None:
    # Levels x: 1, 2, 3 (mean 2); y: 7, 9 (mean 8); grand 22/5 = 4.4.
    # SS_between = 3 (2-4.4)^2 + 2 (8-4.4)^2 = 17.28 + 25.92 = 43.2; SS_within = 2 + 2 = 4.
    des = stats.design([{"p": "x"}, {"p": "y"}], ["p"])
    eff = stats.main_effects(des, [[1, 2, 3], [7, 9]])
    assert eff is not None and eff.shares == pytest.approx([43.2 / 47.2])
    assert eff.within == pytest.approx(4 / 47.2) and eff.interaction == pytest.approx(0.0)


def test_unequal_replications_in_a_factorial_use_point_means() -> None:
    points = [{"A": a, "B": b} for a in (1, 2) for b in (1, 2)]
    des = stats.design(points, ["A", "B"])
    eff = stats.main_effects(des, [[1, 3], [6], [2, 4], [11]])
    # Cell means 2, 6, 3, 11 as in the worked example; on the means, grand 5.5:
    # SS_total = 49, SS_A = 2 (1.5^2) + 2 (1.5^2) = 9, SS_B = 2 (3^2) + 2 (3^2) = 36.
    assert eff is not None and eff.basis == "point_means" and eff.within is None
    assert eff.shares == pytest.approx([9 / 49, 36 / 49])
    assert eff.interaction == pytest.approx(4 / 49)


def test_a_factorial_with_a_missing_point_falls_back_to_sequential() -> None:
    points = [{"A": a, "B": b} for a in (1, 2) for b in (1, 2)]
    # The by-hand case above with the factors' roles swapped: A alone explains 6 of 8.
    eff = stats.main_effects(stats.design(points, ["A", "B"]), [[1], [3], [5], []])
    assert eff is not None and eff.basis == "sequential" and eff.note
    assert eff.shares == pytest.approx([6 / 8, 2 / 8])


def test_no_variation_has_no_shares() -> None:
    des = stats.design([{"p": 1}, {"p": 2}], ["p"])
    eff = stats.main_effects(des, [[5.0, 5.0], [5.0]])
    assert eff is not None and eff.shares == [None]


def test_best_follows_the_direction() -> None:
    assert stats.best([3.0, None, 1.0, 1.0], "lower") == 2
    assert stats.best([3.0, None, 1.0], "higher") == 0
    assert stats.best([None, None], "lower") is None
