"""The advisor (engine/advice/search.py) on seed 003's scenario, shortened tenfold: the lab's
25 MB become 2.5 MB, so every run takes a tenth of the time and the same physics holds
(an 8,760 B window over a T1 with a 186 ms round trip).

The figures are checked against the bounds and the lab's finding, never against what the
advisor printed:

- the window bound: a window of w bytes delivers at most w per round trip, so 2.5 MB need
  at least R x (2.5e6 / w - 1) seconds; the T1's payload rate (1460 B per 1508 B frame of
  1.544 Mbit/s, 1.495 Mbit/s) carries 2.5 MB in no less than 13.4 s;
- the lab (seed 003): upgrading T1 to T3 with the 8 KB window barely helps (560 -> 475 s);
  the window is what limits.
"""

from __future__ import annotations

import json
import math

import pytest
from engine_helpers import T975_2

from engine.advice.local import drive
from engine.advice.request import AdviceRequest, key_of
from engine.advice.search import Advisor
from engine.advice.target import Target
from engine.net import wire_bytes
from engine.presets import load_preset
from engine.study import apply_changes

pytestmark = pytest.mark.unit

NBYTES = 2_500_000
MSS = 1460
T1_PAYLOAD = 1.544e6 * MSS / wire_bytes("frame_relay", MSS + 40)  # 1.495 Mbit/s
T1_FLOOR = NBYTES * 8 / T1_PAYLOAD  # 13.4 s: no window makes the T1 faster
RTT_T3 = 0.1702  # riverbed.md section 4: 170.19 ms with T3 access links


@pytest.fixture(scope="module")
def scenario():
    return apply_changes(load_preset("riverbed-t1-8k"), {"flows.backup.bytes": NBYTES})


def advise(scenario, target: str, **request):
    advisor = Advisor(scenario, AdviceRequest(target=Target.parse(target), **request))
    return advisor, drive(scenario, advisor).report


@pytest.fixture(scope="module")
def twenty(scenario):
    return advise(scenario, "backup.completion_time<=20s")


def test_the_top_fix_is_the_smallest_free_window_that_meets_the_target(twenty):
    advisor, report = twenty
    assert report.finished and report.reachable and not report.met_already
    assert report.base is not None and report.base.mean > 20  # the lab's 8 KB window: ~56 s
    top = report.fixes[0]
    assert top.cost == 0 and top.cost_classes == ["endpoint"]
    (change,) = top.changes
    assert change.path == "flows.backup.tcp.rcv_buf" and change.was == 8760
    assert top.measured.meets and top.measured.mean <= 20
    # Smallest: one segment less either was simulated and missed, or the bounds rule it out.
    smaller = {change.path: change.value - MSS}
    below = advisor.measured(smaller)
    if below is not None:
        assert not below.meets
    else:
        assert advisor.bound_value(smaller) > 20
    # A window needs at least the rate 2.5 MB in 20 s asks for, per round trip of 186 ms.
    assert change.value >= NBYTES * 8 / 20 / 8 * 0.1858


def test_the_t3_upgrade_is_reported_as_not_meeting_it_with_its_measured_time(twenty):
    """The lab's finding, reached without a human: T3 with the 8 KB window stays slow."""
    _, report = twenty
    link = next(r for r in report.rejected if r.paths[0].startswith("links."))
    assert set(link.paths) == {"links.access1.rate", "links.access2.rate"}
    assert link.reason == "bound" and link.limit == "window"
    assert link.measured is not None
    assert set(link.measured.changes.values()) == {44.736e6}  # T3, the T1's next product
    t3 = link.measured.mean
    # The window bound at T3's round trip, and the lab's "barely helps" (475/560 = 0.85).
    assert t3 >= RTT_T3 * (NBYTES / 8760 - 1)
    assert t3 > 20 and t3 >= 0.8 * report.base.mean


def test_levers_that_move_no_bound_are_ruled_out_without_a_run(twenty):
    advisor, report = twenty
    for name in ("variant", "sack", "initial_cwnd"):
        rej = next(r for r in report.rejected if r.lever == name)
        assert rej.reason == "bound" and rej.measured is None and rej.bound > 20
    assert report.runs <= 8 and report.runs == advisor.runs


def test_a_target_beyond_the_t1_pairs_a_link_upgrade_with_a_window(scenario):
    """10 s is below the T1's 13.4 s floor: no window alone, no link alone (the 8 KB window
    holds it), only both together."""
    _, report = advise(scenario, "backup.completion_time<=10s")
    assert report.reachable
    top = report.fixes[0]
    paths = {c.path for c in top.changes}
    assert {"links.access1.rate", "links.access2.rate", "flows.backup.tcp.rcv_buf"} <= paths
    assert top.measured.mean <= 10 and top.cost > 0
    window = next(r for r in report.rejected if r.lever == "rcv_buf")
    assert window.reason == "bound" and window.bound >= T1_FLOOR * (1 - 1e-9)


