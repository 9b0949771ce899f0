"""openapi/openapi.json is what the app serves: regenerate it with `make openapi`."""

from pathlib import Path

from api.export_openapi import document

ROOT = Path(__file__).resolve().parents[2]


def test_openapi_document_is_fresh() -> None:
    stored = (ROOT / "openapi" / "openapi.json").read_bytes()
    assert stored == document(), "openapi/openapi.json is stale: run `make openapi`"
