"""The deployment files: the compose file is valid, and the Dockerfile installs the
project the way the README says."""

from __future__ import annotations

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
