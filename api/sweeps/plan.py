"""Checking a sweep before anything exists: the cap on runs, the base scenario, every
path and value of every point (a bad one rejects the sweep whole, naming it), each point's
estimated cost against the per-run budget, and which runs the result cache can serve."""

from __future__ import annotations

import hashlib
import itertools
import uuid
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import ValidationError
from sqlalchemy.orm import Session

import engine
from api import hints
from api.exceptions import InvalidScenario, OverBudget, Unprocessable, field_error, field_errors
from api.limits import Cost, cost_of
from api.runs.service import preset_scenario
from api.sweeps.schemas import SweepCreate
from engine.analysis.warnings import scenario_warnings
from engine.study import Point, StudyError, expand, resolve_base, set_path
from settings import Settings
from store.new_runs import cached_sources
from store.scenarios import ScenarioRepository

MAX_ERRORS = 20


def fingerprint(body: SweepCreate, preset: str | None) -> str:
    raw = orjson.dumps([preset, body.model_dump(mode="json")], option=orjson.OPT_SORT_KEYS)
    return "sha256:" + hashlib.sha256(raw).hexdigest()


@dataclass
class Plan:
    """A sweep checked and expanded, nothing written yet."""

    name: str
    preset: str | None  # the base scenario's preset, if it is one
    scenario_id: uuid.UUID | None
    points: list[Point]
    estimates: list[dict[str, int]]  # per point: the engine's {events, packets}
    seeds: list[int]
    baseline_index: int | None
    cached: dict[tuple[str, int], uuid.UUID]  # (hash, seed) -> run owning the result
    base_hash: str

    @property
    def run_count(self) -> int:
        return len(self.points) * len(self.seeds)

    def cached_count(self) -> int:
        return sum(
            (p.scenario.scenario_hash(), s) in self.cached for p in self.points for s in self.seeds
        )


def plan(
    session: Session,
    *,
    tenant_id: uuid.UUID,
    body: SweepCreate,
    settings: Settings,
    study_preset: str | None = None,
) -> Plan:
    """Everything a sweep is checked for, before anything is created: the cap, the base,
    every path and value of every point, that each point can be laid out."""
    _check_cap(body, settings.sweep_max_runs)
    base, preset, scenario_id = _base(session, body, tenant_id)
    if body.seed is not None:
        base = base.model_copy(update={"seed": body.seed})
    points = _expand(body, base, settings.sweep_max_runs)
    estimates = _estimates(points, settings)
    seeds = list(points[0].seeds)
    cached: dict[tuple[str, int], uuid.UUID] = {}
    if body.cache == "reuse":
        cached = cached_sources(
            session,
            {(p.scenario.scenario_hash(), s) for p in points for s in seeds},
            engine_version=engine.ENGINE_VERSION,
            tenant_id=tenant_id,
        )
    baseline = next((p.index for p in points if p.is_baseline), None)
    name = body.name or (f"{study_preset}" if study_preset else f"{base.name} sweep")
    return Plan(
        name, preset, scenario_id, points, estimates, seeds, baseline, cached, base.scenario_hash()
    )


def _check_cap(body: SweepCreate, cap: int) -> None:
    """A sweep of more runs than TCPFR_SWEEP_MAX_RUNS is refused before it is expanded."""
    runs = body.point_count() * body.replications
    if runs > cap:
        msg = (
            f"the sweep asks for {runs} runs ({body.point_count()} points x "
            f"{body.replications} replications); the cap is {cap} (TCPFR_SWEEP_MAX_RUNS)"
        )
        raise Unprocessable(
            msg,
            errors=[field_error(["body", "parameters"], msg, "too_many_runs")],
            runs=runs,
            cap=cap,
        )


def _expand(body: SweepCreate, base: engine.Scenario, cap: int) -> list[Point]:
    """The sweep's points, or the whole sweep rejected with each point's errors."""
    try:
        return expand(body, base, max_runs=cap)
    except StudyError as exc:
        errors = _point_errors(body, base, exc)
        raise InvalidScenario(
            f"the sweep is rejected whole: {errors[0]['msg'] if errors else exc.message}",
            errors=errors,
        ) from None
    except (ValueError, TypeError, LookupError) as exc:  # a path the walk cannot take
        msg = f"the sweep is rejected whole: {exc}"
        raise InvalidScenario(msg, errors=[field_error(["body", "parameters"], msg)]) from None


def _estimates(points: list[Point], settings: Settings) -> list[dict]:
    """The engine's estimate of each point; every point within the per-run budget."""
    estimates: list[dict] = []
    over: list[tuple[str, Cost]] = []
    for p in points:
        try:
            estimates.append(engine.describe(p.scenario)["estimate"])
        except (ValueError, KeyError, LookupError, ArithmeticError) as exc:
            msg = f"point {p.index} ({_words(p.parameters)}) cannot be simulated: {exc}"
            raise InvalidScenario(msg, errors=[field_error(["body", "parameters"], msg)]) from exc
        found = cost_of(estimates[-1], settings)
        if not found.within_budget:
            over.append((f"point {p.index} ({_words(p.parameters)})", found))
    if over:
        # The per-run budget of POST /v1/runs (api.limits) holds for every run of a sweep.
        first, cost = over[0]
        raise OverBudget(
            f"{len(over)} point(s) exceed the per-run budget: {first}: {cost.refusal()}",
            errors=[
                field_error(["body", "parameters"], f"{where}: {c.refusal()}", "over_budget")
                for where, c in over[:MAX_ERRORS]
            ],
            budget=cost.budget.model_dump(),
            over=sorted({what for _, c in over for what in c.over}),
        )
    return estimates


