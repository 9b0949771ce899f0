"""The API under concurrency: req/s, p50/p99 latency and errors at 10, 100 and 500 connections.

For each deployment mode (the embedded default: SQLite and the file-system broker; and
PostgreSQL + Redis), it starts the real service (``python -m api.serve``, one uvicorn
process and one worker process), stores a finished run, gives it a 100,000-sample series,
fills the runs list, and drives with wrk (Debian's ``wrk``):

- ``summary``: ``GET /v1/runs/{id}`` of the finished run (status, summary, diagnosis);
- ``series``: ``GET /v1/runs/{id}/series/{key}``, 1,000 points cut from the 100k samples;
- ``list``: ``GET /v1/runs?limit=50``;
- ``uncached``: ``GET /v1/runs/{id}`` of 50 different finished runs in turn, each request
  with a new query string, so the document cache never serves it (wrk's Lua);

each after one second of warm-up; and, started in the same run on the same machine, a bare FastAPI app (``bench/bare_app.py``)
that answers constants of the same shape rendered by orjson (``bare-summary``,
``bare-series``, ``bare-list``): the yardstick. After each load it checks that the service
answers one more request at once. Prints figures; asserts nothing.

    .venv/bin/python bench/api_load.py [--modes embedded,postgres] [--connections 10,100,500]
                                       [--duration 8]

Postgres mode uses the local server (``TCPFR_TEST_DATABASE_URL``, default
postgresql://postgres@127.0.0.1:5432/postgres) with a throwaway database, and Redis database
13 (``TCPFR_TEST_REDIS_URL``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PY = sys.executable
SERIES_KEY = "bench.synthetic_100k"
LIST_RUNS = 50


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(url: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2).status_code < 500:
                return
        time.sleep(0.3)
    raise SystemExit(f"{url} did not come up in {timeout:.0f} s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@contextlib.contextmanager
def service(
    mode: str, tmp: Path, *, workers: int = 1, **settings: str
) -> Iterator[tuple[str, dict[str, str]]]:
    """`python -m api.serve` (what `make run` runs) in this mode, on a free port."""
    port = free_port()
    env = {
        **os.environ,
        "PORT": str(port),
        "TCPFR_DATA_DIR": str(tmp / "data"),
        "TCPFR_WORKER_CONCURRENCY": str(workers),
        "TCPFR_LOG_LEVEL": "WARNING",
        "TCPFR_RECONCILE_INTERVAL": "0",
        **settings,
    }
    env.pop("DATABASE_URL", None)
    env.pop("BROKER_URL", None)
    dbname = None
    admin = os.environ.get(
        "TCPFR_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
    )
    if mode == "postgres":
        import psycopg

        dbname = f"tcpfr_bench_{secrets.token_hex(4)}"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{dbname}"')
        env["DATABASE_URL"] = admin.rsplit("/", 1)[0] + f"/{dbname}"
        env["BROKER_URL"] = os.environ.get("TCPFR_TEST_REDIS_URL", "redis://127.0.0.1:6379/13")
        env["TCPFR_QUEUE"] = f"bench-{secrets.token_hex(4)}"
    proc = subprocess.Popen(
        [PY, "-m", "api.serve"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp / f"serve-{mode}.log", "wb"),  # noqa: SIM115 (lives with the process)
        start_new_session=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_up(base + "/healthz")
        yield base, env
    finally:
        stop(proc)
        if dbname is not None:
            import psycopg

            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


def prepare(base: str, env: dict[str, str]) -> dict[str, str]:
    """A finished run with a 100k-sample series, and LIST_RUNS runs in the list."""
    with httpx.Client(base_url=base, timeout=60) as client:
        first = client.post("/v1/runs", json={"preset": "riverbed-t1-64k", "seed": 7}).json()
        run_id = first["id"]
        deadline = time.monotonic() + 120
        while client.get(f"/v1/runs/{run_id}").json()["status"] != "succeeded":
            if time.monotonic() > deadline:
                raise SystemExit("the first run did not succeed in 120 s")
            time.sleep(0.2)
        # More runs of the same scenario and seed: served from the result cache, so they
        # fill the list without simulating anything during the load.
        ids = [run_id]
        for _ in range(LIST_RUNS - 1):
            r = client.post("/v1/runs", json={"preset": "riverbed-t1-64k", "seed": 7})
            ids.append(r.json()["id"])
    add_series(env, uuid.UUID(run_id))
    return {"run": run_id, "runs": ",".join(ids)}


def add_series(env: dict[str, str], run_id: uuid.UUID, n: int = 100_000) -> None:
    """A 100k-sample series on the run, written as a worker writes its series: the engine
    caps its own traces at 20k points, so this one is synthetic (a sawtooth with noise)."""
    from settings import Settings
    from store.codec import CODEC, encode
    from store.db import make_engine, make_sessionmaker
    from store.models import RunSeries

    settings = Settings(
        _env_file=None,
        database_url=env.get("DATABASE_URL"),
        data_dir=Path(env["TCPFR_DATA_DIR"]),
    )
    engine = make_engine(settings)
    rng = np.random.default_rng(1)
    t = np.cumsum(rng.exponential(0.001, n))
    v = (np.arange(n) % 700) * 1460.0 + rng.normal(0, 50, n)
    with make_sessionmaker(engine)() as session, session.begin():
        session.add(
            RunSeries(
                run_id=run_id,
                key=SERIES_KEY,
                unit="bytes",
                length=n,
                t_start=float(t[0]),
                t_end=float(t[-1]),
                codec=CODEC,
                t=encode(t),
                v=encode(v),
            )
        )
    engine.dispose()


@contextlib.contextmanager
def bare_app(base: str, target: dict[str, str], tmp: Path) -> Iterator[str]:
    with httpx.Client(base_url=base, timeout=60) as client:
        bodies = {
            "summary": client.get(f"/v1/runs/{target['run']}").json(),
            "series": client.get(f"/v1/runs/{target['run']}/series/{SERIES_KEY}").json(),
            "list": client.get(f"/v1/runs?limit={LIST_RUNS}").json(),
        }
    path = tmp / "bare-bodies.json"
    path.write_text(json.dumps(bodies))
    port = free_port()
    # The same server and options as `make run` starts the API with (api.serve.api_command).
    from api.serve import api_command
    from settings import Settings

    argv = api_command(Settings(_env_file=None, port=port, log_level="WARNING"))
    proc = subprocess.Popen(
        [*argv[:-1], "bench.bare_app:app"],
        cwd=ROOT,
        env={**os.environ, "BARE_BODIES": str(path)},
        start_new_session=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_up(url + "/bare/summary")
        yield url
    finally:
        stop(proc)


# Each request a new query string: a key the document cache has never seen, so every one
# reads the database (what a first look at each of many runs costs).
ROUND_ROBIN = """
local paths = {%s}
local i = 0
local n = 0
request = function()
  i = i %% #paths + 1
  n = n + 1
  return wrk.format("GET", paths[i] .. "?n=" .. n)
