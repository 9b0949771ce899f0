"""What an export costs the API's memory (issue 27): a run of 15,000 series and some 2.2 M
noisy samples (the size of a thousand flows simulated for minutes) is written straight to
a fresh PostgreSQL database, an API process is started on it, and its resident memory is
sampled from /proc every 10 ms while it streams the run's bundle, once and then four at
once. Prints figures; asserts nothing.

    .venv/bin/python bench/export_bench.py [--series 15000] [--points 150]

PostgreSQL is found at TCPFR_BENCH_PG_URL (default: the local server as user postgres);
the database is dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx
import numpy as np
import psycopg

ROOT = Path(__file__).resolve().parent.parent
PG_URL = os.environ.get("TCPFR_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
MIB = 1 << 20


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def store_run(url: str, series: int, points: int) -> uuid.UUID:
    """A succeeded run with `series` series of `points` samples each, noisy values."""
    os.environ["DATABASE_URL"] = url
    from run_row import add_succeeded_run  # beside this file

    from settings import Settings
    from store.codec import CODEC, encode
    from store.db import make_engine, make_sessionmaker, session_scope
    from store.models import RunSeries

    rng = np.random.default_rng(1)
    run_id = uuid.uuid4()
    sessions = make_sessionmaker(make_engine(Settings(database_url=url)))
    with session_scope(sessions) as s:
        add_succeeded_run(s, run_id, sim_time=300.0)
    for first in range(0, series, 1000):
        with session_scope(sessions) as s:
            for i in range(first, min(series, first + 1000)):
                t = np.cumsum(rng.exponential(2.0, points))
                v = rng.normal(50_000, 20_000, points)
                s.add(
                    RunSeries(
                        run_id=run_id, key=f"flow.f{i:05d}.inflight", unit="bytes",
                        length=points, t_start=float(t[0]), t_end=float(t[-1]), codec=CODEC,
                        t=encode(t), v=encode(v),
                    )
                )  # fmt: skip
    return run_id


def download(base: str, run_id: uuid.UUID, sizes: list[int]) -> None:
    with (
        httpx.Client(base_url=base, timeout=600) as client,
        client.stream("GET", f"/v1/runs/{run_id}/export") as resp,
    ):
        resp.raise_for_status()
        sizes.append(sum(len(chunk) for chunk in resp.iter_raw()))


def peak_while(pid: int, jobs: list[threading.Thread]) -> int:
    peak = 0
    for job in jobs:
        job.start()
    while any(job.is_alive() for job in jobs):
        peak = max(peak, _rss(pid))
        time.sleep(0.01)
    return peak


def measure(base: str, run_id: uuid.UUID, pid: int, what: str) -> None:
    """The API's memory at rest, then while it sends one export, four at once, one again."""
    httpx.get(f"{base}/v1/runs/{run_id}")
    rest = _rss(pid)
    print(f"{what}; API at rest {rest / MIB:.0f} MiB")
    for label, n in (("one export", 1), ("four at once", 4), ("one again", 1)):
        sizes: list[int] = []
        before = _rss(pid)
        jobs = [threading.Thread(target=download, args=(base, run_id, sizes)) for _ in range(n)]
        started = time.monotonic()
        peak = peak_while(pid, jobs)
        print(
            f"  {label:<13} {len(sizes)} x {max(sizes) / 1e6:.1f} MB in "
            f"{time.monotonic() - started:5.1f} s: peak {peak / MIB:.0f} MiB, "
            f"{(peak - rest) / MIB:+.0f} MiB over rest ({(peak - before) / MIB:+.0f} over "
            f"before), after {_rss(pid) / MIB:.0f} MiB"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--series", type=int, default=15_000)
    ap.add_argument("--points", type=int, default=150)
    args = ap.parse_args()
    name = f"tcpfr_bench_{secrets.token_hex(4)}"
    with psycopg.connect(PG_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = PG_URL.rpartition("/")[0] + f"/{name}"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = tempfile.mkdtemp(prefix="tcpfr-export-bench-")
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "PORT": str(port),
        "TCPFR_DATA_DIR": data,
        "TCPFR_RECONCILE_INTERVAL": "0",
        "TCPFR_LOG_LEVEL": "WARNING",
    }
    api = None
    try:
        subprocess.run(
            [sys.executable, "-m", "alembic", "upgrade", "head"], cwd=ROOT, env=env, check=True
        )
        run_id = store_run(url, args.series, args.points)
        argv = [sys.executable, "-m", "uvicorn", "api.main:app", "--port", str(port)]
        api = subprocess.Popen(argv, cwd=ROOT, env=env, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                if httpx.get(base + "/healthz").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        measure(base, run_id, api.pid, f"a run of {args.series:,} series x {args.points} samples")
    finally:
        if api is not None:
            api.terminate()
            api.wait(timeout=30)
        with psycopg.connect(PG_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
