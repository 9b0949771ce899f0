"""The remedy check (engine/advice/check.py) on issue 23's Frame Relay backup, 2 MB instead
of 50 MB (the same contract, window and ports; every run under a second).

What the physics says, and the check must measure: the policer discards TCP's bursts,
since Bc + Be = 64 kbit is half the 16 KiB window's 131 kbit. Raising Be until Bc + Be
covers the window lets the bursts through (marked DE), and the 768 kbit/s port becomes the
limit: 1460 / 1508 x 768 kbit/s = 744 kbit/s of payload, at least 2 MB x 8 / 744 kbit/s =
21.5 s. Shaping to the CIR caps the PVC at 256 kbit/s x 1460/1508 = 248 kbit/s, below the
~400 kbit/s the flow gets policed: at least 64.5 s, slower than doing nothing. A remedy
measured worse must be reported worse and never recommended.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.advice.check import RemedyCheck
from engine.advice.local import drive
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
    assert sorted(actions) == ["raise_be", "raise_cir", "shape"]
    assert report.runs == 4  # the run itself and three remedies, one seed (no randomness)
    assert all(item.after is not None and item.after.n == 1 for item in report.items)


def test_raising_be_to_cover_the_window_lets_the_port_set_the_pace(report):
    be = next(i for i in report.items if i.remedy.action == "raise_be")
    (change,) = be.remedy.changes
    assert change.value + 32_000 >= 16 * 1024 * 8  # Bc + Be covers the window
    assert be.verdict == "better" and be.recommended
    assert be.after.mean >= NBYTES * 8 / PORT_PAYLOAD  # never faster than the port
    assert be.after.mean < 0.7 * report.base.mean


def test_shaping_to_the_cir_is_measured_worse_and_never_recommended(report):
    shape = next(i for i in report.items if i.remedy.action == "shape")
    assert not shape.remedy.helps and shape.remedy.why_not == "lowers_bound"
    assert shape.after.mean >= NBYTES * 8 / CIR_PAYLOAD * (1 - 1e-9)
    assert shape.verdict == "worse" and not shape.recommended and shape.pct > 0
    assert "worse: not recommended" in shape.text


def test_no_recommended_remedy_makes_it_slower(report):
    for item in report.items:
        if item.recommended:
            assert item.after.mean < report.base.mean
        if item.after.mean > report.base.mean:
            assert item.verdict == "worse"
