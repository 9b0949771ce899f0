"""``make run`` as root: Celery's SecurityWarning (the worker runs as root) is not printed;
our one line says so instead, and the worker still runs simulations."""

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

from api import serve

pytestmark = pytest.mark.e2e


def test_as_root_the_worker_is_told_to_skip_that_one_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    env = serve.worker_env({"PATH": "/bin", "PYTHONWARNINGS": "error::DeprecationWarning"})
    assert env is not None
    assert env["PYTHONWARNINGS"] == f"error::DeprecationWarning,{serve.ROOT_WARNING}"
    assert env["PATH"] == "/bin"
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert serve.worker_env({"PATH": "/bin"}) is None  # not root: the environment as it is


@pytest.mark.skipif(os.geteuid() != 0, reason="runs as root only")
def test_make_run_as_root_prints_no_celery_security_warning(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "serve.log"
    env = {
        **os.environ,
        "TCPFR_DATA_DIR": str(tmp_path / "data"),
        "PORT": str(port),
        "TCPFR_WORKER_CONCURRENCY": "1",
        "TCPFR_API_PROCESSES": "1",
        "TCPFR_RECONCILE_INTERVAL": "0",
    }
    env.pop("DATABASE_URL", None)
    env.pop("BROKER_URL", None)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "api.serve"], cwd=ROOT, env=env, stdout=out, stderr=out
        )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        run = None
        while time.monotonic() < deadline:
            try:
                if run is None:
                    run = httpx.post(
                        f"{base}/v1/runs",
                        json={"preset": "riverbed-t1-64k", "cache": "refresh"},
                        timeout=5,
                    ).json()
                run = httpx.get(f"{base}/v1/runs/{run['id']}", timeout=5).json()
                if run["status"] not in ("queued", "running"):
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        assert run is not None and run["status"] == "succeeded", (run, log.read_text())
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    text = log.read_text()
    assert "celery.apps.worker" in text and " ready." in text  # the worker started and said so
    assert "SecurityWarning" not in text and "superuser" not in text, text
    assert "running as root: the worker runs as root too" in text
