"""One version: the package's (pyproject.toml) is the API's, in /openapi.json and /healthz,
with the engine's beside it."""

from __future__ import annotations

import tomllib

import pytest
from fastapi.testclient import TestClient
from servicekit import ROOT

from engine import ENGINE_VERSION

pytestmark = pytest.mark.integration

PACKAGE_VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


@pytest.fixture(scope="module")
def client() -> TestClient:
    from api.main import create_app
    from settings import Settings

    return TestClient(create_app(Settings(_env_file=None)))


def test_openapi_says_the_package_version_and_the_engine_version(client: TestClient) -> None:
    info = client.get("/openapi.json").json()["info"]
    assert info["version"] == PACKAGE_VERSION
    assert info["x-engine-version"] == ENGINE_VERSION


def test_healthz_says_both_versions(client: TestClient) -> None:
    assert client.get("/healthz").json() == {
        "status": "ok",
        "version": PACKAGE_VERSION,
        "engine_version": ENGINE_VERSION,
    }