MAX_WARNINGS = 20


def warnings(p: Plan) -> list[str]:
    """Each point's advisory warnings, once each: those of every point as they are, the
    others with the points they concern."""
    where: dict[str, list[int]] = {}
    for pt in p.points:
        try:
            found = scenario_warnings(pt.scenario)
        except (ValueError, LookupError, ArithmeticError):  # advisory: never fail a sweep
            continue
        for w in dict.fromkeys(found):
            where.setdefault(w, []).append(pt.index)
    out = []
    for w, idx in where.items():
        if len(idx) == len(p.points):
            out.append(w)
        else:
            shown = ", ".join(map(str, idx[:10])) + (" …" if len(idx) > 10 else "")
            out.append(f"point{'s' if len(idx) > 1 else ''} {shown}: {w}")
    return out[:MAX_WARNINGS]


def _words(parameters: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in parameters.items())


def _base(
    session: Session, body: SweepCreate, tenant_id: uuid.UUID
) -> tuple[engine.Scenario, str | None, uuid.UUID | None]:
    base = body.base
    if set(base) == {"preset"}:
        name = base["preset"]
        if not isinstance(name, str):
            raise InvalidScenario(
                "base.preset must be a name",
                errors=[field_error(["body", "base", "preset"], "expected a preset name")],
            )
        return preset_scenario(name, loc=["body", "base", "preset"]), name, None
    if set(base) == {"scenario_id"}:
        loc: list[str | int] = ["body", "base", "scenario_id"]
        try:
            scenario_id = uuid.UUID(str(base["scenario_id"]))
        except ValueError:
            raise InvalidScenario(
                "base.scenario_id is not a UUID", errors=[field_error(loc, "expected a UUID")]
            ) from None
        stored = ScenarioRepository(session).owned(scenario_id, tenant_id=tenant_id)
        if stored is None:
            raise InvalidScenario(
                f"no scenario with id {scenario_id}",
                errors=[field_error(loc, "unknown scenario id", "not_found")],
            )
        try:
            return engine.Scenario.model_validate(stored.body), None, stored.id
        except ValidationError as exc:
            raise InvalidScenario(
                "the stored scenario no longer validates against this engine",
                errors=field_errors(exc.errors(), prefix=loc),
            ) from exc
    try:
        return resolve_base(body), None, None
    except StudyError as exc:
        errors = [
            field_error(["body", *e["loc"]], e["msg"], e.get("type", "value_error"))
            for e in exc.errors
        ]
        raise InvalidScenario(
            f"the base scenario is invalid: {exc.message}", errors=errors
        ) from None


def _point_errors(body: SweepCreate, base: engine.Scenario, exc: StudyError) -> list[dict]:
    """Each bad path or value of the sweep, named as `parameters.<path>[<index>]` where
    the error can be traced to one swept value."""
    if exc.loc[:1] == ("baseline",):
        return [field_error(["body", *exc.loc], exc.message)]
    data = base.model_dump(mode="json")
    paths = list(body.parameters)
    errors: dict[tuple, dict[str, Any]] = {}
    combos = (
        zip(*body.parameters.values(), strict=True)
        if body.mode == "zip"
        else itertools.product(*body.parameters.values())
    )
    for row in combos:
        params = dict(zip(paths, row, strict=True))
        try:
            point = orjson.loads(orjson.dumps(data))
            for path, value in params.items():
                set_path(point, path, value)
            engine.Scenario.model_validate(point)
        except StudyError as bad:
            # An unknown path: the loc names the part of it that does not exist.
            where = next((p for p in paths if bad.loc[1:] and p.startswith(bad.loc[1])), paths[0])
            errors.setdefault(
                ("path", where), field_error(["body", "parameters", where], bad.message)
            )
        except ValidationError as bad:
            for e in hints.improve(bad.errors(include_url=False), engine.Scenario):
                dotted = _id_path(data, e["loc"])
                swept = next((p for p in paths if dotted == p or dotted.startswith(p + ".")), None)
                if swept is not None:
                    i = body.parameters[swept].index(params[swept])
                    loc: list[str | int] = ["body", "parameters", swept, i]
                    msg = f"{dotted}: {e['msg']}"
                else:
                    loc, msg = (
                        ["body", "parameters"],
                        f"{dotted or 'scenario'}: {e['msg']} (point {_words(params)})",
                    )
                errors.setdefault(tuple(loc) + (msg,), field_error(loc, msg, e["type"]))
        except (ValueError, TypeError, LookupError) as odd:  # a path the walk cannot take
            errors.setdefault(("odd", str(odd)), field_error(["body", "parameters"], str(odd)))
        if len(errors) >= MAX_ERRORS:
            break
    return list(errors.values()) or [field_error(["body", *exc.loc], exc.message)]


def _id_path(data: Any, loc: tuple) -> str:
    """A pydantic loc (`links, 1, rate`) as the sweep's dotted path (`links.access1.rate`)."""
    parts, node = [], data
    for key in loc:
        if isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
            node = node[key]
            parts.append(str(node.get("id", key)) if isinstance(node, dict) else str(key))
        elif isinstance(node, dict) and key in node:
            node = node[key]
            parts.append(str(key))
        else:
            node = None
            parts.append(str(key))
    return ".".join(parts)
