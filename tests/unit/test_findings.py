"""The seed papers' findings (engine/findings.py) against the engine.

Three things can drift apart: the engine, the stored numbers (presets/findings.json) and the
findings tables of the derivations (presets/*.md). Every table must be what the stored
numbers render to; the stored numbers must be what the engine gives now (checked on the
first seed of every point of every study: ≈ 10 s of simulation); and every finding the
derivations call reproduced must hold — as the paper's ordering or ratio, encoded in the
finding's check — in fresh runs, while a finding called `not` must still fail. When one of
these tests fails, `python -m engine findings --write` regenerates numbers and tables, and
the derivation's verdict or reason may need revising.
"""

from __future__ import annotations

import pytest

from engine import findings
from engine.cli import _study_spec
from engine.simulation import simulate
from engine.study import expand, resolve_base

pytestmark = pytest.mark.unit

ALL = [f for items in findings.DERIVATIONS.values() for f in items]


@pytest.fixture(scope="module")
def snapshot() -> findings.Runs:
    return findings.load_snapshot()["runs"]


@pytest.fixture(scope="module")
def fresh() -> findings.Runs:
    """The first seed of every point of every study the findings read."""
    runs: findings.Runs = {}
    for study in findings.studies():
        spec = _study_spec(study)
        rows = [
            (p, p.seeds[0], simulate(p.scenario, seed=p.seeds[0]))
            for p in expand(spec, resolve_base(spec))
        ]
        runs[study] = findings.records(study, rows)
    return runs


@pytest.mark.parametrize("study", findings.studies())
def test_the_stored_numbers_are_what_the_engine_gives_now(study, snapshot, fresh):
    stored = {(r["point"], r["seed"]): r["m"] for r in snapshot[study]}
    for r in fresh[study]:
        assert r["m"] == stored[(r["point"], r["seed"])], (
            f"{study} point {r['point']} seed {r['seed']}: the engine moved; "
            "run `python -m engine findings --write` and revise the derivation"
        )


@pytest.mark.parametrize("name", sorted(findings.DERIVATIONS))
def test_each_derivation_carries_the_table_its_numbers_render_to(name, snapshot):
    text = (findings.presets_dir() / name).read_text()
    assert text.count(findings.BEGIN) == 1, f"{name} must carry exactly one findings table"
    rows = findings.evaluate(findings.DERIVATIONS[name], snapshot)
    assert len(rows) == len(findings.DERIVATIONS[name])
    assert findings.table_in(text) == findings.render(rows)


@pytest.mark.parametrize("finding", ALL, ids=lambda f: f.key)
def test_every_verdict_agrees_with_its_check(finding, snapshot):
    (row,) = findings.evaluate([finding], snapshot)
    assert row.consistent, (
        f"{finding.key} is marked {finding.verdict} but its check says "
        f"{'it holds' if row.holds else 'it fails'}: {row.ours}"
    )


@pytest.mark.parametrize(
    "finding", [f for f in ALL if f.verdict == "reproduced"], ids=lambda f: f.key
)
def test_every_reproduced_finding_holds_in_fresh_runs(finding, fresh):
    (row,) = findings.evaluate([finding], fresh)
    assert row.holds, f"{finding.key}: {finding.claim}; ours now: {row.ours}"


def test_every_miss_is_explained():
    for f in ALL:
        if f.verdict != "reproduced":
            assert len(f.reason) > 40, f"{f.key} needs its reason"


# --- the papers' headline orderings, spelled out -------------------------------------------


def _t(runs, study, point):
    return findings.View(runs).mean(study, point, "time")


def test_seed_000_with_drops_reno_finishes_before_no_reno(fresh):
    # Fig. 7: 802 < 833 s (T1/8K), 695 < 702 s (T3/8K), 506 < 538 s (T1/64K); points 0-2
    # are without Reno, 3-5 with it, same seed: the same frames are dropped.
    for i in range(3):
        assert _t(fresh, "riverbed-drops-study", i + 3) < _t(fresh, "riverbed-drops-study", i)


def test_seed_000_drops_lengthen_and_the_64k_window_still_wins(fresh):
    for i in range(3):
        assert _t(fresh, "riverbed-drops-study", i) > _t(fresh, "riverbed-30mb-study", i)
    for reno in (0, 3):
        w64 = _t(fresh, "riverbed-drops-study", 2 + reno)
        assert w64 < _t(fresh, "riverbed-drops-study", 0 + reno)
        assert w64 < _t(fresh, "riverbed-drops-study", 1 + reno)


def test_seed_000_packets_per_second_count_acknowledgements(fresh):
    # Fig. 4: 50 / 58 / 186 packets/s. With delayed ACKs (one per two segments) data and
    # ACKs together are 1.5 x the data packets: 20,548 segments of 30 MB in 674 s would be
    # 30.5 pkt/s of data alone, 45.7 with the ACKs.
    view = findings.View(fresh)
    for i in range(3):
        pps = view.mean("riverbed-30mb-study", i, "pps")
        data_only = 30e6 / 1460 / view.mean("riverbed-30mb-study", i, "time")
        assert pps == pytest.approx(1.5 * data_only, rel=0.02)


def test_seed_004_pdr_falls_as_the_packet_size_grows(fresh):
    # Fig. 4 (Tahoe points 0-8, Reno 9-17: 250 .. 3,500 B)
    view = findings.View(fresh)
    for first in (0, 9):
        pdr = [view.mean("hadi-study", first + i, "pdr") for i in range(9)]
        assert all(a >= b for a, b in zip(pdr, pdr[1:], strict=False))
        assert pdr[-1] < pdr[0] < 1


def test_seed_004_throughput_doubles_from_0_3_to_0_6_mbps(fresh):
    # Fig. 2 (Tahoe points 18-22, Reno 23-27: 0.3 .. 1.5 Mb/s of n2-n3)
    view = findings.View(fresh)
    for first in (18, 23):
        g = [view.mean("hadi-study", first + i, "goodput") for i in range(5)]
        assert 1.6 <= g[1] / g[0] <= 2.4
        assert max(g[2:]) < 0.5e6  # then the 0.5 Mb/s exit limits


def test_seed_001_drops_fall_as_the_queue_limit_grows(fresh):
    view = findings.View(fresh)
    means = [
        sum(view.mean("gupta-study", 6 + 10 * q + d, "drops") for d in range(10)) for q in range(6)
    ]
    assert all(a >= b for a, b in zip(means, means[1:], strict=False))
    assert means[4] == means[5]  # QL 39 and 46: the queue no longer fills


def test_seed_001_the_study_prints_the_papers_tables_beside_ours(fresh):
    text = findings.gupta_table(findings.View(fresh))
    assert "10 5 2ms 11 | 16 |" in text  # Table I row 1, the paper's 16 drops
    assert text.splitlines()[-1].startswith("18 | 28/")  # Tables II-III, 18 ms, QL 11
