"""/v1/compare over HTTP against Postgres, Redis and real workers: any runs compared as a
sweep's points (recomputed here from the runs), and one series of several runs on one
time axis (checked against each run's own series)."""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any

import numpy as np
import pytest
from journeys import assert_problem
from scipy import stats as sps
from servicekit import Stack
from test_sweeps import small_base

WINDOW = "flows.backup.tcp.rcv_buf"
PRESETS = ("riverbed-t1-8k", "riverbed-t1-64k")


def submit(stack: Stack, body: dict[str, Any]) -> dict[str, Any]:
    with stack.client as client:
        resp = client.post("/v1/runs", json=body)
        assert resp.status_code in (201, 202), resp.text
    return stack.wait_run(resp.json()["id"])


def test_runs_are_compared_as_points(pg_stack: Stack) -> None:
    base = small_base(pg_stack)
    wide = {
        **base,
        "flows": [{**base["flows"][0], "tcp": {**base["flows"][0]["tcp"], "rcv_buf": 65535}}],
    }
    seeds = [random.randrange(1, 2**40) + i for i in range(3)]
    narrow_runs = [submit(pg_stack, {"scenario": base, "seed": s}) for s in seeds]
    wide_runs = [submit(pg_stack, {"scenario": wide, "seed": s}) for s in seeds]
    ids = [r["id"] for r in narrow_runs + wide_runs]
    with pg_stack.client as client:
        resp = client.get("/v1/compare", params={"runs": ",".join(ids), "baseline": ids[0]})
        assert resp.status_code == 200, resp.text
        body = resp.json()
        cached = client.get(
            "/v1/compare",
            params={"runs": ",".join(ids), "baseline": ids[0]},
            headers={"If-None-Match": resp.headers["etag"]},
        )
        assert cached.status_code == 304
    # Runs of one scenario are one point; what differs between the scenarios is the window.
    assert [p["run_ids"] for p in body["points"]] == [ids[:3], ids[3:]]
    assert [p["parameters"] for p in body["points"]] == [{WINDOW: 8760}, {WINDOW: 65535}]
    assert body["points"][0]["is_baseline"] and body["baseline"] == ids[0]

    a = np.array([r["summary"]["flows"]["backup"]["completion_time"] for r in narrow_runs])
    b = np.array([r["summary"]["flows"]["backup"]["completion_time"] for r in wide_runs])
    stat = body["points"][1]["metrics"]["backup"]["completion_time"]
    assert stat["mean"] == pytest.approx(b.mean(), rel=1e-12)
    half = sps.t.ppf(0.975, 2) * b.std(ddof=1) / np.sqrt(3)
    # A time is never negative: the t-interval is clipped at 0, and says so.
    low = b.mean() - half
    assert stat["ci95"]["low"] == pytest.approx(max(low, 0.0), rel=1e-9, abs=1e-12)
    assert stat["ci95"]["clipped"] == bool(low < 0)
    d = b - a  # the same seeds: paired
    assert stat["delta"]["paired"] and stat["delta"]["mean"] == pytest.approx(d.mean(), rel=1e-9)
    half = sps.t.ppf(0.975, 2) * d.std(ddof=1) / np.sqrt(3)
    assert stat["delta"]["ci95"]["high"] == pytest.approx(d.mean() + half, rel=1e-9)
    assert stat["delta"]["pct"] == pytest.approx(100 * d.mean() / a.mean(), rel=1e-9)

    # One factor: its share is the between-scenario sum of squares over the total.
    y = np.concatenate([a, b])
    share = (
        3 * ((a.mean() - y.mean()) ** 2 + (b.mean() - y.mean()) ** 2) / ((y - y.mean()) ** 2).sum()
    )
    effects = next(e for e in body["effects"] if e["metric"] == "completion_time")
    assert effects["factors"][0]["share"] == pytest.approx(share, rel=1e-9)
    assert body["text"].startswith(f"{WINDOW} explains"), body["text"]

    # Unpaired when the seeds differ: Welch's interval.
    other = submit(pg_stack, {"scenario": wide, "seed": seeds[0] + 100})
    with pg_stack.client as client:
        mixed = client.get(
            "/v1/compare", params={"runs": f"{ids[0]},{ids[1]},{other['id']}"}
        ).json()
    assert mixed["points"][1]["metrics"]["backup"]["completion_time"]["delta"]["paired"] is False


