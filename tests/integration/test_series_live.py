"""A running run's series are readable as far as they go (issue 31), over HTTP against
Postgres, Redis and a real worker: while the run runs its series answer 200 with the points
of the worker's last snapshot, which grow, under an ETag that changes with them; once it has
succeeded they are the final ones, equal to the same simulation run here without snapshots."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
from servicekit import Stack

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from engine_helpers import bulk, dumbbell  # noqa: E402

from engine import Scenario, simulate  # noqa: E402

pytestmark = pytest.mark.integration

KEY = "flow.f.cwnd"
DURATION = 3600.0


def _scenario() -> Scenario:
    """An hour simulated of a bulk flow through a 10 Mb/s bottleneck: several snapshots two
    seconds apart however the engine runs (about 3 ms a simulated second compiled, 9 pure
    Python). At 20 minutes the compiled engine finished in 3.9 s, before a second snapshot."""
    return dumbbell(
        rate=10e6,
        delay=0.05,
        limit_packets=100,
        duration=DURATION,
        flows=[bulk(nbytes=None, rcv_buf=8_000_000, window_scaling=True)],
    )


def _wait(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while (found := predicate()) is None:
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.2)
    return found


def test_a_running_runs_series_grow_then_equal_the_final_ones(pg_stack: Stack) -> None:
    scenario = _scenario()
    body = {"scenario": scenario.model_dump(mode="json", exclude_unset=True), "seed": 1}
    with pg_stack.client as client:
        run = client.post("/v1/runs", json=body).json()
        url = f"/v1/runs/{run['id']}/series"
        pg_stack.wait_run(run["id"], timeout=120, until={"running", "succeeded", "failed"})

        def read() -> tuple[dict[str, Any], str] | None:
            resp = client.get(f"{url}/{KEY}", params={"max_points": 100_000})
            assert resp.status_code == 200, resp.text  # never a 409 while it runs
            data = resp.json()
            return (data, resp.headers["etag"]) if data["points"] else None

        # The index of a running run answers 200 (empty until the first snapshot).
        index = client.get(url)
        assert index.status_code == 200, index.text
        assert index.json()["partial"] is True

        first, first_tag = _wait(read, 30, "snapshot")
        assert first["partial"] is True
        assert 0 < first["t"][-1] < DURATION  # as far as the run went, not further

        def later() -> tuple[dict[str, Any], str] | None:
            data, tag = read()  # type: ignore[misc]
            return (data, tag) if data["t"][-1] > first["t"][-1] else None

        second, second_tag = _wait(later, 30, "later snapshot")
        assert second["partial"] is True and second["t"][-1] < DURATION
        assert second_tag != first_tag  # a dashboard polling with If-None-Match sees it
        # The same snapshot, asked again with its tag, is a 304 unless a newer one landed.
        again = client.get(
            f"{url}/{KEY}", params={"max_points": 100_000}, headers={"If-None-Match": second_tag}
        )
        assert again.status_code in (200, 304)
        if again.status_code == 304:
            assert again.headers["cache-control"] == "private, no-cache"

        done = pg_stack.wait_run(run["id"], timeout=300)
        assert done["status"] == "succeeded", done
        final = client.get(f"{url}/{KEY}", params={"max_points": 100_000})
        assert final.status_code == 200
        final_data = final.json()
        assert "partial" not in final_data or final_data["partial"] is False
        stored = {s["key"]: s for s in client.get(url).json()["series"]}

    # The final series are those of the same run without snapshots, exactly: the snapshots
    # neither changed them nor were left beside them.
    expected = simulate(scenario, seed=1)
    assert set(stored) == set(expected.series)
    assert stored[KEY]["length"] == len(expected.series[KEY].t)
    assert final_data["t"] == expected.series[KEY].t
    assert final_data["v"] == expected.series[KEY].v
    assert final_data["t"][-1] > second["t"][-1]


def test_a_cancelled_runs_snapshots_are_deleted_with_it(pg_stack: Stack) -> None:
    from sqlalchemy import create_engine, text

    body = {"scenario": _scenario().model_dump(mode="json", exclude_unset=True), "seed": 2}
    with pg_stack.client as client:
        run = client.post("/v1/runs", json=body).json()
        url = f"/v1/runs/{run['id']}/series"
        pg_stack.wait_run(run["id"], timeout=120, until={"running", "succeeded", "failed"})
        _wait(lambda: client.get(url).json()["series"] or None, 30, "snapshot")
        assert client.post(f"/v1/runs/{run['id']}/cancel").status_code == 202
        assert pg_stack.wait_run(run["id"], timeout=60)["status"] == "cancelled"
        assert client.get(url).status_code == 409  # as for any run that did not succeed
    db = create_engine(pg_stack.env["DATABASE_URL"])
    try:
        with db.connect() as conn:
            left = conn.execute(
                text("SELECT count(*) FROM series WHERE run_id = :id"), {"id": run["id"]}
            ).scalar_one()
    finally:
        db.dispose()
    assert left == 0  # not kept where nothing shows them
