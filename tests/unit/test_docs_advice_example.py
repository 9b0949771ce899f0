"""docs/advice.md's worked example is what the engine says today: the remedy check and the
advisor on docs/examples/fr-backup.yaml print the lines the page shows (its figures went
stale once, 986 s on the page against 1,062 s run, after slow start changed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.advice.check import RemedyCheck
from engine.advice.local import drive
from engine.advice.options import LeverSpec
from engine.advice.request import AdviceRequest
from engine.advice.search import Advisor
from engine.advice.target import Target
from engine.scenario import load_scenario

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "advice.md").read_text()
SCENARIO = ROOT / "docs" / "examples" / "fr-backup.yaml"


def block_after(marker: str) -> list[str]:
    """The lines of the code block that follows the command block holding `marker`."""
    rest = PAGE.split(marker, 1)[1]
    found = re.search(r"\n```\n\s*\n```[a-z]*\n(.*?)\n```", rest, re.S)
    assert found, marker
    return found.group(1).splitlines()


def test_the_remedy_check_prints_what_the_page_shows() -> None:
    scenario = load_scenario(SCENARIO)
    report = drive(scenario, RemedyCheck(scenario, {})).report
    assert report.text == block_after("python -m engine check docs/examples/fr-backup.yaml")


def test_the_advisor_prints_what_the_page_shows() -> None:
    scenario = load_scenario(SCENARIO)
    levers = ["cir", "be", "becn_shaping"]
    request = AdviceRequest(
        target=Target.parse("backup.completion_time<=600s"),
        levers=[LeverSpec.parse(f"frame_relay.pvcs.p1.{f}") for f in levers]
        + [LeverSpec.parse("flows.backup.tcp.rcv_buf")],
    )
    report = drive(scenario, Advisor(scenario, request)).report
    assert report.text == block_after("--lever frame_relay.pvcs.p1.becn_shaping")