def test_compare_rejects_what_it_cannot_compare(pg_stack: Stack) -> None:
    run = submit(pg_stack, {"preset": "riverbed-t1-64k", "seed": 3})
    unknown = "00000000-0000-7000-8000-000000000000"
    with pg_stack.client as client:
        problem = assert_problem(
            client.get("/v1/compare", params={"runs": f"{run['id']},nope"}), 422
        )
        assert problem["errors"][0]["loc"] == ["query", "runs", 1]
        assert_problem(client.get("/v1/compare", params={"runs": ","}), 422)
        assert_problem(client.get("/v1/compare"), 422)
        assert_problem(client.get("/v1/compare", params={"runs": f"{run['id']},{unknown}"}), 404)
        problem = assert_problem(
            client.get("/v1/compare", params={"runs": run["id"], "baseline": unknown}), 422
        )
        assert problem["errors"][0]["loc"] == ["query", "baseline"]
        one = client.get("/v1/compare", params={"runs": run["id"]}).json()
        assert len(one["points"]) == 1 and one["design"]["factors"] == []
        assert "link's capacity is what limits backup" in one["text"]
        series = {"runs": run["id"], "key": "flow.backup.cwnd"}
        assert_problem(client.get("/v1/compare/series", params={**series, "key": "nope"}), 404)
        assert_problem(
            client.get("/v1/compare/series", params={**series, "max_points": 10**9}), 422
        )
        problem = assert_problem(
            client.get(
                "/v1/compare/series", params={**series, "runs": f"{run['id']},{run['id']}x"}
            ),
            422,
        )
        assert problem["errors"][0]["loc"] == ["query", "runs", 1]


