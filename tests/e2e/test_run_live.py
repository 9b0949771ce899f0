"""The run page charts a run while it runs (issue 31), in headless chromium against Postgres,
Redis and a real worker: the charts appear marked "so far" before the run ends, with more
points as the worker's snapshots arrive, polled with the charts' ETags; when the run ends
the final series replace them and the marker goes."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
from servicekit import Stack
from test_ui import shot

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from engine_helpers import bulk, dumbbell  # noqa: E402

pytestmark = pytest.mark.e2e

#: How long the test waits for the run at most: a bound, not a timing. The run takes some
#: eight seconds of an idle worker (compiled, since the engine's per-event cost fell by a
#: fifth: a 900 s run was over before a second snapshot could grow its charts) and over 75 s
#: of one sharing two cores with a load average of 9, where a bound of 75 s failed.
BOUND = 300.0
DURATION = 2700.0


def _long_run() -> dict[str, Any]:
    """15 simulated minutes of a bulk flow through a 10 Mb/s bottleneck, as
    tests/integration/test_series_live.py has it (shorter): several snapshots, 2 s apart."""
    scenario = dumbbell(
        rate=10e6,
        delay=0.05,
        limit_packets=100,
        duration=DURATION,
        flows=[bulk(nbytes=None, rcv_buf=8_000_000, window_scaling=True)],
    )
    return {"scenario": scenario.model_dump(mode="json", exclude_unset=True), "seed": 11}


def _drawn(page: Any, selector: str) -> tuple[int, float] | None:
    """Rows of a chart's data and its last time (simulated seconds), as its holder says, read
    in one step (the partial charts may be replaced between two reads); None when gone."""
    found = page.evaluate(
        "s => { const e = document.querySelector(s);"
        " return e ? [e.dataset.points, e.dataset.tEnd] : null; }",
        selector,
    )
    if found is None:
        return None
    return int(found[0] or 0), float(found[1] or 0.0)


def _status(stack: Stack, run_id: str) -> str:
    with stack.client as client:
        return str(client.get(f"/v1/runs/{run_id}").json()["status"])


def test_the_run_page_charts_a_running_run_so_far(pg_stack: Stack, page: Any) -> None:
    began = time.monotonic()
    with pg_stack.client as client:
        run = client.post("/v1/runs", json=_long_run()).json()
    conditional: list[str] = []
    page.on(
        "request",
        lambda req: (
            conditional.append(req.headers["if-none-match"])
            if "/frame?" in req.url and "if-none-match" in req.headers
            else None
        ),
    )
    page.goto(f"{pg_stack.base_url}/ui/runs/{run['id']}")
    cwnd = "#charts[data-partial=true] #chart-cwnd"
    page.wait_for_selector(cwnd, timeout=BOUND * 1000)
    drawn = _drawn(page, cwnd)
    assert drawn is not None, "the partial charts were gone at once: the run ended too soon"
    points, first = drawn
    assert points > 10 and 0 < first < DURATION, (points, first)
    assert _status(pg_stack, run["id"]) == "running"  # drawn before the run ended
    assert "(so far)" in page.inner_text("#chart-cwnd .u-title")
    assert page.is_visible("#charts-note") and "So far" in page.inner_text("#charts-note")
    assert not page.locator("#charts[data-ready=true]").count()
    shot(page, "run-page-live.png")

    # Further as later snapshots arrive, while the charts are still partial (the rows of a
    # frame downsampled to 800 points a series need not grow; how far it goes does).
    grown = first
    while time.monotonic() - began < BOUND and (drawn := _drawn(page, cwnd)) is not None:
        grown = max(grown, drawn[1])
        if grown > first:
            break
        page.wait_for_timeout(200)
    assert DURATION > grown > first, (first, grown)
    assert conditional, "the page polled without the charts' ETags"

    left = BOUND - (time.monotonic() - began)
    page.wait_for_selector("#charts[data-ready=true]", timeout=max(left, 1) * 1000)
    assert _status(pg_stack, run["id"]) == "succeeded"
    assert not page.locator("#charts[data-partial]").count()
    assert not page.is_visible("#charts-note")
    assert "(so far)" not in page.inner_text("#chart-cwnd .u-title")
    drawn = _drawn(page, "#chart-cwnd")
    assert drawn is not None
    points, final = drawn
    assert points > 10 and final == pytest.approx(DURATION, abs=1.0)  # the whole run
    # Polling stopped with the run: no frame is asked for once the final charts are drawn.
    asked: list[str] = []
    page.on("request", lambda req: asked.append(req.url) if "/frame?" in req.url else None)
    page.wait_for_timeout(2500)
    assert asked == []
