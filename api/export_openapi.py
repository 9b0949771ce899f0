"""Print the OpenAPI document: ``python -m api.export_openapi > openapi/openapi.json``."""

from __future__ import annotations

import sys

import orjson

from api.main import create_app
from settings import Settings


def document() -> bytes:
    app = create_app(Settings())
    return orjson.dumps(app.openapi(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


if __name__ == "__main__":
    sys.stdout.buffer.write(document())
