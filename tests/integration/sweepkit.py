"""What the sweep tests share: a small base scenario, a sweep of it, waiting for one and
reading its runs back (over HTTP, and from the database where the API does not say)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import numpy as np
from scipy import stats as sps
from servicekit import Stack
from sqlalchemy import create_engine, text

RATE, WINDOW = "links.access1.rate", "flows.backup.tcp.rcv_buf"


def small_base(stack: Stack) -> dict[str, Any]:
    """The Riverbed T1/8 KB path with a 500 kB transfer and 1% random loss on the access
    link, so seeds differ: a few hundredths of a second of simulation per run."""
    with stack.client as client:
        body = client.get("/v1/presets/riverbed-t1-8k").json()["body"]
    body["name"] = "sweep-small"
    body["flows"][0]["bytes"] = 500_000
    body["links"][1]["loss"] = {"model": "bernoulli", "rate": 0.01, "direction": "a_to_b"}
    return body


def sweep_body(stack: Stack, seed: int, **extra: Any) -> dict[str, Any]:
    return {
        "base": {"scenario": small_base(stack)},
        "parameters": {RATE: ["T1", "T3"], WINDOW: [8760, 65535]},
        "replications": 3,
        "seed": seed,
        "baseline": {RATE: "T1", WINDOW: 8760},
        **extra,
    }


def wait_sweep(stack: Stack, sweep_id: str, timeout: float = 180) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    with stack.client as client:
        while True:
            sweep = client.get(f"/v1/sweeps/{sweep_id}").json()
            if sweep["status"] not in ("queued", "running"):
                return sweep
            if time.monotonic() > deadline:
                raise AssertionError(f"sweep {sweep_id} still {sweep['status']}\n{stack.logs()}")
            time.sleep(0.2)


def stored_results(stack: Stack, sweep_id: str) -> int:
    """Results stored for the sweep's own runs (a cache hit stores none): counted per sweep,
    since other tests' runs share the database and may finish meanwhile."""
    return count(
        stack,
        "SELECT count(*) FROM results JOIN runs ON runs.id = results.run_id "
        f"WHERE runs.sweep_id = '{uuid.UUID(sweep_id)}'",
    )


def count(stack: Stack, sql: str) -> int:
    url = stack.env["DATABASE_URL"].replace("postgresql://", "postgresql+psycopg://")
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text(sql)).scalar_one())
    finally:
        engine.dispose()


def all_runs(stack: Stack, sweep_id: str) -> list[dict[str, Any]]:
    """Every run of the sweep through its paged listing (pages of 5)."""
    runs, cursor = [], None
    with stack.client as client:
        while True:
            params: dict[str, Any] = {"limit": 5, **({"cursor": cursor} if cursor else {})}
            page = client.get(f"/v1/sweeps/{sweep_id}/runs", params=params).json()
            runs += page["items"]
            cursor = page["next_cursor"]
            if cursor is None:
                return runs


def flows_of(stack: Stack, run_id: str) -> dict[str, Any]:
    with stack.client as client:
        run = client.get(f"/v1/runs/{run_id}").json()
    assert run["status"] == "succeeded", run
    return run["summary"]["flows"]["backup"]


def t_interval(x: np.ndarray) -> tuple[float, float]:
    half = sps.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
    return x.mean() - half, x.mean() + half


def events_of(client, run_id: str) -> list[str]:  # type: ignore[no-untyped-def]
    resp = client.get(f"/v1/runs/{run_id}/events")
    assert resp.status_code == 200, resp.text
    return [e["event"] for e in resp.json()["events"]]
