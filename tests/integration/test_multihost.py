"""Workers on other machines, for real: three hosts made of network namespaces (tests/
integration/hosts.py). The server host runs Postgres, Redis and the API; two worker hosts
each run a Celery worker as docker-compose.yml starts it, from a working directory of its
own, knowing nothing but the server's address, with the API's data directory hidden from
it. Captures and exports travel through the database, never a shared disk.

- A 135-run sweep spreads over both worker hosts, and every result (each summary field but
  the wall time, each series' bytes, each capture's bytes) is byte-identical to the same
  sweep run by one worker on the server host.
- A worker host taken away whole mid-sweep (unplugged, every process SIGKILLed): the other
  finishes every run; 135 of 135 succeed, each with exactly one result, none lost, and no
  run is started more times than its lease expiries explain.

The runs are short (a 100 KB transfer over 1-4 Mb/s with random loss, its WAN captured),
so the whole module takes a couple of minutes. Its figures are printed (`pytest -s`).
"""

from __future__ import annotations

import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from ephemeral import PrivatePostgres, PrivateRedis, private_services
from hosts import Host, Lan, lan
from servicekit import ROOT, TERMINAL, Stack, _base_env

# Short leases: a lost host's runs are taken back within seconds.
LEASES = {
    "TCPFR_HEARTBEAT_INTERVAL": "0.5",
    "TCPFR_RUN_LEASE": "6",
    "TCPFR_QUEUED_LEASE": "3",
    "TCPFR_RECONCILE_INTERVAL": "0.5",
    # A lost machine's session, idle in its transaction, ends after this (default 60 s).
    "TCPFR_DB_IDLE_IN_TRANSACTION_TIMEOUT": "5",
}

BASE = {
    "name": "two-hosts",
    "duration": "60s",
    "nodes": [
        {"id": "h1", "kind": "host"},
        {"id": "r", "kind": "router"},
        {"id": "h2", "kind": "host"},
    ],
    "links": [
        {"id": "lan", "a": "h1", "b": "r", "rate": "10Mbps", "delay": "1ms"},
        {
            "id": "wan",
            "a": "r",
            "b": "h2",
            "rate": "2Mbps",
            "delay": "20ms",
            "loss": {"model": "bernoulli", "rate": 0.01},
        },
    ],
    "flows": [
        {
            "id": "f",
            "kind": "tcp_bulk",
            "src": "h1",
            "dst": "h2",
            "bytes": "100KB",
            "tcp": {"variant": "newreno", "rcv_buf": 32768},
        }
    ],
    "capture": [{"link": "wan", "direction": "both", "max_packets": 400}],
}
# 27 points x 5 replications: 135 runs.
SWEEP = {
    "base": {"scenario": BASE},
    "parameters": {
        "links.wan.rate": ["1Mbps", "2Mbps", "4Mbps"],
        "links.wan.loss.rate": [0.001, 0.01, 0.03],
        "flows.f.tcp.rcv_buf": [8760, 32768, 65535],
    },
    "mode": "grid",
    "replications": 5,
    "seed": 11,
    "cache": "refresh",
}
RUNS = 135


