"""Private Postgres and Redis servers for tests that stop and restart them, and stacks wired
to them. The shared servers on the default ports are never touched: other tests use them.

Each server runs from a temporary directory on a free port and is removed at the end.
``initdb`` refuses to run as root, so as root the cluster belongs to the ``postgres`` user.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from servicekit import ROOT, Stack, _base_env, free_port, unavailable


def _pg_bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


def in_netns(netns: str | None, argv: list[str]) -> list[str]:
    """`argv` run inside the network namespace `netns` (None: where we are)."""
    return argv if netns is None else ["ip", "netns", "exec", netns, *argv]


@dataclass
class PrivatePostgres:
    """A throwaway cluster: ``start``, ``stop`` (fast shutdown: clients are cut off, as in a
    restart or failover) and ``start`` again, on the same port and data. It listens on
    `host` only, inside the network namespace `netns` when one is given."""

    root: Path
    port: int = field(default_factory=free_port)
    host: str = "127.0.0.1"
    netns: str | None = None
    # Off the loopback interface: clients from `clients` (a CIDR) with this password, as a
    # deployment's pg_hba.conf would let the worker machines in.
    password: str | None = None
    clients: str | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}" if self.password else ""
        return f"postgresql://postgres{auth}@{self.host}:{self.port}/postgres"

    def _run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        user = "postgres" if os.geteuid() == 0 else None
        if self.netns is not None:
            # Entering a namespace needs root: enter it first, then become postgres.
            as_user = ["runuser", "-u", user, "--"] if user else []
            argv, user = tuple(in_netns(self.netns, [*as_user, *argv])), None
        return subprocess.run(argv, user=user, capture_output=True, check=check, timeout=60)

    def init(self) -> None:
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
        secret = []
        if self.password:
            (self.root / "pwfile").write_text(self.password + "\n")
            if os.geteuid() == 0:
                os.chown(self.root / "pwfile", pw.pw_uid, pw.pw_gid)
            secret = [f"--pwfile={self.root / 'pwfile'}"]
        self._run(
            _pg_bin("initdb") or "initdb",
            "-D",
            str(self.root / "data"),
            "-U",
            "postgres",
            "--auth=trust",
            *secret,
            "--no-sync",
            "-E",
            "UTF8",
        )
        if self.clients:
            with open(self.root / "data" / "pg_hba.conf", "a") as hba:
                hba.write(f"host all all {self.clients} scram-sha-256\n")

    def start(self) -> None:
        opts = (
            f"-p {self.port} -k {self.root} -c listen_addresses={self.host} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        self._run(
            _pg_bin("pg_ctl") or "pg_ctl",
            "-D",
            str(self.root / "data"),
            "-o",
            opts,
            "-l",
            str(self.root / "server.log"),
            "-w",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        self._run(
            _pg_bin("pg_ctl") or "pg_ctl",
            "-D",
            str(self.root / "data"),
            "-m",
            mode,
            "-w",
            "stop",
            check=False,
        )


@dataclass
class PrivateRedis:
    """A Redis that keeps nothing on disk, so a restart is also a flush: every message it
    held (queued, or handed out and not acknowledged) is gone."""

    root: Path
    port: int = field(default_factory=free_port)
    host: str = "127.0.0.1"
    netns: str | None = None
    # Off the loopback interface Redis refuses clients without a password (protected mode),
    # as a deployment's would: one is set there.
    password: str | None = None
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}{self.host}:{self.port}/0"

    def start(self) -> None:
        log = open(self.root / "redis.log", "ab")  # noqa: SIM115 - lives as long as the process
        argv = [
            shutil.which("redis-server") or "redis-server",
            "--port",
            str(self.port),
            "--bind",
            self.host,
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.root),
            *(["--requirepass", self.password] if self.password else []),
        ]
        self.proc = subprocess.Popen(
            in_netns(self.netns, argv),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        import redis

        client = redis.Redis.from_url(self.url, socket_connect_timeout=1)
        for _ in range(100):
            try:
                client.ping()
                return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError(f"private redis on {self.port} did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)  # a crash: nothing flushed, nothing saved
            self.proc.wait()
        self.proc = None


@contextmanager
def private_services(
    host: str = "127.0.0.1", netns: str | None = None, clients: str | None = None
) -> Iterator[tuple[PrivatePostgres, PrivateRedis]]:
    """Start both, listening on `host` (in the network namespace `netns`, if given) for
    `clients` (a CIDR; both then ask for a password); skipped when the binaries are not
    installed (a failure under CI=true)."""
    if not (_pg_bin("initdb") and _pg_bin("pg_ctl")):
        unavailable("initdb/pg_ctl binaries (for a private Postgres)")
    if not shutil.which("redis-server"):
        unavailable("redis-server binary (for a private Redis)")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            unavailable("a 'postgres' user to run a private cluster as (running as root)")
    # Not under pytest's tmp_path: its parent is private to root, and the cluster's owner
    # must reach its data directory.
    root = Path(tempfile.mkdtemp(prefix="tcpfr-private-"))
    os.chmod(root, 0o755)
    password = secrets.token_hex(8) if clients else None
    pg = PrivatePostgres(root / "pg", host=host, netns=netns, password=password, clients=clients)
    pg.root.mkdir()
    rd = PrivateRedis(root / "redis", host=host, netns=netns, password=password)
    rd.root.mkdir()
    try:
        pg.init()
        pg.start()
        rd.start()
        yield pg, rd
    finally:
        rd.stop()
        pg.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)


def worker_argv(env: dict[str, str], node: str, concurrency: int = 1) -> list[str]:
    """One ``celery worker`` process with its own node name (so a run's worker says which)."""
    from api.serve import worker_command
    from settings import Settings

    settings = Settings(_env_file=None, queue=env["TCPFR_QUEUE"], log_level="INFO")
    argv = worker_command(settings, concurrency=concurrency)
    argv[argv.index("--hostname") + 1] = f"{node}@%h"
    return argv


def private_stack(
    tmp: Path,
    pg: PrivatePostgres,
    rd: PrivateRedis,
    *,
    workers: dict[str, int],
    settings: dict[str, str],
) -> Stack:
    """A fresh database on the private cluster, migrated; the API and the named workers
    (node name: concurrency) started and ready. The caller stops it."""
    import psycopg

    name = f"tcpfr_rel_{secrets.token_hex(4)}"
    with psycopg.connect(pg.url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    port = free_port()
    env = _base_env(tmp)
    env.update(
        DATABASE_URL=pg.url.rpartition("/")[0] + f"/{name}",
        BROKER_URL=rd.url,
        TCPFR_QUEUE=f"tcpfr-rel-{secrets.token_hex(4)}",
        PORT=str(port),
        **settings,
    )
    subprocess.run(
        [sys.executable, "-m", "alembic", "upgrade", "head"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    from api.serve import api_command
    from settings import Settings

    stack = Stack(base_url=f"http://127.0.0.1:{port}", env=env, tmp=tmp)
    for node, concurrency in workers.items():
        stack.start(node, worker_argv(env, node, concurrency))
    stack.start("api", api_command(Settings(_env_file=None, port=port)))
    try:
        stack.wait_ready()
    except BaseException:
        stack.stop()
        raise
    return stack
