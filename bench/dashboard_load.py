"""What a dashboard costs while a sweep runs (issue 31): a 500-run sweep on PostgreSQL and
Redis with 2 worker processes, once with nobody looking and once with 20 panels polling
every second as a Grafana JSON data source does (If-None-Match with the last ETag): the
sweep's document, its summary as JSON, CSV and records, and its progress view. Prints the
API's CPU (its whole process tree, from /proc) as a share of one core, and the sweep's wall
time in each case; beside them what the pollers (this process) and PostgreSQL (its whole
tree) used, which share the machine's cores with the workers and so slow the sweep too.
Rounds alternate nobody looking and the panels, so drift shows. Asserts nothing.

    .venv/bin/python bench/dashboard_load.py [--runs 500] [--panels 20] [--bytes 50MB] [--rounds 2]

Issue 31 asks for sweeps of at least a minute: 50 MB runs take that with 2 workers here.
"""

from __future__ import annotations

import argparse
import http.client
import os
import secrets
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep_bench import fresh_database, services, start  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
RCV_BUFS = [8760, 16384, 32768, 65535, 131072]
RATES = ["T1", "T3"]


def tree_cpu(root: int) -> float:
    """CPU seconds (user + system) of `root` and its descendants: the live ones', and those
    of the ended ones their parents have reaped (PostgreSQL's backends come and go)."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry)
        stats[pid] = fields
        children.setdefault(int(fields[1]), []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            fields = stats[pid]
            total += sum(map(int, fields[11:15])) / TICK  # utime, stime, cutime, cstime
        todo.extend(children.get(pid, []))
    return total


def postmaster() -> int | None:
    """PostgreSQL's first process (the postmaster), whose tree is every backend."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    name, rest = f.read().split(") ", 1)
            except OSError:
                continue
            if name.endswith("(postgres") and rest.split()[1] != "0":
                found.append((int(rest.split()[1]), int(entry)))
    pids = {pid for _, pid in found}
    roots = [pid for parent, pid in found if parent not in pids]
    return min(roots) if roots else None


def replications_of(runs: int) -> int:
    return max(1, runs // (len(RATES) * len(RCV_BUFS)))


def body(runs: int, nbytes: str) -> dict[str, Any]:
    replications = replications_of(runs)
    return {
        "base": {"preset": "riverbed-t1-8k"},
        "parameters": {
            "links.access1.rate": RATES,
            "flows.backup.tcp.rcv_buf": RCV_BUFS,
            "flows.backup.bytes": [nbytes],
        },
        "replications": replications,
        "seed": secrets.randbelow(2**40),
        "cache": "refresh",
    }


PANELS = [
    "/v1/sweeps/{id}",
    "/v1/sweeps/{id}/summary",
    "/v1/sweeps/{id}/summary?format=csv",
    "/v1/sweeps/{id}/summary?format=records",
    "/v1/sweeps/{id}/progress",
]


def panel(base: str, path: str, stop: threading.Event, out: list[tuple[int, float, int]]) -> None:
    """One panel: a poll a second, with the last ETag, until `stop`. On one kept-alive
    connection with the standard library's client: httpx cost the pollers ~1.5 ms of CPU
    a request, taken from the cores the workers run on, where a dashboard (Grafana) is
    elsewhere."""
    etag: str | None = None
    url = urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=30)
    try:
        while not stop.is_set():
            started = time.perf_counter()
            conn.request("GET", path, headers={"If-None-Match": etag} if etag else {})
            resp = conn.getresponse()
            body = resp.read()
            out.append((resp.status, time.perf_counter() - started, len(body)))
            etag = resp.getheader("etag", etag)
            stop.wait(max(0.0, 1.0 - (time.perf_counter() - started)))
    finally:
        conn.close()


