"""/v1/presets: the seed studies, ready to run."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Response, status

from api.deps import CeleryDep, DbDep, SettingsDep, TenantDep
from api.exceptions import InvalidScenario, NotFound, field_error
from api.idempotency import IdempotencyKey
from api.presets.schemas import PresetDetail, PresetOut
from api.responses import problem_responses
from api.sweeps.endpoints import CREATE_RESPONSES, DryRun, submit
from api.sweeps.schemas import PresetSweepCreate, SweepCreate, SweepOut
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


@router.post(
    "/{name}/sweep",
    operation_id="create_preset_sweep",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=SweepOut,
    responses={**CREATE_RESPONSES, **problem_responses(401, 404, 422)},
)
async def create_preset_sweep(
    name: str,
    db: DbDep,
    celery: CeleryDep,
    settings: SettingsDep,
    tenant_id: TenantDep,
    body: Annotated[PresetSweepCreate | None, Body()] = None,
    idempotency_key: IdempotencyKey = None,
    dry_run: DryRun = False,
) -> Response:
    """Launch a study preset (`*-study`, e.g. `riverbed-study`) as a sweep, optionally with
    other replications, seed or cache policy; `dry_run=true` prices it. Same answers as
    POST /v1/sweeps."""
    info = next((p for p in list_presets() if p.name == name), None)
    if info is None:
        raise NotFound(f"no preset named {name!r}")
    if info.kind != "study":
        raise InvalidScenario(
            f"preset {name!r} is a single scenario: run it with POST /v1/runs",
            errors=[field_error(["path", "name"], "not a study preset", "not_a_study")],
        )
    overrides = (body or PresetSweepCreate()).model_dump(exclude_none=True)
    sweep = SweepCreate.model_validate({**load_study(name), **overrides})
    return await submit(
        db=db,
        celery=celery,
        settings=settings,
        tenant_id=tenant_id,
        body=sweep,
        idempotency_key=idempotency_key,
        dry_run=dry_run,
        study_preset=name,
    )
