"""``make run`` (``python -m api.serve``) leaves no process behind: not on SIGTERM or
Ctrl-C, and not when whatever started it dies without telling it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from servicekit import ROOT, free_port

pytestmark = pytest.mark.e2e


def _processes_of(marker: str) -> list[int]:
    """Pids whose environment carries `marker`: everything serve started, at any depth."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def _start(tmp_path: Path, *, via_shell: bool) -> tuple[subprocess.Popen, str, str]:
    port = free_port()
    marker = f"TCPFR_SHUTDOWN_TEST={tmp_path.name}"
    env = {
        **os.environ,
        "TCPFR_DATA_DIR": str(tmp_path / "data"),
        "PORT": str(port),
        "TCPFR_WORKER_CONCURRENCY": "2",
        "TCPFR_RECONCILE_INTERVAL": "0",
        marker.split("=")[0]: marker.split("=")[1],
    }
    env.pop("DATABASE_URL", None)
    env.pop("BROKER_URL", None)
    argv = [sys.executable, "-m", "api.serve"]
    if via_shell:  # as make does: a parent that can vanish
        argv = ["sh", "-c", " ".join(argv) + "; true"]
    proc = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail("the service did not come up")
    # The Celery pool (2 processes) under its parent, and uvicorn: at least 4 besides us.
    deadline = time.monotonic() + 30
    while len(_processes_of(marker)) < 4 and time.monotonic() < deadline:
        time.sleep(0.3)
    return proc, marker, base


def _wait_gone(marker: str, timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = _processes_of(marker)
        if not left:
            return []
        time.sleep(0.3)
    left = _processes_of(marker)
    for pid in left:  # leave the machine clean even when the test fails
        os.kill(pid, signal.SIGKILL)
    return left


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_api_and_every_worker_process(tmp_path: Path, signum: int) -> None:
    proc, marker, _ = _start(tmp_path, via_shell=False)
    assert len(_processes_of(marker)) >= 4
    proc.send_signal(signum)
    proc.wait(timeout=40)
    assert _wait_gone(marker, 5) == []


def test_serve_does_not_outlive_its_parent(tmp_path: Path) -> None:
    shell, marker, _ = _start(tmp_path, via_shell=True)
    shell.kill()  # SIGKILL: the shell cannot pass anything on
    shell.wait()
    assert _wait_gone(marker, 40) == []


def test_stalled_connections_do_not_hold_the_api_up(tmp_path: Path) -> None:
    """Clients that open a connection and stop mid-request (or keep one idle) cannot keep
    the API from stopping: uvicorn waits --timeout-graceful-shutdown for them, then exits."""
    import socket

    from api.serve import GRACEFUL_SHUTDOWN_SECONDS, api_command
    from settings import Settings

    port = free_port()
    env = {**os.environ, "TCPFR_DATA_DIR": str(tmp_path / "data"), "TCPFR_RECONCILE_INTERVAL": "0"}
    env.pop("DATABASE_URL", None)
    env.pop("BROKER_URL", None)
    settings = Settings(_env_file=None, data_dir=tmp_path / "data", port=port)
    subprocess.run(
        [sys.executable, "-m", "alembic", "upgrade", "head"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    proc = subprocess.Popen(
        api_command(settings),
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sockets: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.2)
        for i in range(50):
            s = socket.create_connection(("127.0.0.1", port))
            # Half a request: a request line and no end of headers, or a body promised.
            s.sendall(
                b"GET /v1/runs HTTP/1.1\r\nHost: x\r\n"
                if i % 2
                else b"POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"
            )
            sockets.append(s)
        time.sleep(1)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=GRACEFUL_SHUTDOWN_SECONDS + 20)
        assert time.monotonic() - t0 <= GRACEFUL_SHUTDOWN_SECONDS + 15
    finally:
        for s in sockets:
            s.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
