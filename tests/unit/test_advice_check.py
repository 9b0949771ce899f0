"""The remedy check (engine/advice/check.py) on issue 23's Frame Relay backup, 2 MB instead
of 50 MB (the same contract, window and ports; every run under a second).

What the physics says, and the check must measure: the policer discards TCP's bursts,
since Bc + Be = 64 kbit is half the 16 KiB window's 131 kbit. Raising Be until Bc + Be
covers the window lets the bursts through (marked DE), and the 768 kbit/s port becomes the
limit: 1460 / 1508 x 768 kbit/s = 744 kbit/s of payload, at least 2 MB x 8 / 744 kbit/s =
21.5 s. Shaping at the router at the contract's own rate, CIR + Be/Tc = 256 + 32 x 256/32 =
512 kbit/s of frames with the contract's Bc, lets no burst reach the policer beyond what it
admits: 1460 / 1508 x 512 kbit/s = 496 kbit/s of payload, at least 32.3 s less the bucket.
Shaping to the CIR (BECN shaping, what the old advice said) caps the PVC at 256 kbit/s x
1460/1508 = 248 kbit/s, below the ~400 kbit/s the flow gets policed: at least 64.5 s,
slower than doing nothing. A remedy measured worse must be reported worse and never
recommended.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.advice.check import RemedyCheck
from engine.advice.local import drive
from engine.advice.request import key_of
from engine.net import wire_bytes
from engine.scenario import load_scenario
from engine.study import apply_changes

pytestmark = pytest.mark.unit

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "fr-backup.yaml"
NBYTES = 2_000_000
FRAME_SHARE = 1460 / wire_bytes("frame_relay", 1500)
PORT_PAYLOAD = 768e3 * FRAME_SHARE
CIR_PAYLOAD = 256e3 * FRAME_SHARE


@pytest.fixture(scope="module")
def report():
    scenario = apply_changes(load_scenario(EXAMPLE), {"flows.backup.bytes": NBYTES})
    return drive(scenario, RemedyCheck(scenario, {})).report


def test_every_remedy_of_the_policed_backup_is_measured(report):
    assert report.finished and report.flow == "backup" and report.metric == "completion_time"
    actions = [item.remedy.action for item in report.items]
    # The contract's three, and the sender's two for recovering from the discards sooner
    # (the flow had no SACK, and waited for timeouts above Linux's 200 ms minimum).
    assert sorted(actions) == ["enable_sack", "lower_min_rto", "raise_be", "raise_cir", "shape"]
    assert report.runs == 6  # the run itself and five remedies, one seed (no randomness)
    assert all(item.after is not None and item.after.n == 1 for item in report.items)


def test_raising_be_to_the_ports_rate_lets_the_port_set_the_pace(report):
    """Covering the 131,072-bit window would take Be = 100 kbit; no Be past (port - CIR) x Tc
    = (768 - 256) kbit/s x 125 ms = 64 kbit is ever used (CIR + Be/Tc is then the port's
    rate, and the policer passes all the port sends), nor sold: that is the remedy."""
    be = next(i for i in report.items if i.remedy.action == "raise_be")
    (change,) = be.remedy.changes
    assert change.value == (768_000 - 256_000) * 0.125
    assert be.remedy.figures["port_bps"] == 768_000 and "window_bits" not in be.remedy.figures
    assert be.verdict == "better" and be.recommended
    assert be.after.mean >= NBYTES * 8 / PORT_PAYLOAD  # never faster than the port
    assert be.after.mean < 0.7 * report.base.mean


def test_the_senders_recovery_helps_but_leaves_the_contract_binding(report):
    """SACK and a shorter minimum RTO recover from the policer's discards sooner, but the
    discards stay: each is measured better, by less than the contract's own remedies, and
    neither is the check's conclusion (Be, the largest gain, is the cheapest within 10% of
    it: SACK's gain is under 90% of Be's)."""
    by = {i.remedy.action: i for i in report.items}
    be = by["raise_be"].after.mean
    for action in ("enable_sack", "lower_min_rto"):
        item = by[action]
        assert item.verdict == "better", action
        gain = report.base.mean - item.after.mean
        assert 0 < gain < 0.9 * (report.base.mean - be), action
    assert report.text[-1] == "Recommended: p1 Be 32 kbit → 64 kbit."


def test_shaping_at_the_contracts_rate_passes_the_policer(report):
    shape = next(i for i in report.items if i.remedy.action == "shape")
    rates = [c.value for c in shape.remedy.changes if c.path.endswith(".shaping.rate")]
    assert rates == [512_000]  # CIR + Be/Tc of frame bits, below the 768 kbit/s port
    assert shape.remedy.helps and shape.verdict == "better"
    bucket = 32_000 * FRAME_SHARE  # the shaper's Bc leaves at once
    assert shape.after.mean >= (NBYTES * 8 - bucket) / (512e3 * FRAME_SHARE) * (1 - 1e-9)
    assert shape.after.mean < report.base.mean


def test_shaping_to_the_cir_is_measured_worse_and_never_chosen():
    """The old advice, BECN shaping to the CIR, offered to the advisor as a lever: it is
    simulated, measured slower than doing nothing (the CIR's 248 kbit/s of payload), and
    rejected; it is never a fix."""
    from engine.advice.options import LeverSpec
    from engine.advice.request import AdviceRequest
    from engine.advice.search import Advisor
    from engine.advice.target import Target

    scenario = apply_changes(load_scenario(EXAMPLE), {"flows.backup.bytes": NBYTES})
    target = Target.parse(f"backup.completion_time<={NBYTES * 8 / (2 * CIR_PAYLOAD):.1f}s")
    lever = LeverSpec.parse("frame_relay.pvcs.p1.becn_shaping")
    request = AdviceRequest(target=target, levers=[lever])
    advisor = Advisor(scenario, request)
    result = drive(scenario, advisor).report
    assert result.finished and not result.fixes and result.reachable is False
    (rejected,) = result.rejected
    assert rejected.measured is not None and result.base is not None
    assert rejected.measured.mean >= NBYTES * 8 / CIR_PAYLOAD * (1 - 1e-9)
    assert rejected.measured.mean > result.base.mean  # worse than doing nothing


def test_no_recommended_remedy_makes_it_slower(report):
    for item in report.items:
        if item.recommended:
            assert item.after.mean < report.base.mean
        if item.after.mean > report.base.mean:
            assert item.verdict == "worse"


def test_a_shaper_at_the_contracts_rate_is_bounded_by_the_contract_alone():
    """Shaping at any rate (issue 25) plugs into the what-if bounds: a shaper at CIR + Be/Tc
    = 256 + 32 x 256/32 = 512 kbit/s of frames lets through exactly what the policer
    allows, so the bound is the contract's payload rate; one at the CIR is the CIR's."""
    from engine.advice.whatif import PathModel

    scenario = load_scenario(EXAMPLE)
    model = PathModel.of(scenario, scenario.flows[0])
    contract = model.bound({"frame_relay.pvcs.p1.shaping.rate": 512e3})
    assert contract.limit == "shaper"  # a tie goes to the shaper: it binds before the policer
    assert contract.capacity_bps == pytest.approx(512e3 * FRAME_SHARE, rel=1e-12)
    assert model.bound().capacity_bps == pytest.approx(512e3 * FRAME_SHARE, rel=1e-12)
    at_cir = model.bound({"frame_relay.pvcs.p1.shaping.rate": 256e3})
    assert at_cir.capacity_bps == pytest.approx(CIR_PAYLOAD, rel=1e-12)


def test_the_check_restores_from_plain_json_at_every_step():
    """As the worker runs it: each step from the stored state (strict JSON: no NaN or
    Infinity, which PostgreSQL's jsonb refuses), redelivered results changing nothing."""
    import json

    from engine.simulation import simulate

    scenario = apply_changes(load_scenario(EXAMPLE), {"flows.backup.bytes": 200_000})
    state: dict = {}
    while True:
        check = RemedyCheck(scenario, {}, json.loads(json.dumps(state, allow_nan=False)))
        batch = check.propose()
        if not batch:
            assert check.finished()
            break
        for c in batch:
            summary = simulate(apply_changes(scenario, c.changes), seed=c.seed).summary()
            check.observe(c.key, c.seed, summary)
            check.observe(c.key, c.seed, summary)
        state = check.state()
    report = check.report()
    assert report.finished and report.runs == 1 + len(report.items)
    assert all(item.after is not None for item in report.items)


#: The check's one remedy in the tests that give it their own runs: NewReno to BBR.
_BBR = {
    "action": "change_variant",
    "changes": [{"path": "flows.backup.tcp.variant", "value": "bbr", "was": "newreno"}],
    "cost_class": "endpoint",
    "subject": "backup",
    "figures": {},
    "predicted": None,
    "helps": True,
    "why_not": None,
    "text": "",
}


def _lossy():
    """The backup with 1% loss on its access link: a scenario with randomness (3 seeds)."""
    return apply_changes(
        load_scenario(EXAMPLE),
        {"flows.backup.bytes": NBYTES, "links.access1.loss": {"model": "bernoulli", "rate": 0.01}},
    )


def test_a_large_change_not_yet_sure_is_run_on_more_seeds():
    """Three seeds of a lossy path can spread so widely that a remedy faster in every one
    measures 'no change': the scenario took 2.6, 45 and 45 s, the remedy 1.7 s each, a
    paired mean of -29.2 s (-94.5%) with sd 24.5, so the 95% interval -29.2 +/- 4.30 x
    24.5/sqrt 3 = -29.2 +/- 60.8 s holds zero. The check runs the scenario and that remedy on three more
    seeds (paired, the same for both); with 45 s and 1.7 s there, the six differences give
    -36.2 +/- 2.571 x 17.3/sqrt 6 = -36.2 +/- 18.2 s: better, and it stops."""
    scenario = _lossy()
    check = RemedyCheck(scenario, {})
    assert check.seeds == [scenario.seed + i for i in range(3)] and check.most == 9
    changes = {"flows.backup.tcp.variant": "bbr"}
    key = key_of(changes)

    def seen(values):
        return {str(scenario.seed + i): {"v": v, "unfinished": False} for i, v in values}

    state = {
        "round": 2,
        "seeds": check.seeds,
        "proposed": {"base": {"changes": {}, "round": 0}, key: {"changes": changes, "round": 1}},
        "observed": {"base": seen(enumerate([2.6, 45.0, 45.0])), key: seen(enumerate([1.7] * 3))},
        "flow": "backup",
        "metric": "completion_time",
        "remedies": [_BBR],
    }
    check = RemedyCheck(scenario, {}, state)
    first = check.report().items[0]
    assert first.verdict == "no change" and first.pct == pytest.approx(-94.5, abs=0.05)
    assert not check.finished()
    more = check.propose()
    assert sorted((c.key, c.seed) for c in more) == sorted(
        (k, scenario.seed + i) for k in ("base", key) for i in (3, 4, 5)
    )
    for c in more:
        check.observe(c.key, c.seed, None)  # placeholders, replaced below
    state = check.state()
    state["observed"]["base"].update(seen((i, 45.0) for i in (3, 4, 5)))
    state["observed"][key].update(seen((i, 1.7) for i in (3, 4, 5)))
    check = RemedyCheck(scenario, {}, state)
    item = check.report().items[0]
    assert item.verdict == "better" and item.after is not None and len(item.after.seeds) == 6
    assert item.pct_ci95 is not None and item.pct_ci95[1] < 0
    assert check.finished() and check.propose() == []


def _summary(completed: bool, seconds: float, delivered: float) -> dict:
    """A run's summary as the check reads it: the backup flow's time if it finished, and its
    goodput (bytes delivered over the time it ran, in bits/s)."""
    return {
        "flows": {
            "backup": {
                "completed": completed,
                "completion_time": seconds if completed else None,
                "goodput_bps": delivered * 8 / seconds,
            }
        },
        "diagnosis": {"backup": {"remedies": [_BBR]}},
    }


def test_a_base_seed_unfinished_makes_the_check_compare_goodputs():
    """The metric follows every base seed, not the first to arrive. The scenario finished
    2 MB in 100 s on its first seed and delivered 1.2 and 1.0 MB of it in the 300 s the
    others ran: no completion time to compare, so the check compares goodputs, 160, 32 and
    26.7 kbit/s against the remedy's 2 MB in 50, 60 and 80 s = 320, 266.7 and 200 kbit/s.
    Paired differences +160, +234.7, +173.3 kbit/s; their mean 189.3 over the base's 72.9
    is +259.7%, every seed better: better, where by completion time it was 'failed'."""
    scenario = _lossy()
    check = RemedyCheck(scenario, {"replications": 3, "most_seeds": 3})
    base = {c.seed: c for c in check.propose()}
    seeds = sorted(base)
    runs = [(True, 100.0, 2e6), (False, 300.0, 1.2e6), (False, 300.0, 1.0e6)]
    for seed, run in zip(seeds, runs, strict=True):
        check.observe("base", seed, _summary(*run))
    assert check.metric == "goodput_bps"
    remedy = check.propose()
    for c, seconds in zip(sorted(remedy, key=lambda c: c.seed), (50.0, 60.0, 80.0), strict=True):
        check.observe(c.key, c.seed, _summary(True, seconds, 2e6))
    report = check.report()
    assert report.finished and report.metric == "goodput_bps"
    (item,) = report.items
    base_mean = (160e3 + 32e3 + 1e6 * 8 / 300) / 3
    after_mean = (320e3 + 2e6 * 8 / 60 + 200e3) / 3
    assert item.before.unfinished == 0 and item.before.mean == pytest.approx(base_mean, rel=1e-9)
    assert item.pct == pytest.approx(100 * (after_mean / base_mean - 1), rel=1e-9)
    assert item.verdict == "better" and item.recommended
    # Restored from its JSON state, it compares the same way.
    again = RemedyCheck(scenario, {"replications": 3, "most_seeds": 3}, check.state()).report()
    assert again.metric == "goodput_bps" and again.items[0].pct == item.pct


def test_every_base_seed_finished_keeps_completion_times():
    """The same runs with the base finishing on every seed (100, 120, 150 s): the times are
    compared, 50/60/80 s against 123.3 s mean, -48.6%."""
    scenario = _lossy()
    check = RemedyCheck(scenario, {"replications": 3, "most_seeds": 3})
    seeds = sorted(c.seed for c in check.propose())
    for seed, seconds in zip(seeds, (100.0, 120.0, 150.0), strict=True):
        check.observe("base", seed, _summary(True, seconds, 2e6))
    for c, seconds in zip(sorted(check.propose(), key=lambda c: c.seed), (50, 60, 80), strict=True):
        check.observe(c.key, c.seed, _summary(True, float(seconds), 2e6))
    report = check.report()
    assert report.metric == "completion_time"
    assert report.items[0].pct == pytest.approx(100 * (190 / 370 - 1), rel=1e-9)
    assert report.items[0].verdict == "better"