def one_sweep(stack: Any, runs: int, nbytes: str, panels: int) -> dict[str, float]:
    api, pg = stack.procs["api"].pid, postmaster()
    with httpx.Client(base_url=stack.base_url, timeout=30) as client:
        cpu0, t0 = tree_cpu(api), time.monotonic()
        own0, pg0 = time.process_time(), tree_cpu(pg) if pg else 0.0
        sweep = client.post("/v1/sweeps", json=body(runs, nbytes)).json()
        stop = threading.Event()
        polls: list[tuple[int, float, int]] = []
        threads = [
            threading.Thread(
                target=panel,
                args=(stack.base_url, PANELS[i % len(PANELS)].format(id=sweep["id"]), stop, polls),
                daemon=True,
            )
            for i in range(panels)
        ]
        for t in threads:
            t.start()
        while client.get(f"/v1/sweeps/{sweep['id']}/progress").json()["status"] in (
            "queued",
            "running",
        ):
            time.sleep(0.5)
        wall = time.monotonic() - t0
        stop.set()
        for t in threads:
            t.join()
        cpu = tree_cpu(api) - cpu0
        own, pg_cpu = time.process_time() - own0, (tree_cpu(pg) - pg0) if pg else 0.0
    times = sorted(p[1] for p in polls) or [0.0]
    return {
        "runs": replications_of(runs) * len(RATES) * len(RCV_BUFS),
        "wall_s": wall,
        "api_cpu_share": cpu / wall,
        "poller_cpu_share": own / wall,
        "pg_cpu_share": pg_cpu / wall,
        "polls": len(polls),
        "not_modified": len([p for p in polls if p[0] == 304]),
        "errors": len([p for p in polls if p[0] >= 400]),
        "bytes_per_poll": statistics.fmean(p[2] for p in polls) if polls else 0.0,
        "p50_ms": 1000 * times[len(times) // 2],
        "p99_ms": 1000 * times[int(len(times) * 0.99)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--panels", type=int, default=20)
    parser.add_argument("--bytes", default="50MB")
    parser.add_argument("--rounds", type=int, default=2, help="pairs of sweeps, alternated")
    args = parser.parse_args()
    if not services():
        sys.exit("dashboard_load needs PostgreSQL and Redis on 127.0.0.1")
    with fresh_database(True) as database, tempfile.TemporaryDirectory() as tmp:
        stack = start(2, Path(tmp), database)
        try:
            rows = []
            for panels in [0, args.panels] * args.rounds:  # interleaved: drift shows
                row = one_sweep(stack, args.runs, args.bytes, panels)
                rows.append((panels, row))
                print(
                    f"panels {panels:2d}: {row['runs']} runs in {row['wall_s']:.1f} s, API CPU "
                    f"{100 * row['api_cpu_share']:.1f}% of a core (pollers "
                    f"{100 * row['poller_cpu_share']:.1f}%, PostgreSQL "
                    f"{100 * row['pg_cpu_share']:.1f}%), {row['polls']} polls "
                    f"({row['not_modified']} 304, {row['errors']} errors), "
                    f"{row['bytes_per_poll']:.0f} B/poll, p50 {row['p50_ms']:.1f} ms, "
                    f"p99 {row['p99_ms']:.1f} ms",
                    flush=True,
                )
            quiet = statistics.fmean(r["wall_s"] for p, r in rows if p == 0)
            busy = statistics.fmean(r["wall_s"] for p, r in rows if p)

            def extra(key: str) -> float:
                looked = statistics.fmean(r[key] for p, r in rows if p)
                return 100 * (looked - statistics.fmean(r[key] for p, r in rows if p == 0))

            print(
                f"dashboard: sweep {100 * (busy / quiet - 1):+.1f}% wall time, the API "
                f"{extra('api_cpu_share'):+.1f}% of a core more than with nobody looking "
                f"(pollers {extra('poller_cpu_share'):+.1f}%, PostgreSQL "
                f"{extra('pg_cpu_share'):+.1f}%)"
            )
        finally:
            stack.stop()


if __name__ == "__main__":
    main()
