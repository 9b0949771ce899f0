"""Series faithful at every resolution, over HTTP against Postgres, Redis and a real worker
(issue 31): the stored series hold the summary's peaks, every downsampling keeps the window's
greatest and least values, the per-packet delay series keeps the packets' mean, and `start`
and `end` are read on the time axis the request chose."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from journeys import assert_problem
from servicekit import Stack

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from engine_helpers import bulk, dumbbell  # noqa: E402

pytestmark = pytest.mark.integration

SIZES = (50, 100, 500, 1000, 2000)


def _scenario() -> dict[str, Any]:
    """300 s of one bulk flow through a 10 Mb/s bottleneck, a window far above the path's
    BDP, sampled every 10 ms: a sawtooth cwnd over some 245,000 packets."""
    sc = dumbbell(
        rate=10e6,
        delay=0.05,
        limit_packets=100,
        duration=300.0,
        sample_interval=0.01,
        flows=[bulk(nbytes=None, rcv_buf=8_000_000, window_scaling=True)],
    )
    return sc.model_dump(mode="json", exclude_unset=True)


def test_series_keep_their_peaks_and_means_at_every_resolution(pg_stack: Stack) -> None:
    with pg_stack.client as client:
        run = client.post("/v1/runs", json={"scenario": _scenario(), "seed": 1}).json()
        done = pg_stack.wait_run(run["id"], timeout=300)
        assert done["status"] == "succeeded", done
        flow = done["summary"]["flows"]["f"]
        url = f"/v1/runs/{done['id']}/series"
        index = {s["key"]: s for s in client.get(url).json()["series"]}
        # The cwnd changes more often than its share holds: thinned by M4 buckets.
        assert index["flow.f.cwnd"]["thinning"]["method"] == "bucket_m4"

        def get(key: str, **params: Any) -> dict[str, Any]:
            resp = client.get(f"{url}/{key}", params=params)
            assert resp.status_code == 200, resp.text
            return resp.json()

        for key in ("flow.f.cwnd", "flow.f.inflight"):
            stored = get(key, max_points=100_000)
            assert not stored["downsampled"] and stored["points"] == index[key]["length"]
            top, bottom = max(stored["v"]), min(stored["v"])
            if key == "flow.f.cwnd":
                assert top == flow["cwnd_max"]
            for size in SIZES:
                shown = get(key, max_points=size)
                assert shown["downsampled"] and shown["points"] <= size
                assert (max(shown["v"]), min(shown["v"])) == (top, bottom), (key, size)

        # One point per packet, or the mean of a fixed number of consecutive packets: each
        # point weighed by the time since the one before, the packets' mean delay (2%).
        delay = get("flow.f.delay", max_points=100_000)
        t, v = np.array(delay["t"]), np.array(delay["v"])
        weighted = float(np.sum(v[1:] * np.diff(t)) / (t[-1] - t[0]))
        assert weighted == pytest.approx(flow["delay_mean"], rel=0.02)
        assert t[0] < 5.0


def test_start_and_end_follow_the_time_axis(pg_stack: Stack) -> None:
    body = _scenario()
    body["duration"] = 30.0
    with pg_stack.client as client:
        run = client.post("/v1/runs", json={"scenario": body, "seed": 2}).json()
        done = pg_stack.wait_run(run["id"], timeout=120)
        assert done["status"] == "succeeded", done
        origin = datetime.fromisoformat(done["started_at"]).timestamp() * 1000.0
        url = f"/v1/runs/{done['id']}/series/flow.f.cwnd"
        sim = client.get(url, params={"start": 10, "end": 20}).json()
        epoch = client.get(
            url,
            params={"time": "epoch_ms", "start": origin + 10_000, "end": origin + 20_000},
        ).json()
        assert sim["points"] > 10 and epoch["points"] == sim["points"]
        assert epoch["v"] == sim["v"]
        # The same instants on the epoch axis, to the microsecond the response rounds to.
        np.testing.assert_allclose(
            epoch["t"], np.array(sim["t"]) * 1000.0 + origin, rtol=0, atol=1e-3
        )
        frame = client.get(
            f"/v1/runs/{done['id']}/frame",
            params={
                "keys": "flow.f.cwnd",
                "time": "epoch_ms",
                "start": origin + 10_000,
                "end": origin + 20_000,
            },
        ).json()
        assert len(frame["columns"]["t"]) == sim["points"]
        # Simulated seconds on the epoch axis: refused, naming the field.
        bad = client.get(url, params={"time": "epoch_ms", "start": 10, "end": origin + 1})
        problem = assert_problem(bad, 422)
        assert [e["loc"] for e in problem["errors"]] == [["query", "start"]]
