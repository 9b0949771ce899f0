"""What a link upgrade costs, and which measured remedy the check names first.

Prices are the product family's own (docs/advice.md "Costs"): Ethernet's 100BaseT at 1,500
cost units a month and 1000BaseT at 3,000, so the upgrade between them costs 1,500. Before,
a rate was priced as the dearest product of any family at or below it: 100BaseT as a T3
(4,500) and 1000BaseT as an OC-12 (30,000), an upgrade of 25,500 that ranked a gigabit
LAN port as dear as a SONET ring.
"""

from __future__ import annotations

import pytest

from engine.advice.check import _order
from engine.advice.levers import LADDERS, tier_price
from engine.advice.model import Remedy
from engine.advice.reports import CheckItem, Measured

pytestmark = pytest.mark.unit


def test_every_product_costs_its_own_familys_price() -> None:
    for ladder in LADDERS.values():
        for tier in ladder:
            assert tier_price(tier.bps) == tier.price, tier.name
    assert tier_price(1e9) - tier_price(100e6) == 3000 - 1500


def test_a_rate_no_one_sells_costs_the_product_under_it() -> None:
    """2 Mbit/s (a lab's rate) is no product; the dearest at or below it is the T1 (1.544
    Mbit/s, 600), not the E1 just above it (2.048 Mbit/s, 700)."""
    assert tier_price(2e6) == 600


def _item(pct: float, verdict: str = "better") -> CheckItem:
    remedy = Remedy.model_construct(action="enable_sack", changes=[], cost_class="endpoint")
    return CheckItem.model_construct(
        remedy=remedy,
        key=str(pct),
        before=Measured.model_construct(mean=1.0),
        after=Measured.model_construct(mean=1.0),
        pct=pct,
        pct_ci95=None,
        verdict=verdict,
        recommended=verdict == "better",
        text="",
    )


@pytest.mark.parametrize(
    ("metric", "gains", "first"),
    [
        ("completion_time", [-12.0, -49.0, -7.0], -49.0),  # the largest cut of the time
        ("goodput_bps", [3994.0, 6100.0, 120.0], 6100.0),  # the largest rise of goodput
    ],
)
def test_the_largest_measured_gain_comes_first_whichever_the_metric(
    metric: str, gains: list[float], first: float
) -> None:
    """A flow that did not finish is checked by its goodput, where a gain is a rise: the
    check's order (and so its recommendation, the cheapest within 10% of the first) put
    SACK's +3,994% ahead of BBR with SACK's +6,100% (bench/advice_audit.py's probe)."""
    items = [_item(g) for g in gains] + [
        _item(5.0 if metric == "completion_time" else -5.0, "worse")
    ]
    ordered = sorted(items, key=lambda i: _order(i, metric))
    assert ordered[0].pct == first
    assert ordered[-1].verdict == "worse"


def test_a_transfer_unfinished_both_ways_is_not_called_a_failed_run() -> None:
    """The lossy 1 Gbit/s path (CUBIC, 0.1% loss, 100 MB in 120 s): the transfer ends in 4
    of 6 seeds as it is and in 5 of 6 with SACK. Every run succeeded; what is missing is a
    completion time on both sides, and the line says so instead of "the run failed"."""
    from engine.advice.check import _item_text
    from engine.advice.target import Target

    item = _item(0.0, "failed")
    item.after = Measured.model_construct(mean=None, unfinished=1, seeds=[1, 2, 3, 4, 5, 6])
    item.before = Measured.model_construct(mean=None, unfinished=2, seeds=[1, 2, 3, 4, 5, 6])
    text = _item_text(item, Target.parse("f.completion_time<=10s"))
    assert "the run failed" not in text
    assert "not finished in 1 of 6 runs, nor in 2 of 6 as it is" in text
