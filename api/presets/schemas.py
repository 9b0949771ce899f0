"""Bodies of /v1/presets."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class PresetOut(BaseModel):
    name: str
    description: str
    kind: str = Field(description="`scenario` (run it with POST /v1/runs) or `study` (a sweep)")
    source: str = Field(description="The seed study it reproduces, e.g. `seed 003`")


class PresetDetail(PresetOut):
    body: dict[str, Any] = Field(description="The scenario (or study) in canonical form")
