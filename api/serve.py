"""``make run``: migrate, then serve the API and run worker processes until Ctrl-C.

Embedded by default (SQLite and a file-system broker under ``TCPFR_DATA_DIR``); the same
command runs against Postgres and Redis when ``DATABASE_URL`` and ``BROKER_URL`` say so.

What runs, each once: the migrations (here, before anything starts), the Celery worker, the
reconciler (a process of its own: the API's processes do not reconcile), and the API
server: granian, whose Rust side (hyper, tokio) accepts and reads every connection and
hands whole requests to ``TCPFR_API_PROCESSES`` Python processes, each with its own socket
on the port (SO_REUSEPORT: the kernel spreads connections evenly). uvicorn's accept path
took one connection per turn of its busy loop, so under load new connections waited
seconds while old ones were served; granian accepts as connections come, and bounds their
number, how long their headers may take, and how long they may idle (bench/api_load.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import resource
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import FrameType

from alembic import command
from alembic.config import Config

from settings import Settings, get_settings

log = logging.getLogger("tcpfr.serve")
ROOT = Path(__file__).resolve().parent.parent
GRACEFUL_SHUTDOWN_SECONDS = 10
#: File descriptors an API process keeps for what is not a client connection: database and
#: broker connections, files, pipes, the runtime's own.
FD_RESERVE = 1024


def alembic_config() -> Config:
    ini = ROOT / "alembic.ini"
    if not ini.exists():  # installed without the source tree: look where we are
        ini = Path.cwd() / "alembic.ini"
    config = Config(str(ini))
    config.attributes["configure_logger"] = False
    return config


def migrate() -> None:
    command.upgrade(alembic_config(), "head")


def worker_command(settings: Settings, concurrency: int | None = None) -> list[str]:
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "worker.celery_app",
        "--quiet",  # no banner: the one line a user needs is where the API is (main)
        "worker",
        "--loglevel",
        settings.log_level,
        "--concurrency",
        str(concurrency or settings.worker_concurrency),
        "--queues",
        settings.queue,
        "--hostname",
        "tcpfr@%h",
        # No worker-to-worker chatter: the database is the only shared state we use.
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]


def api_command(settings: Settings) -> list[str]:
    """The API server: granian, HTTP/1.1 only (its auto-detection of HTTP/2 waits for a
    first byte with no timeout), ASGI on uvloop."""
    return [
        sys.executable,
        "-m",
        "granian",
        "--interface",
        "asgi",
        "--http",
        "1",
        "--loop",
        "uvloop",
        "--host",
        settings.host,
        "--port",
        str(settings.port),
        "--workers",
        str(settings.api_processes),
        # A worker that dies is started again; the others serve meanwhile.
        "--respawn-failed-workers",
        "--backlog",
        str(settings.listen_backlog),
        # Connections a process holds at once (granian takes a permit before accepting).
        "--backpressure",
        str(connection_bound(settings)),
        "--http1-header-read-timeout",
        str(round(settings.header_timeout * 1000)),
        "--log-level",
        settings.log_level.lower(),
        "--no-access-log",
        # Stopping is bounded: connections still open (stalled clients, streams) get this
        # long to finish, then the process exits anyway.
        "--workers-kill-timeout",
        str(GRACEFUL_SHUTDOWN_SECONDS),
        "api.main:app",
    ]


def connection_bound(settings: Settings) -> int:
    """`max_connections`, within the file descriptors a process may open: past the bound a
    connection waits in the listen backlog, where it costs no descriptor."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return settings.max_connections
    return max(16, min(settings.max_connections, soft - FD_RESERVE))


def raise_fd_limit() -> None:
    """The soft limit on open files up to the hard one, for this process and its children:
    a default of 1024 would bound the connections an API process can hold far below what
    its memory allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def reconciler_command() -> list[str]:
    return [sys.executable, "-m", "api.reconciler"]


# Celery's worker checks who it runs as: as root, accepting pickle, it refuses (a message
# could run code as root); as root accepting only JSON, as ours does (messaging), it warns
# and suggests `--uid`. That cannot be followed here in general: the interpreter is often
# root's own (pyenv under /root, unreadable to any other account), and the API and the
# worker share the embedded SQLite database, whose WAL files one user's process makes and
# the other's must write. So `make run` as root says so once, in its own words, and the
# worker is told, through Python's warnings filter, not to repeat that one warning (its
# refusal for pickle is an exception, untouched). The image (Dockerfile) runs as `tcpfr`.
# By its words, any category: a -W category outside the standard library cannot be named
# (the interpreter reads the option before it can import celery).
ROOT_WARNING = "ignore:You're running the worker with superuser privileges"


def worker_env(environ: Mapping[str, str]) -> dict[str, str] | None:
    """The worker's environment when we run as root (None: ours, unchanged)."""
    if os.geteuid() != 0:
        return None
    log.warning(
        "running as root: the worker runs as root too, accepting JSON messages only "
        "(never pickle); run `make run` as an ordinary user to avoid it"
    )
    filters = [f for f in (environ.get("PYTHONWARNINGS"), ROOT_WARNING) if f]
    return {**environ, "PYTHONWARNINGS": ",".join(filters)}