end
"""


#: A request unanswered this long counts as a timeout (issue 32's bound).
TIMEOUT_S = 5


def wrk(url: str, connections: int, duration: float, tmp: Path, paths: list[str] | None = None):
    argv = [
        "wrk",
        "-t2",
        f"-c{connections}",
        f"-d{duration:g}s",
        "--timeout",
        f"{TIMEOUT_S}s",
        "--latency",
    ]
    if paths:
        script = tmp / "round_robin.lua"
        script.write_text(ROUND_ROBIN % ", ".join(f'"{p}"' for p in paths))
        argv += ["-s", str(script)]
    out = subprocess.run([*argv, url], capture_output=True, text=True, timeout=duration + 60).stdout

    def ms(m: re.Match[str] | None) -> float | None:
        return (
            None if m is None else float(m[1]) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[m[2]]
        )

    def latency(q: str) -> float | None:
        return ms(re.search(rf"^\s+{q}%\s+([\d.]+)(us|ms|s|m)\b", out, re.M))

    # wrk's thread stats: "Latency  avg  stdev  max  +/- stdev"
    worst = ms(re.search(r"^\s+Latency\s+\S+\s+\S+\s+([\d.]+)(us|ms|s|m)\b", out, re.M))
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    total = re.search(r"(\d+) requests in", out)
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = sum(map(int, sock.groups()[:3])) if sock else 0
    return {
        "rps": float(rps[1]) if rps else 0.0,
        "requests": int(total[1]) if total else 0,
        "p50": latency("50"),
        "p90": latency("90"),
        "p99": latency("99"),
        "max": worst,
        "errors": errors + (int(non2xx[1]) if non2xx else 0),
        "timeouts": int(sock[4]) if sock else 0,
    }


def answers_after(url: str) -> str:
    t0 = time.perf_counter()
    try:
        code = httpx.get(url, timeout=10).status_code
    except httpx.HTTPError as exc:
        return f"no ({type(exc).__name__})"
    return f"{code} in {(time.perf_counter() - t0) * 1e3:.0f} ms"


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def row(name: str, c: int, r: dict, after: str) -> str:
    return (
        f"{name:14} {c:5d} {r['rps']:9.0f} {fmt(r['p50']):>8} {fmt(r['p90']):>8} "
        f"{fmt(r['p99']):>8} {fmt(r['max']):>8} {r['errors']:6d} {r['timeouts']:8d}  {after}"
    )


HEADER = (
    f"{'target':14} {'conns':>5} {'req/s':>9} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} "
    f"{'max ms':>8} {'errors':>6} {'timeouts':>8}  answers after"
)


def run_mode(
    mode: str, connections: list[int], duration: float, names: list[str], repeat: int
) -> None:
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        with service(mode, tmp) as (base, env):
            target = prepare(base, env)
            run = target["run"]
            targets = {
                "summary": (f"{base}/v1/runs/{run}", None),
                "series": (f"{base}/v1/runs/{run}/series/{SERIES_KEY}", None),
                "list": (f"{base}/v1/runs?limit={LIST_RUNS}", None),
                "uncached": (base, [f"/v1/runs/{r}" for r in target["runs"].split(",")]),
            }
            with contextlib.ExitStack() as stack:
                bare_names = [n for n in ("summary", "series", "list") if f"bare-{n}" in names]
                if bare_names:
                    bare = stack.enter_context(bare_app(base, target, tmp))
                    for name in bare_names:
                        targets[f"bare-{name}"] = (f"{bare}/bare/{name}", None)
                targets = {n: targets[n] for n in names}
                print(
                    f"\n== {mode}: {serving(env)}; wrk -t2, {duration:g} s per row, load {load()}"
                )
                print(HEADER)
                results: dict[tuple[str, int], dict] = {}
                # Warm-up, not reported: each target's first requests fill the document
                # cache and touch code and data for the first time, for both apps alike.
                for url, paths in targets.values():
                    wrk(url, 10, 1, tmp, paths)
                for c in connections:
                    for name, (url, paths) in targets.items():
                        for _ in range(repeat):
                            r = wrk(url, c, duration, tmp, paths)
                            results[(name, c)] = r
                            after = answers_after(f"{base}/v1/runs/{run}")
                            print(row(name, c, r, after), flush=True)
                print(f"load after: {load()}")
                if bare_names:
                    print("ratios to the bare endpoint of the same shape (req/s, last run):")
                    for c in connections:
                        parts = []
                        for name in bare_names:
                            bare_rps = results[(f"bare-{name}", c)]["rps"]
                            ratio = results[(name, c)]["rps"] / bare_rps if bare_rps else 0.0
                            parts.append(f"{name} {ratio:.2f}x")
                        print(f"  {c:4d} connections: " + ", ".join(parts))


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def serving(env: dict[str, str]) -> str:
    """What serves the API: its processes, as `make run` starts them."""
    from settings import Settings

    n = env.get("TCPFR_API_PROCESSES")
    settings = Settings(_env_file=None, **({"api_processes": int(n)} if n else {}))
    return f"{settings.api_processes} API processes, one worker process"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="embedded,postgres")
    parser.add_argument("--connections", default="10,100,500")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per row")
    parser.add_argument(
        "--targets",
        default="summary,series,list,uncached,bare-summary,bare-series,bare-list",
        help="rows to drive, of: %(default)s",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs of each row")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install wrk")
    connections = [int(c) for c in args.connections.split(",")]
    for mode in args.modes.split(","):
        run_mode(mode.strip(), connections, args.duration, args.targets.split(","), args.repeat)


if __name__ == "__main__":
    main()
