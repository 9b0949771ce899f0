"""/v1/presets: the seed studies, ready to run (POST /v1/presets/{name}/sweep launches one:
api.sweeps.endpoints)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from api.exceptions import NotFound
from api.presets.schemas import PresetDetail, PresetOut
from api.responses import problem_responses
from engine.presets import UnknownPreset, list_presets, load_preset, load_study

router = APIRouter(prefix="/v1/presets", tags=["presets"])


def _info(p: Any) -> PresetOut:
    return PresetOut(name=p.name, description=p.description, kind=p.kind, source=p.source)


@router.get("", operation_id="list_presets")
async def list_all() -> list[PresetOut]:
    """Every preset scenario and study, with its description."""
    return [_info(p) for p in list_presets()]


@router.get("/{name}", operation_id="get_preset", responses=problem_responses(404))
async def get_preset(name: str) -> PresetDetail:
    """One preset and its full body: post the body to /v1/runs as `scenario` to vary it."""
    info = next((p for p in list_presets() if p.name == name), None)
    if info is None:
        raise NotFound(f"no preset named {name!r}")
    try:
        if info.kind == "scenario":
            body = load_preset(name).model_dump(mode="json")
        else:
            body = load_study(name)
    except UnknownPreset as exc:
        raise NotFound(f"no preset named {name!r}") from exc
    return PresetDetail(**_info(info).model_dump(), body=body)