def test_unreachable_on_t1_says_so_with_the_best_t1_time(scenario):
    levers = [{"paths": [f"flows.backup.tcp.{f}"]} for f in ("rcv_buf", "variant", "sack")]
    advisor, report = advise(scenario, "backup.completion_time<=10s", levers=levers)
    assert report.finished and report.reachable is False and not report.fixes
    assert report.best is not None and report.best.mean >= T1_FLOOR * (1 - 1e-9)
    assert report.best.mean < report.base.mean
    assert any("Nothing within these levers meets it" in s for s in report.text)


def test_the_budget_is_never_exceeded(scenario):
    advisor, report = advise(scenario, "backup.completion_time<=20s", budget=2)
    assert report.runs <= 2 and report.finished


def test_a_search_its_budget_cut_short_does_not_call_the_target_unreachable(scenario):
    """20 s needs a window of ~3 x 8,760 B (the lab's fix): two runs (the scenario and one
    probe) cannot find it. The report must not say the levers cannot meet the target, only
    that the budget stopped the search; with the default 30 it finds the fix."""
    _, short = advise(scenario, "backup.completion_time<=20s", budget=2)
    assert short.finished and short.cut_short and not short.fixes
    assert short.reachable is None
    assert not any("Nothing within these levers" in s for s in short.text), short.text
    assert any("within the budget of 2 runs" in s for s in short.text), short.text
    _, full = advise(scenario, "backup.completion_time<=20s")
    assert full.fixes and full.reachable and not full.cut_short


def test_a_restored_advisor_takes_the_same_path(scenario):
    """Every step from stored state, as the worker runs it: state -> JSON -> restore."""
    request = {"target": Target.parse("backup.completion_time<=20s")}
    live = Advisor(scenario, request)
    restored_keys = []
    while True:
        state = json.loads(json.dumps(live.state(), allow_nan=False))  # strict JSON: jsonb
        twin = Advisor(scenario, request, state)
        batch, twin_batch = live.propose(), twin.propose()
        assert batch == twin_batch
        if not batch:
            break
        restored_keys += [c.key for c in batch]
        for c in batch:
            from engine.simulation import simulate

            summary = simulate(apply_changes(scenario, c.changes), seed=c.seed).summary()
            live.observe(c.key, c.seed, summary)
            live.observe(c.key, c.seed, summary)  # a redelivered message changes nothing
    assert live.finished()
    final = Advisor(scenario, request, json.loads(json.dumps(live.state())))
    assert final.report() == live.report()
    assert len(restored_keys) == len(set(restored_keys))


def test_a_scenario_that_meets_the_target_needs_nothing(scenario):
    _, report = advise(scenario, "backup.completion_time<=100s")
    assert report.met_already and report.runs == 1 and not report.fixes


def test_bad_requests_name_what_is_wrong(scenario):
    with pytest.raises(ValueError, match="not a TCP flow"):
        Advisor(scenario, {"target": Target.parse("nosuch.completion_time<=1s")})
    with pytest.raises(ValueError, match="not a lever"):
        Advisor(
            scenario,
            {
                "target": Target.parse("backup.time<=1s"),
                "levers": [{"paths": ["flows.backup.tcp.nosuch"]}],
            },
        )
    with pytest.raises(ValueError, match="takes <="):
        Target.parse("backup.completion_time>=1s")
    assert math.isclose(Target.parse("*.goodput>=1.5Mbps").value, 1.5e6)


def test_curves_put_every_measured_point_above_its_bound(twenty):
    """QuickPredict's view: completion time against the window, the analytic bound beside
    the runs. A bound is a lower bound of the completion time at every measured point, and
    the bound falls as the window grows until the T1 sets the floor."""
    from engine.advice.curves import curves, to_csv

    advisor, _ = twenty
    rows = [r for r in curves(advisor) if r.lever == "rcv_buf"]
    measured = [r for r in rows if r.measured is not None]
    assert len(measured) >= 3  # the run itself and the bisection's probes
    for r in measured:
        assert r.bound <= r.measured
    bounds = [r.bound for r in sorted(rows, key=lambda r: r.value)]
    assert all(a >= b for a, b in zip(bounds, bounds[1:], strict=False))
    # The floor: the T1's 13.4 s plus the handshake's propagation there and back (2 x 83.5 ms).
    assert bounds[-1] == pytest.approx(T1_FLOOR + 2 * (2 * 0.04175 + 2 * 10e-6), rel=1e-6)
    csv = to_csv(rows).splitlines()
    assert csv[0] == "lever,value,label,metric,measured,ci_low,ci_high,bound"
    assert len(csv) == len(rows) + 1


