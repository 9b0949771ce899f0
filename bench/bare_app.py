"""The yardstick of ``bench/api_load.py``: a bare FastAPI app answering constants of the same
shape as tcpfr's answers, rendered by orjson on every request. No database, no validation:
the fastest a FastAPI endpoint can be on this machine, so tcpfr's figures read as a ratio.

``BARE_BODIES`` names a JSON file ``{"summary": ..., "series": ..., "list": ...}`` captured
from the real API; each becomes ``GET /bare/<name>``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
from fastapi import FastAPI
from fastapi.responses import JSONResponse


class OrjsonResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


bodies: dict[str, Any] = orjson.loads(Path(os.environ["BARE_BODIES"]).read_bytes())
app = FastAPI()


def _route(name: str) -> None:
    body = bodies[name]

    async def endpoint() -> OrjsonResponse:
        return OrjsonResponse(body)

    app.add_api_route(f"/bare/{name}", endpoint, methods=["GET"], name=f"bare_{name}")


for _name in bodies:
    _route(_name)