@dataclass
class Deployment:
    net: Lan
    stack: Stack  # the API on the server host, and every worker started
    database_url: str  # as the test (a client on the LAN) reaches it
    worker_env: dict[str, str]

    @property
    def server(self) -> Host:
        return self.net.hosts["server"]

    def start_worker(self, host: Host) -> None:
        """A worker as docker-compose.yml runs one: `--hostname worker@%h`, its host's name;
        in the host's own directory, with the API's data directory hidden from it."""
        from api.serve import worker_command
        from settings import Settings

        settings = Settings(_env_file=None, queue=self.worker_env["TCPFR_QUEUE"])
        argv = worker_command(settings, concurrency=1)
        argv[argv.index("--hostname") + 1] = "worker@%h"
        env = {**self.worker_env, "TCPFR_DATA_DIR": str(host.root / "data")}
        hidden = (self.server.root / "data",) if host is not self.server else ()
        self.stack.start(
            f"worker-{host.name}", host.argv(argv, hide=hidden), cwd=host.root, env=env
        )

    def stop_worker(self, host: Host) -> None:
        proc = self.stack.procs.pop(f"worker-{host.name}")
        proc.terminate()
        proc.wait(timeout=30)

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.database_url, connect_timeout=5) as conn:
            return conn.execute(sql, params).fetchall()

    def run_sweep(self) -> str:
        with self.stack.client as client:
            resp = client.post("/v1/sweeps", json=SWEEP)
            assert resp.status_code == 202, resp.text
            return resp.json()["id"]

    def wait_sweep(self, sweep_id: str, timeout: float = 240) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self.stack.client as client:
            while True:
                sweep = client.get(f"/v1/sweeps/{sweep_id}").json()
                if sweep["status"] in TERMINAL | {"partial"}:
                    return sweep
                assert time.monotonic() < deadline, f"{sweep}\n{self.stack.logs()}"
                time.sleep(0.5)

    def runs_of(self, sweep_id: str) -> list[tuple[Any, ...]]:
        """(id, point, replication, status, worker, attempts) of each run, in point order."""
        return self.query(
            "SELECT id, point_index, replication, status, worker, attempts FROM runs "
            "WHERE sweep_id = %s ORDER BY point_index, replication",
            uuid.UUID(sweep_id),
        )

    def stored(self, sweep_id: str) -> dict[tuple[int, int], dict[str, Any]]:
        """Every stored byte of each run's result, by (point, replication): the result row
        less its wall time, each series' packed arrays, each capture's file."""
        out: dict[tuple[int, int], dict[str, Any]] = {}
        rows = self.query(
            "SELECT r.point_index, r.replication, res.engine_version, res.scenario_hash, "
            "res.seed, res.sim_time, res.events, res.warnings, res.flows, res.links, res.pvcs, "
            "res.diagnosis, res.extra FROM runs r JOIN results res ON res.run_id = r.id "
            "WHERE r.sweep_id = %s",
            uuid.UUID(sweep_id),
        )
        for point, rep, *result in rows:
            out[(point, rep)] = {"result": result}
        for point, rep, key, codec, t, v, thinning in self.query(
            "SELECT r.point_index, r.replication, s.key, s.codec, s.t, s.v, s.thinning "
            "FROM runs r JOIN series s ON s.run_id = r.id WHERE r.sweep_id = %s",
            uuid.UUID(sweep_id),
        ):
            out[(point, rep)][key] = (codec, bytes(t), bytes(v), thinning)
        for point, rep, link, direction, sha, codec, data in self.query(
            "SELECT r.point_index, r.replication, c.link, c.direction, c.sha256, c.codec, c.data "
            "FROM runs r JOIN captures c ON c.run_id = r.id WHERE r.sweep_id = %s",
            uuid.UUID(sweep_id),
        ):
            out[(point, rep)][f"pcap:{link}:{direction}"] = (sha, codec, bytes(data))
        return out


