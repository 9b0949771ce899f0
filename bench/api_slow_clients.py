"""Slow and idle clients against the real service (issue 27): prints figures, asserts nothing.

Starts ``python -m api.serve`` (what ``make run`` runs: embedded, its API processes) with
``TCPFR_HEADER_TIMEOUT`` and drives it on loopback only, with bounded counts and times:

1. ``--held`` connections (1,000) each send part of a request's headers and stop: when does
   the server close each (it should, within the header timeout)?
2. ``--attempted`` connections (20,000) opened as fast as they connect, each sending part of
   its headers, while a well-behaved client opens a new connection every 100 ms for
   ``GET /v1/runs?limit=5`` (a database read) and ``GET /healthz``: what does each
   well-behaved request get (an answer, a 503, a reset, a timeout) and how long does it
   wait? And do the slow ones all close?

    .venv/bin/python bench/api_slow_clients.py [--held 1000] [--attempted 20000]
                                               [--header-timeout 5]

This process raises its own open-file limit to hold its side of the connections (root may
raise the hard limit; otherwise ``--attempted`` is cut to what fits).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from api_load import free_port, stop, wait_up  # noqa: E402

PARTIAL = b"GET /healthz HTTP/1.1\r\nHost: bench\r\nX-Slow: "


def raise_own_fd_limit(want: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    for limit in ((max(hard, want), max(hard, want)), (hard, hard)):
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, limit)
            break
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


async def hold(port: int, closed_at: list[float], t0: float, patience: float) -> str:
    """One slow client: connect, send part of the headers, wait for the server to close."""
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port), timeout=patience
        )
    except (OSError, TimeoutError) as exc:
        return f"connect {type(exc).__name__}"
    try:
        writer.write(PARTIAL)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), timeout=patience)
        closed_at.append(time.monotonic() - t0)
        return "closed" if not data else f"closed after {data[:12]!r}"
    except TimeoutError:
        return "still open"
    except OSError as exc:
        closed_at.append(time.monotonic() - t0)
        return f"closed by {type(exc).__name__}"
    finally:
        writer.close()


async def probe(port: int, path: str, patience: float) -> tuple[str, float]:
    """One well-behaved request on a new connection: its outcome and its wait (s)."""
    t0 = time.monotonic()
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port), timeout=patience
        )
        writer.write(f"GET {path} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), timeout=patience)
        writer.close()
    except TimeoutError:
        return "timeout", time.monotonic() - t0
    except ConnectionResetError:
        return "reset", time.monotonic() - t0
    except OSError as exc:
        return type(exc).__name__, time.monotonic() - t0
    parts = status.split()
    return (parts[1].decode() if len(parts) > 1 else "empty"), time.monotonic() - t0


def summary(closed_at: list[float]) -> str:
    if not closed_at:
        return "none closed"
    a = np.array(closed_at)
    return f"closed after p50 {np.median(a):.1f} s, max {a.max():.1f} s"


async def held_phase(port: int, n: int, timeout: float) -> None:
    t0 = time.monotonic()
    closed_at: list[float] = []
    outcomes = Counter(
        await asyncio.gather(*(hold(port, closed_at, t0, timeout + 30) for _ in range(n)))
    )
    within = sum(1 for t in closed_at if t <= timeout + 1.0)
    print(f"\n== {n} held partial-header connections, header timeout {timeout:g} s")
    print(f"  outcomes: {dict(outcomes)}")
    print(f"  {summary(closed_at)}; {within} of {n} closed within the timeout + 1 s")


async def attack(port: int, n: int, timeout: float) -> tuple[Counter[str], list[float]]:
    """`n` slow connections, connected in waves of 1,000 so the attempt stays bounded in
    time; what became of each, and when the server closed them (s from the start)."""
    t0 = time.monotonic()
    closed_at: list[float] = []
    slow: list[asyncio.Future[str]] = []
    for start in range(0, n, 1000):
        slow += [
            asyncio.ensure_future(hold(port, closed_at, t0, timeout + 60))
            for _ in range(min(1000, n - start))
        ]
        await asyncio.sleep(0.05)
    return Counter(await asyncio.gather(*slow)), closed_at


def attack_process(port: int, n: int, timeout: float, out: Any) -> None:
    raise_own_fd_limit(n + 1000)
    out.put(asyncio.run(attack(port, n, timeout)))


async def attempted_phase(port: int, n: int, timeout: float, processes: int) -> None:
    """The slow connections come from `processes` processes (each holds its own sockets,
    within its own open-file limit), the well-behaved requests from this one."""
    t0 = time.monotonic()
    probes: list[tuple[float, str, str, float]] = []
    stop = asyncio.Event()

    async def prober() -> None:
        while not stop.is_set():
            for path in ("/v1/runs?limit=5", "/healthz"):
                started = time.monotonic() - t0
                task = asyncio.ensure_future(probe(port, path, 30))
                task.add_done_callback(
                    lambda f, s=started, p=path: probes.append((s, p, *f.result()))
                )
            await asyncio.sleep(0.1)

    probing = asyncio.ensure_future(prober())
    queue: Any = multiprocessing.get_context("spawn").Queue()
    attackers = [
        multiprocessing.get_context("spawn").Process(
            target=attack_process, args=(port, n // processes, timeout, queue)
        )
        for _ in range(processes)
    ]
    for a in attackers:
        a.start()
    loop = asyncio.get_running_loop()
    results = [await loop.run_in_executor(None, queue.get) for _ in attackers]
    for a in attackers:
        a.join()
    await asyncio.sleep(2)
    stop.set()
    await probing
    await asyncio.sleep(1)
    outcomes: Counter[str] = sum((r[0] for r in results), Counter())
    closed_at = [t for r in results for t in r[1]]
    print(
        f"\n== {n} attempted slow connections from {processes} processes, header timeout "
        f"{timeout:g} s"
    )
    print(f"  slow connections: {dict(outcomes)}; {summary(closed_at)}")
    odd = [(round(s, 1), p, o) for s, p, o, _ in probes if o not in ("200", "503")]
    if odd:
        print(f"  well-behaved requests neither answered nor refused (start s, path, what): {odd}")
    for path in ("/v1/runs?limit=5", "/healthz"):
        mine = [(o, w) for _, p, o, w in probes if p == path]
        waits = np.array([w for _, w in mine])
        print(
            f"  well-behaved GET {path}: {len(mine)} over {time.monotonic() - t0:.0f} s, "
            f"outcomes {dict(Counter(o for o, _ in mine))}; wait p50 "
            f"{np.median(waits) * 1e3:.0f} ms, p99 {np.quantile(waits, 0.99) * 1e3:.0f} ms, "
            f"max {waits.max() * 1e3:.0f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--held", type=int, default=1000)
    parser.add_argument("--attempted", type=int, default=20_000)
    parser.add_argument("--header-timeout", type=float, default=5.0)
    args = parser.parse_args()
    limit = raise_own_fd_limit(args.held + 2000)
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "BROKER_URL")},
            "PORT": str(port),
            "TCPFR_DATA_DIR": str(Path(tmp) / "data"),
            "TCPFR_HEADER_TIMEOUT": str(args.header_timeout),
            "TCPFR_LOG_LEVEL": "WARNING",
            "TCPFR_WORKER_CONCURRENCY": "1",
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "api.serve"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(Path(tmp) / "serve.log", "wb"),  # noqa: SIM115 (lives with it)
            start_new_session=True,
        )
        try:
            wait_up(f"http://127.0.0.1:{port}/healthz")
            print(f"this process may open {limit} files; load {os.getloadavg()[0]:.2f}")
            asyncio.run(held_phase(port, args.held, args.header_timeout))
            asyncio.run(attempted_phase(port, args.attempted, args.header_timeout, 2))
        finally:
            stop(proc)
        errors = [
            line
            for line in (Path(tmp) / "serve.log").read_text().splitlines()
            if "Too many open files" in line or "Traceback" in line
        ]
        print(f"server log: {len(errors)} lines of 'Too many open files' or tracebacks")


if __name__ == "__main__":
    main()
