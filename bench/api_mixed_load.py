"""API load while a sweep runs: prints figures, asserts nothing.

Concurrent clients read runs, a run (status, summary, diagnosis), its history, a
downsampled series, and the sweep and its summary, for a fixed time, while the workers
simulate a sweep of 24 runs (a batch of runs where /v1/sweeps is absent). Prints requests
per second, p50/p99 latency and errors per endpoint and overall.

By default it starts the production shape on its own: a private Postgres and Redis (the
shared servers are not touched), the API (one uvicorn process) and 2 worker processes,
all on this machine; clients, API and workers share its cores.

    .venv/bin/python bench/api_load.py [--clients 16] [--duration 20] [--base-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "tests", ROOT / "tests" / "integration"):
    sys.path.insert(0, str(p))

SERIES_KEY = "flow.backup.goodput_bps"
HEADERS: dict[str, str] = {}  # the API key's, when one is given


@contextmanager
def own_stack(workers: int) -> Iterator[str]:
    from ephemeral import private_services, private_stack

    with private_services() as (pg, rd), tempfile.TemporaryDirectory() as tmp:
        stack = private_stack(
            Path(tmp),
            pg,
            rd,
            workers={"tcpfr-bench": workers},
            settings={"TCPFR_LOG_LEVEL": "WARNING"},
        )
        try:
            yield stack.base_url
        finally:
            stack.stop()


def wait_done(client: httpx.Client, run_ids: list[str], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    for run_id in run_ids:
        while client.get(f"/v1/runs/{run_id}").json()["status"] not in (
            "succeeded",
            "failed",
            "cancelled",
        ):
            if time.monotonic() > deadline:
                raise SystemExit(f"run {run_id} did not finish in {timeout}s")
            time.sleep(0.2)


def prepare(base_url: str, runs: int, nbytes: int) -> dict[str, Any]:
    """Finished runs to read, then a sweep (or batch) in progress; returns what to read."""
    with httpx.Client(base_url=base_url, timeout=60, headers=HEADERS) as client:
        done = [
            client.post(
                "/v1/runs", json={"preset": "riverbed-t1-64k", "seed": random.randrange(2**31)}
            ).json()["id"]
            for _ in range(4)
        ]
        wait_done(client, done)
        rates, bufs = ["T1", "T3"], [16384, 32768, 65535]
        sweep = client.post(
            "/v1/sweeps",
            json={
                "base": {"preset": "riverbed-t1-64k"},
                "parameters": {
                    "links.access1.rate": rates,
                    "flows.backup.tcp.rcv_buf": bufs,
                    "flows.backup.bytes": [nbytes],
                },
                "replications": max(1, runs // (len(rates) * len(bufs))),
                "seed": random.randrange(2**30),
                "cache": "refresh",
            },
        )
        if sweep.status_code in (201, 202):
            sweep_id = sweep.json()["id"]
            page = client.get(f"/v1/sweeps/{sweep_id}/runs", params={"limit": 500}).json()
            active = [r["id"] for r in page["items"]]
        else:  # no sweeps here: a batch of runs does the same to the workers
            print(f"(POST /v1/sweeps answered {sweep.status_code}: a batch of runs instead)")
            sweep_id = None
            body = client.get("/v1/presets/riverbed-t1-64k").json()["body"]
            body["flows"][0]["bytes"] = nbytes
            active = [
                client.post(
                    "/v1/runs",
                    json={"scenario": body, "seed": random.randrange(2**31), "cache": "refresh"},
                ).json()["id"]
                for _ in range(runs)
            ]
    return {"done": done, "active": active, "sweep": sweep_id}


def requests_for(target: dict[str, Any]) -> list[tuple[str, int, Any]]:
    """(label, weight, path maker) for the mix the clients draw from."""
    done, active, sweep = target["done"], target["active"], target["sweep"]
    mix: list[tuple[str, int, Any]] = [
        ("GET /v1/runs", 2, lambda: "/v1/runs?limit=20"),
        ("GET /v1/runs/{id} finished", 3, lambda: f"/v1/runs/{random.choice(done)}"),
        ("GET /v1/runs/{id} in sweep", 3, lambda: f"/v1/runs/{random.choice(active)}"),
        ("GET /v1/runs/{id}/events", 1, lambda: f"/v1/runs/{random.choice(active)}/events"),
        (
            "GET series max_points=500",
            3,
            lambda: f"/v1/runs/{random.choice(done)}/series/{SERIES_KEY}?max_points=500",
        ),
    ]
    if sweep:
        mix += [
            ("GET /v1/sweeps/{id}", 1, lambda: f"/v1/sweeps/{sweep}"),
            ("GET /v1/sweeps/{id}/summary", 1, lambda: f"/v1/sweeps/{sweep}/summary"),
        ]
    return mix


async def load(base_url: str, mix: list[tuple[str, int, Any]], clients: int, duration: float):
    samples: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    labels = [m[0] for m in mix]
    weights = [m[1] for m in mix]
    makers = {m[0]: m[2] for m in mix}
    deadline = time.monotonic() + duration

    async def client_loop(client: httpx.AsyncClient) -> None:
        while time.monotonic() < deadline:
            label = random.choices(labels, weights)[0]
            t0 = time.perf_counter()
            try:
                resp = await client.get(makers[label]())
                ok = resp.status_code < 400
            except httpx.HTTPError:
                ok = False
            samples[label].append(time.perf_counter() - t0)
            if not ok:
                errors[label] += 1

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(
        base_url=base_url, timeout=30, limits=limits, headers=HEADERS
    ) as client:
        t0 = time.perf_counter()
        await asyncio.gather(*(client_loop(client) for _ in range(clients)))
        elapsed = time.perf_counter() - t0
    return samples, errors, elapsed


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e3


def report(samples: dict[str, list[float]], errors: dict[str, int], elapsed: float) -> None:
    print(f"{'endpoint':32} {'requests':>8} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'errors':>6}")
    everything: list[float] = []
    for label, values in samples.items():
        everything += values
        print(
            f"{label:32} {len(values):8d} {len(values) / elapsed:7.1f} {pct(values, 0.5):7.1f} "
            f"{pct(values, 0.99):7.1f} {errors.get(label, 0):6d}"
        )
    print(
        f"{'all':32} {len(everything):8d} {len(everything) / elapsed:7.1f} "
        f"{pct(everything, 0.5):7.1f} {pct(everything, 0.99):7.1f} {sum(errors.values()):6d}"
    )
    print(f"(mean {statistics.mean(everything) * 1e3:.1f} ms over {elapsed:.1f} s)")


def sweep_state(base_url: str, active: list[str]) -> str:
    with httpx.Client(base_url=base_url, timeout=30, headers=HEADERS) as client:
        states = [client.get(f"/v1/runs/{r}").json()["status"] for r in active]
    return ", ".join(f"{s} {states.count(s)}" for s in sorted(set(states)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="an API already running (default: start one)")
    parser.add_argument(
        "--api-key", default=os.environ.get("TCPFR_API_KEY"), help="for an API with auth on"
    )
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of load")
    parser.add_argument("--runs", type=int, default=24, help="runs in the sweep")
    parser.add_argument("--bytes", type=int, default=100_000_000, help="each run's transfer")
    parser.add_argument("--workers", type=int, default=2, help="worker processes we start")
    args = parser.parse_args()
    if args.api_key:
        HEADERS["Authorization"] = f"Bearer {args.api_key}"

    @contextmanager
    def given(url: str) -> Iterator[str]:
        yield url

    with given(args.base_url) if args.base_url else own_stack(args.workers) as base_url:
        target = prepare(base_url, args.runs, args.bytes)
        print(
            f"load: {args.clients} clients for {args.duration:.0f} s against {base_url}; "
            f"{'sweep' if target['sweep'] else 'batch'} of {len(target['active'])} runs submitted"
        )
        samples, errors, elapsed = asyncio.run(
            load(base_url, requests_for(target), args.clients, args.duration)
        )
        report(samples, errors, elapsed)
        print(
            f"runs of the sweep after the load (read one by one): {sweep_state(base_url, target['active'])}"
        )


if __name__ == "__main__":
    main()