def _clear_processed(settings: Settings) -> None:
    if settings.broker_url is None:
        for f in (settings.broker_folder / "processed").glob("*.msg"):
            f.unlink(missing_ok=True)


def main() -> int:
    settings = get_settings()
    logging.basicConfig(
        level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    settings.ensure_dirs()
    _clear_processed(settings)
    log.info("database %s", settings.sqlalchemy_url)
    log.info("broker %s", settings.broker_url or f"filesystem ({settings.broker_folder})")
    migrate()
    raise_fd_limit()

    # Each child leads its own process group, so stopping one stops what it started too
    # (the Celery pool processes, granian's workers), whoever signalled us and however.
    procs = {
        "worker": subprocess.Popen(
            worker_command(settings), env=worker_env(os.environ), start_new_session=True
        )
    }
    if settings.reconcile_interval > 0:
        procs["reconciler"] = subprocess.Popen(reconciler_command(), start_new_session=True)
    # The reconciler runs once, above, not in each API process.
    api_env = {**os.environ, "TCPFR_RECONCILE_INTERVAL": "0"}
    procs["api"] = subprocess.Popen(api_command(settings), env=api_env, start_new_session=True)
    stopping = False
    announced = False
    started = time.monotonic()

    def stop(signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    parent = os.getppid()
    code = 0
    while not stopping:
        if not announced and (_answers(settings) or time.monotonic() - started > 60):
            # Last, after the start-up noise of the API and the workers: where the API is.
            announced = True
            _announce(settings)
        for name, proc in procs.items():
            if proc.poll() is not None:
                log.error("%s exited with %s; stopping", name, proc.returncode)
                stopping, code = True, 1
        if os.getppid() != parent:
            # Whoever started us (make, a shell, a supervisor) is gone without a signal
            # to us: do not live on as an orphan holding the port and the queue.
            log.warning("parent process exited; stopping")
            stopping = True
        time.sleep(0.2)
    log.info("stopping the API and the workers")
    stop_all(procs.values())
    return code


def _answers(settings: Settings) -> bool:
    url = f"http://{settings.host}:{settings.port}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=1) as resp:  # noqa: S310 - our own address
            return bool(resp.status == 200)
    except OSError:
        return False


def _announce(settings: Settings) -> None:
    base = f"http://{settings.host}:{settings.port}"
    line = (
        f"tcpfr API: {base}  (docs {base}/docs; {settings.api_processes} API and "
        f"{settings.worker_concurrency} worker processes; Ctrl-C stops all)"
    )
    print(f"\n{line}\n", file=sys.stderr, flush=True)


def stop_all(procs: Iterable[subprocess.Popen], grace: float = 15.0) -> None:
    """SIGTERM each child (a Celery worker's warm shutdown lets its pool finish and
    leave), then SIGKILL each child's whole process group, whatever is left of it after
    `grace` seconds. An unfinished run is acknowledged late, so it is delivered again."""
    procs = list(procs)
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    deadline = time.monotonic() + grace
    for proc in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    for proc in procs:
        # The group may outlive its leader (a pool child): kill it whatever the leader did.
        _signal_group(proc, signal.SIGKILL)
        proc.wait()


def _signal_group(proc: subprocess.Popen, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signum)


def serve_api_only() -> None:
    """``python -m api.serve --api-only``: the API server alone, as a container runs it
    (migrations and workers are the deployment's other services; each API process runs
    the reconciler's loop, and on PostgreSQL one of all of them reconciles: api.reconciler's
    Leadership)."""
    raise_fd_limit()
    argv = api_command(get_settings())
    os.execv(argv[0], argv)


if __name__ == "__main__":
    if sys.argv[1:] == ["--api-only"]:
        serve_api_only()
    sys.exit(main())
