"""Do open event streams tax other requests? (issue 27): prints figures, asserts nothing.

Starts the service as ``make run`` does (``bench/api_load.py``'s ``service``: embedded, or
PostgreSQL + Redis), starts a long run, opens ``--streams`` Server-Sent Event streams, and
drives ``GET /v1/runs/{id}`` of the running run (not cacheable: it reads the database)
with wrk, 10 connections, before the streams open and while they are open:

- ``one``: every stream on the running run;
- ``many``: each stream on a run of its own (queued behind the running one, so none ends),
  what a dashboard of many runs opens.

    .venv/bin/python bench/api_streams_load.py [--modes embedded,postgres] [--streams 100]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from api_load import fmt, load, service, wrk  # noqa: E402


def long_run(client: httpx.Client, factor: int) -> str:
    """riverbed-t1-8k carrying `factor` times the bytes with a 64 KB window over T3 links
    for up to 24 simulated hours: several minutes of a worker (6 hours ended within the
    measurement once the engine was compiled, and its last row then read a finished run)."""
    body = client.get("/v1/presets/riverbed-t1-8k").json()["body"]
    body["flows"][0]["bytes"] *= factor
    body["duration"] = 24 * 3600
    body["flows"][0]["tcp"]["rcv_buf"] = 65535
    for link in body["links"]:
        link["rate"] = "T3"
    body["name"] = f"bench-streams-{time.time_ns()}"
    run = client.post("/v1/runs", json={"scenario": body, "seed": 1}).json()
    return str(run["id"])


async def _hold_streams(base: str, paths: list[str], stop: threading.Event) -> list[int]:
    """Each stream read and discarded until `stop`; the bytes each received."""
    received = [0] * len(paths)
    # One client for all (a client per stream spends seconds building TLS contexts).
    limits = httpx.Limits(max_connections=len(paths) + 10)
    client = httpx.AsyncClient(base_url=base, timeout=None, limits=limits)

    async def one(i: int, path: str) -> None:
        async with client.stream("GET", path, headers={"Accept": "text/event-stream"}) as resp:
            async for chunk in resp.aiter_bytes():
                received[i] += len(chunk)
                if stop.is_set():
                    return

    tasks = [asyncio.ensure_future(one(i, p)) for i, p in enumerate(paths)]
    while not stop.is_set():
        await asyncio.sleep(0.2)
    for t in tasks:
        t.cancel()
    ended = await asyncio.gather(*tasks, return_exceptions=True)
    failures = {repr(e)[:120] for e in ended if not isinstance(e, asyncio.CancelledError | None)}
    if failures:
        print(f"  streams that failed: {failures}")
    await client.aclose()
    return received


@contextlib.contextmanager
def streams_open(base: str, paths: list[str]) -> Iterator[None]:
    stop = threading.Event()
    result: list[list[int]] = []
    thread = threading.Thread(
        target=lambda: result.append(asyncio.run(_hold_streams(base, paths, stop)))
    )
    thread.start()
    time.sleep(3)  # every stream open and past its first look
    try:
        yield
    finally:
        stop.set()
        thread.join()
        got = sum(1 for n in result[0] if n > 0) if result else 0
        print(f"  ({got} of {len(paths)} streams received events)")


def row(label: str, r: dict) -> None:
    print(
        f"  {label:34} {r['rps']:7.0f} req/s  p50 {fmt(r['p50']):>7} ms  p99 "
        f"{fmt(r['p99']):>7} ms  max {fmt(r['max']):>7} ms  errors {r['errors']}",
        flush=True,
    )


def run_mode(mode: str, n: int, duration: float) -> None:
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        with service(mode, tmp) as (base, _env), httpx.Client(base_url=base, timeout=60) as c:
            running = long_run(c, factor=4000)
            while c.get(f"/v1/runs/{running}").json()["status"] != "running":
                time.sleep(0.2)
            queued = [long_run(c, factor=4000) for _ in range(n)]
            url = f"{base}/v1/runs/{running}"
            print(
                f"\n== {mode}: {n} streams, GET /v1/runs/{{id}} of a running run, wrk -c10, "
                f"{duration:g} s; load {load()}"
            )
            wrk(url, 10, 1, tmp)
            row("no stream open", wrk(url, 10, duration, tmp))
            with streams_open(base, [f"/v1/runs/{running}/stream"] * n):
                row(f"{n} streams on the running run", wrk(url, 10, duration, tmp))
            with streams_open(base, [f"/v1/runs/{r}/stream" for r in queued]):
                row(f"{n} streams, one run each", wrk(url, 10, duration, tmp))
            status = c.get(f"/v1/runs/{running}").json()["status"]
            print(f"  the run is still {status}" if status == "running" else f"  the run {status}")
            print(f"  load after: {load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="embedded,postgres")
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--duration", type=float, default=10.0)
    args = parser.parse_args()
    for mode in args.modes.split(","):
        run_mode(mode.strip(), args.streams, args.duration)


if __name__ == "__main__":
    main()
