"""Sweep benchmark: the wall time of one 24-run sweep through the real service (API, Celery
workers, Postgres and Redis, as `pg_stack` starts them) with 1 and then 2 worker
processes, and the speed-up. Falls back to the embedded mode (SQLite, file broker) when
Postgres or Redis is not reachable.

    .venv/bin/python bench/sweep_bench.py [--replications 3] [--rounds 3]

The sweep: the Riverbed 25 MB transfer, T1 vs T3 x four receive windows x 3 seeds,
`cache: refresh` so every run is simulated. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from servicekit import PG_URL, REDIS_URL, ROOT, Stack, _base_env, _with_db, free_port  # noqa: E402

from api.serve import api_command, worker_command  # noqa: E402
from settings import Settings  # noqa: E402


def sweep_body(replications: int) -> dict[str, Any]:
    return {
        "base": {"preset": "riverbed-t1-8k"},
        "parameters": {
            "links.access1.rate": ["T1", "T3"],
            "flows.backup.tcp.rcv_buf": [8760, 16384, 32768, 65535],
        },
        "replications": replications,
        "seed": secrets.randbelow(2**40),
        "cache": "refresh",
    }


def services() -> bool:
    try:
        import psycopg
        import redis

        psycopg.connect(PG_URL, connect_timeout=3).close()
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
        return True
    except Exception as exc:
        print(f"Postgres or Redis unreachable ({type(exc).__name__}): embedded mode")
        return False


@contextlib.contextmanager
def fresh_database(real: bool) -> Iterator[str | None]:
    """With `real`, the URL of a new Postgres database migrated to head, dropped afterwards;
    else None (the embedded mode's SQLite)."""
    if not real:
        yield None
        return
    import psycopg

    name = f"tcpfr_bench_{secrets.token_hex(4)}"
    with psycopg.connect(PG_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            database = _with_db(PG_URL, name)
            subprocess.run(
                [sys.executable, "-m", "alembic", "upgrade", "head"],
                env={**os.environ, "DATABASE_URL": database},
                cwd=ROOT,
                check=True,
                capture_output=True,
            )
            yield database
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def start(workers: int, tmp: Path, database: str | None) -> Stack:
    port = free_port()
    env = _base_env(tmp)
    env.update(PORT=str(port), TCPFR_WORKER_CONCURRENCY=str(workers), TCPFR_LOG_LEVEL="WARNING")
    stack = Stack(base_url=f"http://127.0.0.1:{port}", env=env, tmp=tmp)
    if database is None:
        stack.start("serve", [sys.executable, "-m", "api.serve"])
    else:
        queue = f"tcpfr-bench-{secrets.token_hex(4)}"
        env.update(DATABASE_URL=database, BROKER_URL=REDIS_URL, TCPFR_QUEUE=queue)
        settings = Settings(
            _env_file=None,
            database_url=database,
            broker_url=REDIS_URL,
            queue=queue,
            port=port,
            log_level="WARNING",
        )
        stack.start("worker", worker_command(settings, concurrency=workers))
        stack.start("api", api_command(settings))
    stack.wait_ready(timeout=90)
    return stack


def run_sweep(stack: Stack, body: dict[str, Any]) -> tuple[float, dict[str, Any], list[dict]]:
    with httpx.Client(base_url=stack.base_url, timeout=60) as client:
        t0 = time.perf_counter()
        resp = client.post("/v1/sweeps", json=body)
        resp.raise_for_status()
        sweep_id = resp.json()["id"]
        while True:
            sweep = client.get(f"/v1/sweeps/{sweep_id}").json()
            if sweep["status"] not in ("queued", "running"):
                wall = time.perf_counter() - t0
                runs = client.get(f"/v1/sweeps/{sweep_id}/runs", params={"limit": 500}).json()
                return wall, sweep, runs["items"]
            time.sleep(0.1)


def run_times(runs: list[dict]) -> tuple[float, float]:
    """Mean seconds a worker spent on a run (claim to result stored), and the mean number
    of runs in progress while any was (busy time over the span from first start to last end)."""
    spans = [
        (datetime.fromisoformat(r["started_at"]), datetime.fromisoformat(r["finished_at"]))
        for r in runs
        if r["started_at"] and r["finished_at"]
    ]
    busy = sum((b - a).total_seconds() for a, b in spans)
    span = (max(b for _, b in spans) - min(a for a, _ in spans)).total_seconds()
    return busy / len(spans), busy / span if span > 0 else 0.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replications", type=int, default=3, help="8 points x this many runs")
    parser.add_argument("--rounds", type=int, default=3, help="sweeps per stack, interleaved")
    args = parser.parse_args()
    real = services()
    walls: dict[int, list[float]] = {1: [], 2: []}
    with (
        tempfile.TemporaryDirectory(prefix="sweep-bench-") as tmpdir,
        fresh_database(real) as database,
    ):
        stacks: dict[int, Stack] = {}
        try:
            for workers in (1, 2):
                (Path(tmpdir) / f"w{workers}").mkdir()
                stacks[workers] = start(workers, Path(tmpdir) / f"w{workers}", database)
            # Both stacks stay up and take turns, so a change in the load others put on the
            # machine falls on both alike; the idle one costs next to nothing.
            for round_ in range(args.rounds):
                for workers, stack in stacks.items():
                    wall, sweep, runs = run_sweep(stack, sweep_body(args.replications))
                    walls[workers].append(wall)
                    per_run, parallel = run_times(runs)
                    print(
                        f"round {round_ + 1}, {workers} worker process"
                        f"{'es' if workers > 1 else ''}: {sweep['run_count']} runs "
                        f"{sweep['status']} in {wall:6.2f} s wall ({sweep['run_count'] / wall:5.2f}"
                        f" runs/s); a run takes {per_run:.2f} s in its worker, {parallel:.2f} "
                        f"runs in progress on average; load average {os.getloadavg()[0]:.2f}"
                    )
        finally:
            for stack in stacks.values():
                stack.stop()
    best = {w: min(v) for w, v in walls.items()}
    median = {w: statistics.median(v) for w, v in walls.items()}
    print(
        f"speed-up with 2 workers: {best[1] / best[2]:.2f}x best of {args.rounds} "
        f"({best[1]:.2f} s -> {best[2]:.2f} s), {median[1] / median[2]:.2f}x of the medians, "
        f"on {os.cpu_count()} cores ({'Postgres + Redis' if real else 'embedded'})"
    )


if __name__ == "__main__":
    main()
