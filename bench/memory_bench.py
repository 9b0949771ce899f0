"""Peak memory of real runs in a real worker (issue 27): each case is posted to a service
started here (`python -m api.serve`, embedded, one worker process, TCPFR_MAX_RUN_MEMORY as
set), and the resident memory of the worker process running it is sampled from /proc every
20 ms until it finishes. Printed beside the dry run's estimate; asserts nothing.

    .venv/bin/python bench/memory_bench.py [--only NAMES] [--long]

The cases: the scale cases of bench/engine_scale.py (CUBIC with SACK at 1 Gb/s for 10 s
only with --long: some ten minutes of simulation), the thousand-flow dumbbell for 300 s,
and a hundred flows sampled every millisecond. A case the API refuses (422) is printed as
refused, with the estimate that refused it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine_scale import MIB, dumbbell, flows_dumbbell  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _sampled(n: int, duration: float, interval: float) -> dict[str, Any]:
    doc = flows_dumbbell(n, duration)
    doc["sample_interval"] = interval
    return doc


def _cubic(sack: bool) -> dict[str, Any]:
    return dumbbell(
        "cubic", flows=1, rate="1Gbps", variant="cubic", sack=sack, window=16 * MIB, duration=10.0
    )


CASES: dict[str, Callable[[], dict[str, Any]]] = {
    "cubic-nosack-1g-16mib-10s": lambda: _cubic(False),
    "newreno-1-flow-100m-20s": lambda: flows_dumbbell(1, 20.0),
    "newreno-1000-flows-100m-20s": lambda: flows_dumbbell(1000, 20.0),
    "newreno-1000-flows-100m-300s": lambda: flows_dumbbell(1000, 300.0),
    "newreno-100-flows-20s-1ms": lambda: _sampled(100, 20.0, 0.001),
}
LONG = {"cubic-sack-1g-16mib-10s": lambda: _cubic(True)}


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except FileNotFoundError:
        pass
    return 0


def _worker_pid(client: httpx.Client, run_id: str) -> int | None:
    for e in client.get(f"/v1/runs/{run_id}/events").json()["events"]:
        if e["event"] == "started":
            return int(e["worker"].rsplit(":", 1)[1])
    return None


def measure(client: httpx.Client, doc: dict[str, Any]) -> str:
    cost = client.post("/v1/scenarios/validate", json=doc).json()["cost"]
    est = cost["estimate"]["memory_bytes"] / MIB
    resp = client.post("/v1/runs", json={"scenario": doc, "cache": "refresh"})
    if resp.status_code == 422:
        return f"estimate {est:6.0f} MiB   refused: {resp.json()['detail'][:90]}"
    run_id = resp.json()["id"]
    pid, peak, started = None, 0, time.monotonic()
    while True:
        if pid is None:
            pid = _worker_pid(client, run_id)
        if pid is not None:
            peak = max(peak, _rss(pid))
        run = client.get(f"/v1/runs/{run_id}").json()
        if run["status"] in ("succeeded", "failed", "cancelled"):
            break
        time.sleep(0.02)
    error = f"  {run['error']['type']}" if run["error"] else ""
    return (
        f"estimate {est:6.0f} MiB   peak RSS {peak / MIB:6.0f} MiB   {run['status']}{error}"
        f"   {time.monotonic() - started:6.1f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--only", help="comma-separated substrings of case names")
    ap.add_argument("--long", action="store_true")
    args = ap.parse_args()
    cases = {**CASES, **(LONG if args.long else {})}
    if args.only:
        cases = {k: v for k, v in cases.items() if any(p in k for p in args.only.split(","))}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = tempfile.mkdtemp(prefix="tcpfr-memory-bench-")
    env = {
        **os.environ,
        "PORT": str(port),
        "TCPFR_DATA_DIR": data,
        "TCPFR_WORKER_CONCURRENCY": "1",
        "TCPFR_TASK_SOFT_TIME_LIMIT": "7200",
    }
    serve = subprocess.Popen(
        [sys.executable, "-m", "api.serve"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            for _ in range(600):
                try:
                    if client.get("/readyz").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.2)
            budget = client.post("/v1/scenarios/validate", json=flows_dumbbell(1, 1.0)).json()
            print(f"memory budget {budget['cost']['budget']['memory_bytes'] / MIB:.0f} MiB")
            for name, build in cases.items():
                print(f"  {name:<30} {measure(client, build())}", flush=True)
    finally:
        serve.terminate()
        serve.wait(timeout=60)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
