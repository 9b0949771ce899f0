"""The client's models (client/models.py) against openapi/openapi.json: the same fields,
the same required ones, the same types; and every operation the client calls exists.
When this fails the server changed a document the client reads: update client/models.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from client.api import ENDPOINTS
from client.models import MODELS

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DOC = json.loads((ROOT / "openapi" / "openapi.json").read_text())
SCHEMAS = DOC["components"]["schemas"]


def shape(schema: dict[str, Any], defs: dict[str, Any], seen: frozenset[str] = frozenset()) -> Any:
    """A schema reduced to what a reader depends on: types, formats, enums, nesting;
    names of referenced schemas are followed, descriptions and titles dropped."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name in seen:
            return ("ref", name)
        return shape(defs[name], defs, seen | {name})
    if "anyOf" in schema or "oneOf" in schema:
        options = [shape(s, defs, seen) for s in schema.get("anyOf", schema.get("oneOf"))]
        return ("any", tuple(sorted(map(repr, options))))
    if "enum" in schema:
        return ("enum", tuple(sorted(map(str, schema["enum"]))))
    kind = schema.get("type")
    if kind == "array":
        return ("array", shape(schema.get("items", {}), defs, seen))
    if kind == "object" or "properties" in schema:
        props = schema.get("properties")
        if props is None:
            extra = schema.get("additionalProperties", True)
            return ("map", shape(extra, defs, seen) if isinstance(extra, dict) else None)
        return (
            "object",
            tuple(sorted((k, repr(shape(v, defs, seen))) for k, v in props.items())),
            tuple(sorted(schema.get("required", []))),
        )
    return (kind, schema.get("format"))


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.OPENAPI)
def test_client_model_matches_openapi(model: Any) -> None:
    assert model.OPENAPI in SCHEMAS, f"{model.OPENAPI} is gone from openapi/openapi.json"
    server = SCHEMAS[model.OPENAPI]
    ours = model.model_json_schema(ref_template="#/$defs/{model}", mode="serialization")
    our_defs = ours.get("$defs", {})
    assert set(ours["properties"]) == set(server["properties"]), (
        f"{model.OPENAPI}: fields differ: only the client has "
        f"{sorted(set(ours['properties']) - set(server['properties']))}, only the server has "
        f"{sorted(set(server['properties']) - set(ours['properties']))}"
    )
    assert set(ours.get("required", [])) == set(server.get("required", [])), model.OPENAPI
    for name, prop in server["properties"].items():
        assert shape(ours["properties"][name], our_defs) == shape(prop, SCHEMAS), (
            f"{model.OPENAPI}.{name}: the client's type differs from the server's"
        )


@pytest.mark.parametrize(("method", "path"), ENDPOINTS, ids=lambda x: str(x))
def test_client_endpoints_exist(method: str, path: str) -> None:
    assert method in DOC["paths"].get(path, {}), f"{method.upper()} {path} is not in the API"


def test_drift_is_caught() -> None:
    """The comparison sees a renamed field and a changed type (a guard on the guard)."""
    server = json.loads(json.dumps(SCHEMAS["SeriesData"]))
    server["properties"]["v"] = {"type": "array", "items": {"type": "string"}}
    from client.models import SeriesData

    ours = SeriesData.model_json_schema(mode="serialization")
    assert shape(ours["properties"]["v"], {}) != shape(server["properties"]["v"], SCHEMAS)