def test_the_command_line_prints_the_report_as_json(scenario, tmp_path, capsys):
    from engine.cli import main

    path = tmp_path / "short.json"
    path.write_text(scenario.model_dump_json())
    code = main(
        [
            "advise",
            str(path),
            "--target",
            "backup.completion_time<=100s",
            "--json",
            "--jobs",
            "1",
            "--lever",
            "flows.backup.tcp.rcv_buf",
        ]
    )
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["met_already"] and doc["runs"] == 1 and doc["curves"]


def test_a_measured_interval_stays_within_its_quantity(scenario) -> None:
    """Goodput over three seeds that spread widely (151, 12 and 13 Mbit/s: a lossy path
    where one seed escapes its losses) has a t-interval of mean ± 4.30 × sd/√3 = 58.7 ±
    199 Mbit/s, whose low end is below zero; a rate cannot be, so the advisor reports the
    interval from 0 and keeps the high end."""
    request = AdviceRequest(target=Target.parse("backup.goodput>=300Mbps"), replications=3)
    seeds = Advisor(scenario, request).seeds
    values = [151e6, 12e6, 13e6]
    observed = {str(s): {"v": v, "limit": "loss"} for s, v in zip(seeds, values, strict=True)}
    state = {"round": 1, "proposed": {key_of({}): {}}, "observed": {key_of({}): observed}}
    measured = Advisor(scenario, request, state).measured({})
    assert measured is not None and measured.ci95 is not None
    mean = sum(values) / 3
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / 2)
    half = T975_2 * sd / math.sqrt(3)
    assert mean - half < 0  # the raw interval would leave the domain
    assert measured.ci95[0] == 0.0
    assert measured.ci95[1] == pytest.approx(mean + half, rel=1e-6)


def _measured_over(scenario, values, **request):
    """The advisor's measurement of the scenario itself from three seeds' given values."""
    req = AdviceRequest(target=Target.parse("backup.time<=300s"), replications=3, **request)
    seeds = Advisor(scenario, req).seeds
    observed = {
        str(s): {"v": v, "limit": "receive_window"} for s, v in zip(seeds, values, strict=True)
    }
    state = {"round": 1, "proposed": {key_of({}): {}}, "observed": {key_of({}): observed}}
    return Advisor(scenario, req, state).measured({})


def test_assurance_interval_requires_the_whole_interval_to_meet_the_target(scenario) -> None:
    """Target 300 s. Seeds of 290, 295 and 312 s: mean 299 s, sd = sqrt((81 + 16 + 169) / 2)
    = 11.53 s, 95% t-interval 299 ± 4.3027 × 11.53 / √3 = 299 ± 28.6 s, so up to 327.6 s.
    By the mean it meets; by the interval it does not, and a fix that meets only on average
    says how far its interval reaches. Seeds of 280, 282 and 284 s: 282 ± 4.3027 × 2 / √3
    = 282 ± 4.97 s, up to 287.0 s: it meets either way."""
    from engine.advice.reports import Fix, fix_text

    wide = [290.0, 295.0, 312.0]
    by_mean = _measured_over(scenario, wide)
    by_interval = _measured_over(scenario, wide, assurance="interval")
    assert by_mean.mean == pytest.approx(299.0) and by_mean.meets
    half = T975_2 * math.sqrt(133.0) / math.sqrt(3)
    assert by_interval.ci95[1] == pytest.approx(299.0 + half, rel=1e-6)
    assert not by_interval.meets
    narrow = _measured_over(scenario, [280.0, 282.0, 284.0], assurance="interval")
    assert narrow.ci95[1] == pytest.approx(282 + T975_2 * 2 / math.sqrt(3), rel=1e-6)
    assert narrow.meets

    target = Target.parse("backup.time<=300s")
    fix = Fix(
        levers=[],
        changes=[],
        cost=0,
        cost_classes=[],
        measured=by_mean,
        bound=None,
        note="",
        text="",
    )
    assert f"its 95% interval reaches {target.show(299.0 + half)}" in fix_text(target, fix)
    sure = fix.model_copy(update={"measured": narrow})
    assert "interval reaches" not in fix_text(target, sure)


def test_assurance_interval_needs_more_than_one_seed_where_seeds_differ(scenario) -> None:
    """A scenario with randomness run on one seed has no interval to be sure by: refused,
    naming the field. Without randomness one seed's value is exact, and allowed."""
    from engine.scenario import Scenario

    data = scenario.model_dump(mode="json")
    data["links"][1]["loss"] = {"model": "bernoulli", "rate": 0.001}
    lossy = Scenario.model_validate(data)
    target = Target.parse("backup.time<=300s")
    with pytest.raises(ValueError, match="^assurance: 'interval' needs"):
        Advisor(lossy, AdviceRequest(target=target, assurance="interval", replications=1))
    assert len(Advisor(lossy, AdviceRequest(target=target, assurance="interval")).seeds) == 3
    assert Advisor(scenario, AdviceRequest(target=target, assurance="interval")).seeds == [
        scenario.seed
    ]
