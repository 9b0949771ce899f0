"""Response classes: orjson for JSON (numpy arrays go straight to bytes) and problem+json."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

# UTC as 'Z', as Pydantic writes it: a document reads the same whoever rendered it.
_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS | orjson.OPT_UTC_Z


def render_json(content: Any) -> bytes:
    """What `OrjsonResponse` sends for `content`, for a body rendered ahead (off the loop)."""
    return orjson.dumps(content, option=_OPTIONS)


class OrjsonResponse(JSONResponse):
    """JSON rendered by orjson; used where we build the payload ourselves (series, errors)."""

    def render(self, content: Any) -> bytes:
        return render_json(content)


class ProblemResponse(OrjsonResponse):
    media_type = "application/problem+json"

    def render(self, content: Any) -> bytes:
        # A problem repeats figures from the request (a sweep's run count, a value out of
        # range), and a client may send an integer beyond 64 bits, which orjson refuses:
        # such a figure is sent as its decimal text, so a refusal never becomes a 500.
        try:
            return render_json(content)
        except orjson.JSONEncodeError:
            return render_json(_wide_ints_as_text(content))


def _wide_ints_as_text(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return value if -(2**63) <= value < 2**64 else str(value)
    if isinstance(value, dict):
        return {k: _wide_ints_as_text(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_wide_ints_as_text(v) for v in value]
    return value


class FieldError(BaseModel):
    loc: list[str | int] = Field(description="Path of the offending value, as Pydantic gives it")
    msg: str
    type: str
    pointer: str | None = Field(
        default=None, description="RFC 6901 JSON Pointer into the request body, when it is there"
    )


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str = Field(description="A URI naming the kind of problem")
    title: str
    status: int
    detail: str | None = None
    instance: str | None = None
    errors: list[FieldError] | None = None


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses=`` entries declaring problem+json for these statuses."""
    described = {
        400: "Bad request",
        401: "Missing, wrong or revoked API key (when authentication is on)",
        404: "Not found",
        406: "Not acceptable",
        409: "Conflict with the resource's state",
        422: "Validation failed; `errors` give each field's path",
        503: "A dependency is unavailable",
    }
    return {
        status: {
            "model": Problem,
            "description": described.get(status, "Error"),
            "content": {
                "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}
            },
        }
        for status in statuses
    }


def created_status(created: bool, served: bool) -> int:
    """A submission's status: 200 for a replay (the Idempotency-Key's earlier answer), 201
    when the result cache `served` all it asked for (nothing left to run), else 202."""
    if not created:
        return 200
    return 201 if served else 202