@pytest.fixture(scope="module")
def deployment() -> Iterator[Deployment]:
    # Not under pytest's tmp_path (private to root): the postgres user reads its cluster's
    # directory below it.
    tmp = Path(tempfile.mkdtemp(prefix="tcpfr-hosts-"))
    try:
        with lan(["server", "w1", "w2"], tmp) as net:
            server = net.hosts["server"]
            with private_services(
                host=server.address, netns=server.netns, clients=f"{net.subnet}.0/24"
            ) as (pg, rd):
                stack = _serve(net, pg, rd, tmp)
                try:
                    yield stack
                finally:
                    stack.stack.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _serve(net: Lan, pg: PrivatePostgres, rd: PrivateRedis, tmp: Path) -> Deployment:
    """A database on the private cluster, migrated from the server host, and the API there."""
    name = f"tcpfr_hosts_{secrets.token_hex(4)}"
    with psycopg.connect(pg.url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    server = net.hosts["server"]
    database_url = pg.url.rpartition("/")[0] + f"/{name}"
    port = 8000
    common = {
        **LEASES,
        "DATABASE_URL": database_url,
        "BROKER_URL": rd.url,
        "TCPFR_QUEUE": f"tcpfr-hosts-{secrets.token_hex(4)}",
    }
    api_env = {
        **_base_env(server.root),
        **common,
        "HOST": server.address,
        "PORT": str(port),
        "TCPFR_DATA_DIR": str(server.root / "data"),
    }
    (server.root / "data").mkdir(exist_ok=True)
    subprocess.run(
        server.argv([sys.executable, "-m", "alembic", "upgrade", "head"]),
        cwd=ROOT,
        env=api_env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    from api.serve import api_command
    from settings import Settings

    stack = Stack(base_url=f"http://{server.address}:{port}", env=api_env, tmp=tmp)
    argv = api_command(Settings(_env_file=None, host=server.address, port=port))
    stack.start("api", server.argv(argv), cwd=server.root)
    stack.wait_ready()
    return Deployment(net, stack, database_url, {**_base_env(tmp), **common})


def _finished_on(runs: list[tuple[Any, ...]]) -> Counter[str]:
    """Runs per host: the worker node `worker@<host>:<pid>`."""
    return Counter(w.split("@", 1)[1].split(":", 1)[0] for *_, w, _a in runs if w)


@pytest.fixture(scope="module")
def over_two_hosts(deployment: Deployment) -> str:
    for host in ("w1", "w2"):
        deployment.start_worker(deployment.net.hosts[host])
    started = time.monotonic()
    sweep_id = deployment.run_sweep()
    sweep = deployment.wait_sweep(sweep_id)
    print(
        f"\nFIGURES two hosts: {RUNS} runs in {time.monotonic() - started:.1f} s, "
        f"by host {dict(_finished_on(deployment.runs_of(sweep_id)))}"
    )
    assert sweep["status"] == "succeeded", sweep
    return sweep_id


def test_a_sweep_spreads_over_both_worker_hosts(
    deployment: Deployment, over_two_hosts: str
) -> None:
    runs = deployment.runs_of(over_two_hosts)
    assert len(runs) == RUNS and {r[3] for r in runs} == {"succeeded"}
    by_host = _finished_on(runs)
    assert set(by_host) == {"w1", "w2"} and min(by_host.values()) >= 10, by_host
    # The API serves what the workers stored, having no disk in common with them: a
    # capture and the sweep's export.
    run_id, *_ = runs[0]
    with deployment.stack.client as client:
        pcap = client.get(f"/v1/runs/{run_id}/pcap", params={"link": "wan"})
        assert pcap.status_code == 200 and pcap.content[:4] == bytes.fromhex("4d3cb2a1")
        export = client.get(f"/v1/sweeps/{over_two_hosts}/export")
        assert export.status_code == 200 and export.content[:2] == b"PK"
    ((sha,),) = deployment.query(
        "SELECT sha256 FROM captures WHERE run_id = %s AND link = 'wan'", run_id
    )
    import hashlib

    assert hashlib.sha256(pcap.content).hexdigest() == sha


def test_results_are_byte_identical_to_one_host(
    deployment: Deployment, over_two_hosts: str
) -> None:
    """The same sweep, run again by one worker on the server host alone."""
    for host in ("w1", "w2"):
        deployment.stop_worker(deployment.net.hosts[host])
    deployment.start_worker(deployment.server)
    try:
        alone = deployment.run_sweep()
        assert deployment.wait_sweep(alone)["status"] == "succeeded"
    finally:
        deployment.stop_worker(deployment.server)
    assert set(_finished_on(deployment.runs_of(alone))) == {"server"}
    two, one = deployment.stored(over_two_hosts), deployment.stored(alone)
    assert len(two) == RUNS and two.keys() == one.keys()
    differ = [k for k in two if two[k] != one[k]]
    assert not differ, f"{len(differ)} runs differ, first {differ[0]}"
    captured = sum(1 for doc in two.values() for k in doc if k.startswith("pcap:"))
    print(f"\nFIGURES identical: {RUNS} of {RUNS} runs, {captured} captures")


def test_a_worker_host_taken_away_mid_sweep_loses_nothing(
    deployment: Deployment, over_two_hosts: str
) -> None:
    w1, w2 = deployment.net.hosts["w1"], deployment.net.hosts["w2"]
    for host in (w1, w2):
        deployment.start_worker(host)
    sweep_id = deployment.run_sweep()
    # Away while it is running one of the sweep's runs (freeze_holding_a_run says how).
    on_w1 = freeze_holding_a_run(deployment, w1, sweep_id)
    killed = w1.take_away(deployment.net.switch)
    deployment.stack.procs.pop("worker-w1").wait(timeout=10)
    lost_at = time.monotonic()
    sweep = deployment.wait_sweep(sweep_id)
    runs = deployment.runs_of(sweep_id)
    statuses = Counter(r[3] for r in runs)
    ids = [r[0] for r in runs]
    results = dict(
        deployment.query(
            "SELECT run_id, count(*) FROM results WHERE run_id = ANY(%s) GROUP BY run_id", ids
        )
    )
    events = deployment.query(
        "SELECT run_id, event FROM run_events WHERE run_id = ANY(%s) AND event IN "
        "('started', 'requeued', 'retried')",
        ids,
    )
    starts = Counter(r for r, e in events if e == "started")
    taken_back = Counter(r for r, e in events if e in ("requeued", "retried"))
    over = {r: (starts[r], taken_back[r]) for r in ids if starts[r] > 1 + taken_back[r]}
    print(
        f"\nFIGURES host lost: {killed} processes killed with {on_w1[0]} running on w1; "
        f"{statuses['succeeded']} of {RUNS} succeeded in {time.monotonic() - lost_at:.1f} s "
        f"after; results per run {Counter(results.values())}; runs started twice "
        f"{sum(1 for r in ids if starts[r] > 1)}, each after its lease expired"
    )
    assert sweep["status"] == "succeeded" and statuses == {"succeeded": RUNS}, statuses
    assert all(results.get(r) == 1 for r in ids), results
    assert not over, f"started more often than taken back: {over}"
    # The run w1 was running finished on w2, after being taken back.
    lost_run = on_w1[0]
    assert taken_back[lost_run] >= 1 and starts[lost_run] == 2
    assert "@w2:" in next(r[4] for r in runs if r[0] == lost_run)
    assert deployment.stored(sweep_id) == deployment.stored(over_two_hosts)


def freeze_holding_a_run(deployment: Deployment, w1: Any, sweep_id: str) -> list[Any]:
    """Host w1 frozen (SIGSTOP) while it runs one of the sweep's runs, a few runs in; the
    ids of the runs it holds then. A run takes tens of milliseconds, so one seen running
    may finish before the cable is cut: the host is frozen first, at no chosen moment,
    whatever it had sent is let land, and the run it holds then is the one it loses;
    holding none (between runs), it thaws and the next try comes a few milliseconds later."""
    deadline = time.monotonic() + 120

    def progress() -> tuple[int, list[Any] | None]:
        ((done, running),) = deployment.query(
            "SELECT count(*) FILTER (WHERE status = 'succeeded'), array_agg(id) FILTER "
            "(WHERE status = 'running' AND worker LIKE '%%@w1:%%') FROM runs WHERE sweep_id = %s",
            uuid.UUID(sweep_id),
        )
        return done, running

    while True:
        done, _ = progress()
        assert done < RUNS and time.monotonic() < deadline, deployment.stack.logs()
        if done >= 20:
            w1.signal(signal.SIGSTOP)
            time.sleep(0.3)
            done, on_w1 = progress()
            if on_w1:
                break
            w1.signal(signal.SIGCONT)
        time.sleep(0.005)
    return on_w1


# A worker's connection that holds a run's row lock, as its transaction storing a result
# does for a moment: what a host lost at that moment leaves behind in the database.
HOLD_LOCK = """
import sys, time
from sqlalchemy import text
from settings import Settings
from store.db import make_engine
with make_engine(Settings()).connect() as conn:
    conn.execute(text("SELECT id FROM runs WHERE id = :id FOR UPDATE"), {"id": sys.argv[1]})
    print("locked", flush=True)
    time.sleep(3600)
"""


def test_a_host_lost_inside_a_transaction_holds_nothing_up(deployment: Deployment) -> None:
    """w2 (the host left by the test before) is lost while a connection of its holds the
    row lock of a run it is running. The server never hears of it (no FIN, no RST: the
    cable is gone), so that session lives on, idle in its transaction, with the lock. The
    run is still taken back and finished by another worker (on the server host) within its
    lease and the idle-in-transaction timeout, not after the hours TCP takes to give up on
    a silent peer; and the reconciler is not stuck behind the lock meanwhile."""
    w2 = deployment.net.hosts["w2"]
    # 300 MB over 2 Mb/s: some 20 minutes simulated, seconds of a worker.
    long = {**BASE, "name": "long", "duration": "3600s"}
    long["flows"] = [{**BASE["flows"][0], "bytes": "300MB"}]
    body = {"scenario": long, "seed": 5, "cache": "refresh"}
    with deployment.stack.client as client:
        run_id = client.post("/v1/runs", json=body).json()["id"]
    deadline = time.monotonic() + 60
    while not deployment.query(
        "SELECT 1 FROM runs WHERE id = %s AND status = 'running' AND worker LIKE %s",
        uuid.UUID(run_id),
        "%@w2:%",
    ):
        assert time.monotonic() < deadline, deployment.stack.logs()
        time.sleep(0.05)
    holder = subprocess.Popen(
        w2.argv([sys.executable, "-c", HOLD_LOCK, run_id]),
        cwd=w2.root,
        env={**deployment.worker_env, "TCPFR_DATA_DIR": str(w2.root / "data")},
        stdout=subprocess.PIPE,
    )
    assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
    w2.take_away(deployment.net.switch)
    holder.wait(timeout=10)
    deployment.stack.procs.pop("worker-w2").wait(timeout=10)
    lost_at = time.monotonic()
    deployment.start_worker(deployment.server)
    run = deployment.stack.wait_run(run_id, timeout=120)
    took = time.monotonic() - lost_at
    print(f"\nFIGURES lost inside a transaction: run finished {took:.1f} s after the loss")
    assert (
        run["status"] == "succeeded"
        and "@server:"
        in (deployment.query("SELECT worker FROM runs WHERE id = %s", uuid.UUID(run_id))[0][0])
    )
