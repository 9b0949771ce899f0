"""The sweep dry run's wall-time estimate against the measured wall time, for every study
preset, through the real service (Postgres + Redis when reachable, and the embedded mode),
2 worker processes. Also prints what calibrates the estimate: the engine's events per
second in the worker and the per-run overhead (a worker's time on a run beyond the
simulation: claim, load, store the result and its series).

    .venv/bin/python bench/estimate_bench.py [--mode pg|embedded|both] [--studies a,b]

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep_bench import fresh_database, services, start  # noqa: E402

from engine.presets import list_presets  # noqa: E402

WORKERS = 2


def measure(base_url: str, study: str) -> dict[str, Any]:
    body = {"cache": "refresh", "seed": secrets.randbelow(2**40)}
    with httpx.Client(base_url=base_url, timeout=120) as client:
        plan = client.post(f"/v1/presets/{study}/sweep", params={"dry_run": "true"}, json=body)
        plan.raise_for_status()
        estimate = plan.json()["estimate"]
        t0 = time.perf_counter()
        resp = client.post(f"/v1/presets/{study}/sweep", json=body)
        resp.raise_for_status()
        sweep_id = resp.json()["id"]
        while client.get(f"/v1/sweeps/{sweep_id}").json()["status"] in ("queued", "running"):
            time.sleep(0.1)
        wall = time.perf_counter() - t0
        runs, cursor = [], None
        while True:
            params: dict[str, Any] = {"limit": 100, **({"cursor": cursor} if cursor else {})}
            page = client.get(f"/v1/sweeps/{sweep_id}/runs", params=params).json()
            runs += page["items"]
            cursor = page["next_cursor"]
            if not cursor:
                break
        details = [client.get(r["links"]["self"]).json() for r in runs]
    busy = [
        (
            datetime.fromisoformat(r["finished_at"]) - datetime.fromisoformat(r["started_at"])
        ).total_seconds()
        for r in runs
        if r["started_at"] and r["finished_at"]
    ]
    engine = [d["summary"]["wall_time"] for d in details if d["summary"]]
    events = [d["summary"]["events"] for d in details if d["summary"]]
    return {
        "study": study,
        "runs": len(runs),
        "estimate": estimate,
        "wall": wall,
        "busy": sum(busy),
        "engine": sum(engine),
        "events": sum(events),
    }


def report(mode: str, rows: list[dict[str, Any]]) -> None:
    print(f"== {mode}, {WORKERS} worker processes")
    print("study | runs | estimated events | events | estimate s | measured s | ratio")
    for r in rows:
        est = r["estimate"]
        ratio = r["wall"] / est["wall_seconds"] if est["wall_seconds"] else float("inf")
        print(
            f"{r['study']} | {r['runs']} | {est['events']:,} | {r['events']:,} | "
            f"{est['wall_seconds']:.2f} | {r['wall']:.2f} | {ratio:.2f}x"
        )
    events = sum(r["events"] for r in rows)
    engine = sum(r["engine"] for r in rows)
    runs = sum(r["runs"] for r in rows)
    inside = [(r["busy"] - r["engine"]) / r["runs"] for r in rows]
    # What a run costs beyond its simulation, seen from outside: the workers' time per run
    # (wall x workers / runs, as the runs keep the workers busy) less its engine seconds.
    cycle = [(r["wall"] * min(WORKERS, r["runs"]) - r["engine"]) / r["runs"] for r in rows]
    print(
        f"engine speed in the workers: {events / engine:,.0f} events/s over {runs} runs; "
        f"per-run overhead beyond the simulation: median {statistics.median(cycle):.3f} s "
        f"(range {min(cycle):.3f}-{max(cycle):.3f}), of which in the worker between start "
        f"and finish {statistics.median(inside):.3f} s; load average {os.getloadavg()[0]:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["pg", "embedded", "both"], default="both")
    parser.add_argument("--studies", default="")
    args = parser.parse_args()
    studies = [s for s in args.studies.split(",") if s] or [
        p.name for p in list_presets() if p.kind != "scenario"
    ]
    modes = ["pg", "embedded"] if args.mode == "both" else [args.mode]
    if "pg" in modes and not services():
        modes.remove("pg")
    for mode in modes:
        with (
            tempfile.TemporaryDirectory(prefix="estimate-bench-") as tmpdir,
            fresh_database(mode == "pg") as database,
        ):
            stack = start(WORKERS, Path(tmpdir), database)
            try:
                report(mode, [measure(stack.base_url, s) for s in studies])
            finally:
                stack.stop()


if __name__ == "__main__":
    main()
