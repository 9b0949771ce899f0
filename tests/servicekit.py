"""Fixtures that start the real thing: the API under its server (api.serve.api_command, one
process: the per-process bounds under test then hold for the whole API) on a free port and real Celery
worker processes, against real Postgres and Redis (``pg_stack``) or in the embedded default,
exactly as ``make run`` starts it (``embedded_stack``).

Postgres and Redis are found at ``TCPFR_TEST_PG_URL`` (default: the local server as user
postgres) and ``TCPFR_TEST_REDIS_URL`` (default: local Redis, database 14). Each test session
gets a fresh database ``tcpfr_test_<random>``, dropped at the end, and a queue of its own.
When they are unreachable the tests are skipped, or fail under ``CI=true``.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PG_URL = os.environ.get("TCPFR_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("TCPFR_TEST_REDIS_URL", "redis://127.0.0.1:6379/14")
TERMINAL = {"succeeded", "failed", "cancelled"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def unavailable(what: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} unreachable (CI=true: a missing service is a failure)")
    pytest.skip(f"{what} unreachable")


def _pg_admin():  # type: ignore[no-untyped-def]
    import psycopg

    return psycopg.connect(PG_URL, autocommit=True, connect_timeout=3)


def _with_db(url: str, name: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{name}"


@dataclass
class Stack:
    """A running API and its workers; ``client`` talks to the API."""

    base_url: str
    env: dict[str, str]
    tmp: Path
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=30)

    def logs(self, lines: int = 60) -> str:
        out = []
        for name in self.procs:
            path = self.tmp / f"{name}.log"
            if path.exists():
                tail = path.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {name} ---\n" + "\n".join(tail))
        return "\n".join(out)

    def start(
        self, name: str, argv: list[str], *, cwd: Path = ROOT, env: dict[str, str] | None = None
    ) -> None:
        log = open(self.tmp / f"{name}.log", "wb")  # noqa: SIM115 - lives as long as the process
        self.procs[name] = subprocess.Popen(
            argv,
            cwd=cwd,
            env=self.env if env is None else env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode}\n{self.logs()}")
            try:
                last = httpx.get(self.base_url + "/readyz", timeout=2)
                if last.status_code == 200:
                    return
            except httpx.HTTPError as exc:
                last = exc
            time.sleep(0.2)
        raise RuntimeError(f"API not ready after {timeout}s: {last}\n{self.logs()}")

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def wait_run(
        self, run_id: str, timeout: float = 120, until: set[str] = TERMINAL
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self.client as client:
            while True:
                run = client.get(f"/v1/runs/{run_id}").json()
                if run["status"] in until:
                    return run
                if time.monotonic() > deadline:
                    raise AssertionError(f"run {run_id} still {run['status']}\n{self.logs()}")
                time.sleep(0.1)


def _base_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCPFR_")}
    for key in ("DATABASE_URL", "BROKER_URL", "PORT", "HOST"):
        env.pop(key, None)
    env.update(
        TCPFR_DATA_DIR=str(tmp / "data"),
        TCPFR_HEARTBEAT_INTERVAL="0.5",
        TCPFR_RUN_LEASE="5",
        TCPFR_RECONCILE_INTERVAL="1",
        TCPFR_LOG_LEVEL="INFO",
        PYTHONUNBUFFERED="1",
    )
    return env


@pytest.fixture(scope="module")
def pg_database() -> Iterator[str]:
    """A fresh Postgres database, migrated to head, and nothing running on it: its URL, for
    tests that drive the store and the worker's code in process."""
    try:
        admin = _pg_admin()
    except Exception as exc:
        unavailable(f"Postgres at {PG_URL} ({type(exc).__name__})")
    name = f"tcpfr_test_{secrets.token_hex(4)}"
    admin.execute(f'CREATE DATABASE "{name}"')
    url = _with_db(PG_URL, name)
    try:
        env = {**_base_env(Path(tempfile.gettempdir())), "DATABASE_URL": url}
        subprocess.run(
            [sys.executable, "-m", "alembic", "upgrade", "head"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )
        yield url
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


@pytest.fixture(scope="session")
def pg_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """API + 2 worker processes on a fresh Postgres database and Redis."""
    try:
        admin = _pg_admin()
    except Exception as exc:
        unavailable(f"Postgres at {PG_URL} ({type(exc).__name__})")
    try:
        import redis

        redis_client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
        redis_client.ping()
    except Exception as exc:
        admin.close()
        unavailable(f"Redis at {REDIS_URL} ({type(exc).__name__})")

    name = f"tcpfr_test_{secrets.token_hex(4)}"
    admin.execute(f'CREATE DATABASE "{name}"')
    tmp = tmp_path_factory.mktemp("pg_stack")
    port = free_port()
    queue = f"tcpfr-test-{secrets.token_hex(4)}"
    env = _base_env(tmp)
    env.update(
        DATABASE_URL=_with_db(PG_URL, name),
        BROKER_URL=REDIS_URL,
        TCPFR_QUEUE=queue,
        PORT=str(port),
    )
    stack = Stack(base_url=f"http://127.0.0.1:{port}", env=env, tmp=tmp)
    try:
        subprocess.run(
            [sys.executable, "-m", "alembic", "upgrade", "head"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )
        from api.serve import api_command, worker_command
        from settings import Settings

        settings = Settings(
            _env_file=None,
            **{
                "database_url": env["DATABASE_URL"],
                "broker_url": REDIS_URL,
                "queue": queue,
                "port": port,
                "api_processes": 1,
            },
        )
        stack.start("worker", worker_command(settings, concurrency=2))
        stack.start("api", api_command(settings))
        stack.wait_ready()
        yield stack
    finally:
        stack.stop()
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
        redis_client.delete(queue, f"{queue}\x06\x163", f"{queue}\x06\x166", f"{queue}\x06\x169")
        redis_client.close()


@contextmanager
def api_beside(base: Stack, name: str, **settings: str) -> Iterator[Stack]:
    """A second API process on ``base``'s database, broker and workers with these settings
    (``TCPFR_AUTH``, limits, a queue of its own...), as a deployment with several API
    replicas has."""
    port = free_port()
    tmp = base.tmp / name
    tmp.mkdir(exist_ok=True)
    env = {**base.env, "PORT": str(port), **settings}
    stack = Stack(base_url=f"http://127.0.0.1:{port}", env=env, tmp=tmp)
    from api.serve import api_command
    from settings import Settings

    config = Settings(_env_file=None, database_url=env["DATABASE_URL"], port=port, api_processes=1)
    try:
        stack.start("api", api_command(config))
        stack.wait_ready()
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="session")
def pg_auth_stack(pg_stack: Stack) -> Iterator[Stack]:
    """A second API process with authentication on (``TCPFR_AUTH=true``) on ``pg_stack``'s
    database, broker and workers. Keys come from ``python -m api.keys`` run with
    ``stack.env``."""
    with api_beside(pg_stack, "auth", TCPFR_AUTH="true") as stack:
        yield stack


@contextmanager
def serve_embedded(tmp: Path, **settings: str) -> Iterator[Stack]:
    """``python -m api.serve`` (what ``make run`` runs) with no DATABASE_URL or BROKER_URL:
    SQLite and the file-system broker under ``tmp``, on a free port, with these settings
    (``TCPFR_WORKER_CONCURRENCY``...); ready when it is yielded (bench/advice_bench.py too)."""
    port = free_port()
    env = _base_env(tmp)
    env.update(PORT=str(port), **settings)
    stack = Stack(base_url=f"http://127.0.0.1:{port}", env=env, tmp=tmp)
    try:
        stack.start("serve", [sys.executable, "-m", "api.serve"])
        stack.wait_ready()
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="session")
def embedded_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The embedded service (`serve_embedded`) under a temporary TCPFR_DATA_DIR, 2 worker
    processes."""
    with serve_embedded(tmp_path_factory.mktemp("embedded"), TCPFR_WORKER_CONCURRENCY="2") as stack:
        yield stack
