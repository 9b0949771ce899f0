"""The deployment files: the compose file is valid, and the Dockerfile installs the
project the way the README says."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from servicekit import ROOT

INSTALL = "python3.11 -m venv .venv && .venv/bin/pip install -e ."


def test_compose_file_is_valid() -> None:
    if shutil.which("docker-compose") is None:
        pytest.skip("docker-compose is not installed (apt-get install docker-compose)")
    done = subprocess.run(
        ["docker-compose", "config", "-q"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_compose_has_the_services_and_health_checks() -> None:
    import yaml

    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert {"api", "worker", "postgres", "redis"} <= set(services)
    for name in ("api", "worker", "postgres", "redis"):
        assert "healthcheck" in services[name], name
    assert "container_name" not in services["worker"]  # or --scale worker=N could not work
    assert "ports" not in services["worker"]


def test_dockerfile_installs_as_the_readme_says() -> None:
    assert INSTALL in (ROOT / "Dockerfile").read_text()
    assert INSTALL in (ROOT / "README.md").read_text()


def test_the_image_ships_the_compiled_engine_built_in_a_stage_of_its_own() -> None:
    # The build stage has the C compiler and fails without a build (--strict); the image
    # takes only engine/_native/, whose manifest matches the same sources copied beside it.
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "AS engine-build" in dockerfile
    assert "scripts/compile_engine.py --strict" in dockerfile
    assert (
        "COPY --from=engine-build --chown=tcpfr /app/engine/_native ./engine/_native" in dockerfile
    )
    assert "engine/_native" in (ROOT / ".dockerignore").read_text()  # never the host's build


def _compose_config(*files: str, **env: str) -> subprocess.CompletedProcess[str]:
    if shutil.which("docker-compose") is None:
        pytest.skip("docker-compose is not installed (apt-get install docker-compose)")
    argv = ["docker-compose", *(f for name in files for f in ("-f", name)), "config"]
    environ = {k: v for k, v in os.environ.items() if k not in env and "PASSWORD" not in k}
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env={**environ, **env})


def test_the_files_for_several_machines_are_valid_and_ask_for_what_they_need() -> None:
    """docs/deploy.md: the server machine publishes Postgres and Redis on its LAN address,
    Redis behind a password every service uses; a worker machine knows only their URLs."""
    server = _compose_config(
        "docker-compose.yml",
        "deploy/server.yml",
        LAN_ADDRESS="10.9.8.7",
        POSTGRES_PASSWORD="pg-secret",
        REDIS_PASSWORD="redis-secret",
    )
    assert server.returncode == 0, server.stderr
    import yaml

    services = yaml.safe_load(server.stdout)["services"]
    for name in ("api", "worker", "migrate"):
        env = services[name]["environment"]
        assert env["BROKER_URL"] == "redis://:redis-secret@redis:6379/0", name
        assert "pg-secret@postgres:5432" in env["DATABASE_URL"], name
    assert "redis-secret" in services["redis"]["command"]
    published = [str(p) for s in ("postgres", "redis") for p in services[s]["ports"]]
    assert all("10.9.8.7" in p for p in published), published
    # Without the address or the password, compose refuses rather than guessing.
    assert _compose_config("docker-compose.yml", "deploy/server.yml").returncode != 0

    worker = _compose_config(
        "deploy/worker.yml",
        DATABASE_URL="postgresql+psycopg://tcpfr:pg-secret@10.9.8.7:5432/tcpfr",
        BROKER_URL="redis://:redis-secret@10.9.8.7:6379/0",
    )
    assert worker.returncode == 0, worker.stderr
    services = yaml.safe_load(worker.stdout)["services"]
    assert set(services) == {"worker"} and "ports" not in services["worker"]
    assert "10.9.8.7" in services["worker"]["environment"]["BROKER_URL"]
