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