def hold(t: np.ndarray, v: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The last sample at or before each time (NaN before the first)."""
    i = np.searchsorted(t, at, side="right") - 1
    return np.where(i >= 0, v[np.clip(i, 0, None)], np.nan)


def test_a_series_of_several_runs_on_one_time_axis(pg_stack: Stack) -> None:
    seed = random.randrange(1, 2**40)
    slow = submit(pg_stack, {"preset": "riverbed-t1-8k", "seed": seed})
    fast = submit(pg_stack, {"preset": "riverbed-t1-64k", "seed": seed})
    key = "flow.backup.cwnd"
    ids = [slow["id"], fast["id"]]
    with pg_stack.client as client:
        full = {}
        for run in (slow, fast):
            s = client.get(
                f"/v1/runs/{run['id']}/series/{key}", params={"max_points": 100_000}
            ).json()
            assert not s["downsampled"]
            full[run["id"]] = (np.array(s["t"]), np.array(s["v"], dtype=float))
        exact = client.get(
            "/v1/compare/series", params={"runs": ",".join(ids), "key": key, "max_points": 100_000}
        )
        assert exact.status_code == 200, exact.text
        small = client.get(
            "/v1/compare/series", params={"runs": ",".join(ids), "key": key, "max_points": 200}
        ).json()
        csv = client.get(
            "/v1/compare/series",
            params={"runs": ",".join(ids), "key": key, "max_points": 200, "format": "csv"},
        )
    body = exact.json()
    cols = body["columns"]
    t = np.array(cols["t"])
    assert body["unit"] == "bytes" and set(cols) == {"t", *ids}
    assert np.all(np.diff(t) > 0)
    sim_time = {run["id"]: run["summary"]["sim_time"] for run in (slow, fast)}
    for run_id in ids:
        col = np.array([np.nan if x is None else x for x in cols[run_id]], dtype=float)
        within = t <= sim_time[run_id]
        expected = hold(*full[run_id], t[within])
        assert np.array_equal(col[within], expected, equal_nan=True)
        # Held at its last value up to the run's end, then nothing.
        assert sim_time[run_id] in t and col[t == sim_time[run_id]][0] == full[run_id][1][-1]
        assert np.isnan(col[~within]).all()
    assert sim_time[fast["id"]] < sim_time[slow["id"]]

    # Downsampled: at most max_points rows, each run's peak kept.
    assert small["points"] == len(small["columns"]["t"]) <= 200
    for run_id in ids:
        col = [x for x in small["columns"][run_id] if x is not None]
        assert max(col) == full[run_id][1].max()
    assert csv.headers["content-type"].startswith("text/csv")
    assert csv.text.splitlines()[0] == f"t,{ids[0]},{ids[1]}"


def _zoomed_rows(
    doc: dict[str, Any],
    meta: dict[str, Any],
    series: tuple[np.ndarray, np.ndarray],
    origin: float,
    window: tuple[float, float],
    run: dict[str, Any],
) -> set[float]:
    """One run's column of an epoch-axis zoom, checked against the run's own series; the
    axis rows it brings."""
    t = np.array(doc["columns"]["t"])
    # The run's own samples inside its stretch of simulated time, from its own series.
    a, b = ((x - origin) / 1000.0 for x in window)
    st, sv = series
    inside = (st >= a) & (st <= b)
    assert meta["length"] == inside.sum() > 10, (meta, a, b)
    on_axis = np.round(st[inside] * 1000.0 + origin, 3)
    col = np.array([np.nan if x is None else x for x in doc["columns"][run["id"]]], dtype=float)
    at = np.searchsorted(t, on_axis - 2e-3)  # to the microsecond the answer rounds to
    np.testing.assert_allclose(t[at], on_axis, rtol=0, atol=2e-3)
    assert np.array_equal(col[at], sv[inside])
    rows = set(on_axis.tolist())
    # Held at its last value to the end of the window or of the run, whichever is first.
    until = min(b, run["summary"]["sim_time"])
    if st[inside][-1] < until:
        rows.add(round(until * 1000.0 + origin, 3))
    # The value it held at the window's start, set by a change before it.
    if (st < a).any() and st[inside][0] > a:
        held = round(a * 1000.0 + origin, 3)
        assert col[np.searchsorted(t, held - 2e-3)] == sv[st < a][-1]
        rows.add(held)
    return rows


def test_a_zoom_on_the_epoch_axis_picks_each_runs_own_window(pg_stack: Stack) -> None:
    """`time=epoch_ms`, as a Grafana panel overlaying runs asks: each run's simulated time
    laid from the moment it started, and `start`/`end` read on that axis, so the same
    wall-clock window is a different stretch of each run's simulated time."""
    seed = random.randrange(1, 2**40)
    runs = [submit(pg_stack, {"preset": p, "seed": seed}) for p in PRESETS]
    ids = [run["id"] for run in runs]
    key = "flow.backup.srtt"  # a sample per RTT measured: all along the runs
    origin = {r["id"]: datetime.fromisoformat(r["started_at"]).timestamp() * 1000.0 for r in runs}
    last = ids[-1]  # started last: the window is a stretch of its middle
    sim_last = runs[-1]["summary"]["sim_time"]
    start = origin[last] + 0.25 * sim_last * 1000.0
    end = origin[last] + 0.6 * sim_last * 1000.0
    zoom = {"runs": ",".join(ids), "key": key, "time": "epoch_ms", "max_points": 100_000}
    with pg_stack.client as client:
        full = {}
        for run_id in ids:
            s = client.get(f"/v1/runs/{run_id}/series/{key}", params={"max_points": 100_000})
            full[run_id] = (np.array(s.json()["t"]), np.array(s.json()["v"], dtype=float))
        body = client.get("/v1/compare/series", params={**zoom, "start": start, "end": end})
        assert body.status_code == 200, body.text
        rate = client.get(
            "/v1/compare/series",
            params={
                **zoom,
                "key": "flow.backup.goodput_bps",
                "max_points": 50,
                "start": start,
                "end": end,
            },
        ).json()
        bad = client.get("/v1/compare/series", params={**zoom, "start": 12.5, "end": end})
        axis = client.get("/v1/compare/series", params={**zoom, "time": "wall"})
    doc = body.json()
    t = np.array(doc["columns"]["t"])
    # Within the window, to the microsecond the answer rounds to (at 1.8e12 ms a double's
    # step is 0.24 µs, so the window's own edges come back within that of themselves).
    assert t.min() >= start - 1e-3 and t.max() <= end + 1e-3, (t.min() - start, t.max() - end)
    rows: set[float] = set()
    for run, meta in zip(runs, doc["runs"], strict=True):
        rows |= _zoomed_rows(doc, meta, full[run["id"]], origin[run["id"]], (start, end), run)
    assert doc["points"] == len(t) == len(rows)
    assert origin[ids[0]] < origin[last]  # the same window, a later stretch of the first run
    # A rate: every run over the same 50 buckets of the window, each row at a bucket's end.
    grid = np.array(rate["columns"]["t"])
    assert rate["points"] == len(grid) == 50 and start <= grid[0] < grid[-1] <= end + 1e-3
    assert all(r["points"] >= 45 for r in rate["runs"]), rate["runs"]

    problem = assert_problem(bad, 422)  # simulated seconds on the epoch axis
    assert [e["loc"] for e in problem["errors"]] == [["query", "start"]]
    assert [e["loc"] for e in assert_problem(axis, 422)["errors"]] == [["query", "time"]]
