"""Issue 31's estimate check: a sweep's dry-run wall time against the measured one, for runs of
3 MB and of 25 MB, each measured after the other size ran first (a fresh database and
service for each order, so the speed model has seen only the first size's runs). PostgreSQL,
Redis, 2 worker processes. Prints the ratios; asserts nothing.

    .venv/bin/python bench/estimate_sizes.py [--runs 40]
"""

from __future__ import annotations

import argparse
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep_bench import fresh_database, services, start  # noqa: E402

SIZES = ("3MB", "25MB")


def body(nbytes: str, runs: int) -> dict[str, Any]:
    return {
        "base": {"preset": "riverbed-t1-8k"},
        "parameters": {
            "links.access1.rate": ["T1", "T3"],
            "flows.backup.tcp.rcv_buf": [8760, 65535],
            "flows.backup.bytes": [nbytes],
        },
        "replications": max(1, runs // 4),
        "seed": secrets.randbelow(2**40),
        "cache": "refresh",
    }


def estimate_and_run(base: str, nbytes: str, runs: int) -> tuple[float, float]:
    with httpx.Client(base_url=base, timeout=120) as client:
        plan = client.post("/v1/sweeps", params={"dry_run": "true"}, json=body(nbytes, runs))
        plan.raise_for_status()
        estimate = plan.json()["estimate"]["wall_seconds"]
        t0 = time.perf_counter()
        sweep = client.post("/v1/sweeps", json=body(nbytes, runs)).json()
        while client.get(f"/v1/sweeps/{sweep['id']}/progress").json()["status"] in (
            "queued",
            "running",
        ):
            time.sleep(0.1)
        return estimate, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    if not services():
        sys.exit("estimate_sizes needs PostgreSQL and Redis on 127.0.0.1")
    print("order | size | runs | estimate s | measured s | estimate / measured")
    for order in (SIZES, SIZES[::-1]):
        with fresh_database(True) as database, tempfile.TemporaryDirectory() as tmp:
            stack = start(2, Path(tmp), database)
            try:
                for nbytes in order:
                    estimate, wall = estimate_and_run(stack.base_url, nbytes, args.runs)
                    print(
                        f"{' then '.join(order)} | {nbytes} | {args.runs} | {estimate:.1f} | "
                        f"{wall:.1f} | {estimate / wall:.2f}",
                        flush=True,
                    )
            finally:
                stack.stop()


if __name__ == "__main__":
    main()
