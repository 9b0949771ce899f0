"""Studies (sweeps): a base scenario, parameters addressed by dotted paths, a design
(`grid` = cartesian product, `zip` = parallel lists), replications and a baseline.

Paths walk the scenario's JSON form; a list is addressed by an item's `id`
(`links.access1.rate`, `flows.backup.tcp.rcv_buf`) or by its index. Every point is
validated before anything runs, so one bad value rejects the whole study with the path
that caused it.
"""

from __future__ import annotations

import copy
import difflib
import itertools
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from engine.scenario import Scenario

MAX_POINTS_DEFAULT = 10_000


class StudySpec(BaseModel):
    """A sweep: a base scenario, the values of dotted paths to vary, how to combine them (docs/scenario.md "Sweep (study)")."""

    model_config = ConfigDict(extra="forbid")

    base: dict[str, Any] = Field(
        description="{preset: NAME}, {scenario_id: ID}, {scenario: {...}} or an inline scenario"
    )
    parameters: dict[str, list[Any]] = Field(
        description="Dotted path -> list of values; list items addressed by their id"
    )
    mode: Literal["grid", "zip"] = "grid"
    replications: int = Field(default=1, ge=1, le=1000)
    baseline: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _check(self) -> StudySpec:
        if not self.parameters:
            raise ValueError("parameters: at least one parameter is needed")
        for path, values in self.parameters.items():
            if not values:
                raise ValueError(f"parameters.{path}: give at least one value")
        if self.mode == "zip":
            lengths = {len(v) for v in self.parameters.values()}
            if len(lengths) > 1:
                raise ValueError(f"mode zip needs lists of equal length, got {sorted(lengths)}")
        if self.baseline is not None:
            unknown = set(self.baseline) - set(self.parameters)
            if unknown:
                raise ValueError(f"baseline names paths that are not swept: {sorted(unknown)}")
        return self

    def point_count(self) -> int:
        lengths = [len(v) for v in self.parameters.values()]
        if self.mode == "zip":
            return lengths[0]
        n = 1
        for x in lengths:
            n *= x
        return n


class StudyError(ValueError):
    """A path or value of the study is wrong; `loc` says where, as in pydantic errors."""

    def __init__(
        self, loc: tuple[Any, ...], message: str, errors: list[dict[str, Any]] | None = None
    ):
        super().__init__(message)
        self.loc = loc
        self.message = message
        self.errors = errors or [{"loc": loc, "msg": message, "type": "study_error"}]


@dataclass
class Point:
    index: int
    parameters: dict[str, Any]
    scenario: Scenario
    seeds: list[int] = field(default_factory=list)
    is_baseline: bool = False


def set_path(data: dict[str, Any], path: str, value: Any) -> None:
    """Set `value` at dotted `path` in the scenario dict `data` (lists addressed by id)."""
    parts = path.split(".")
    node: Any = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        where = ".".join(parts[: i + 1])
        if isinstance(node, list):
            item = _list_item(node, part, where)
            if last:
                node[node.index(item)] = value
                return
            node = item
        elif isinstance(node, dict):
            if last:
                node[part] = value
                return
            if part not in node or node[part] is None:
                node[part] = {}  # optional sub-objects (e.g. frame_relay) come into being
            node = node[part]
        else:
            raise StudyError(("parameters", path), f"{where}: cannot descend into a value")


def get_path(data: dict[str, Any], path: str) -> Any:
    """The value at dotted `path` in the scenario dict `data`, None where nothing is set
    (the reading twin of `set_path`: the advisor compares a change with what is there)."""
    node: Any = data
    for i, part in enumerate(path.split(".")):
        if isinstance(node, list):
            node = _list_item(node, part, ".".join(path.split(".")[: i + 1]))
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            return None
        if node is None:
            return None
    return node


#: Top-level scenario fields that are not what is simulated (the scenario hash leaves them
#: out too): what comparing two scenarios' paths skips.
NOT_SIMULATED = frozenset({"name", "description", "seed"})


def flatten(data: Any, *, skip: Collection[str] = (), prefix: str = "") -> dict[str, Any]:
    """The scenario dict `data` as {dotted path: value}, list items named by their id: the
    paths `set_path` and `get_path` take. `skip`: top-level keys left out."""
    out: dict[str, Any] = {}
    if isinstance(data, dict):
        for k, v in data.items():
            if not prefix and k in skip:
                continue
            out.update(flatten(v, prefix=f"{prefix}{k}."))
    elif isinstance(data, list) and data and all(isinstance(x, dict) for x in data):
        for i, item in enumerate(data):
            out.update(flatten(item, prefix=f"{prefix}{item.get('id', i)}."))
    else:
        out[prefix.rstrip(".")] = data
    return out


def _list_item(items: list[Any], key: str, where: str) -> Any:
    for item in items:
        if isinstance(item, dict) and item.get("id") == key:
            return item
    if key.isdecimal() and key.isascii() and int(key) < len(items):
        return items[int(key)]
    ids = [item.get("id") for item in items if isinstance(item, dict)]
    close = difflib.get_close_matches(key, [str(i) for i in ids], n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise StudyError(("parameters", where), f"{where}: no item with id {key!r} (ids: {ids}){hint}")


def apply_changes(scenario: Scenario, changes: dict[str, Any]) -> Scenario:
    """The scenario with `changes` ({dotted path: value}) applied and validated: a workflow's
    candidate as the scenario of an ordinary run. A bad value raises StudyError with the
    path that caused it."""
    if not changes:
        return scenario
    return _apply(scenario.model_dump(mode="json"), changes, ("changes",))


def _combinations(spec: StudySpec) -> list[dict[str, Any]]:
    paths = list(spec.parameters)
    lists = [spec.parameters[p] for p in paths]
    rows = zip(*lists, strict=True) if spec.mode == "zip" else itertools.product(*lists)
    return [dict(zip(paths, row, strict=True)) for row in rows]


def _apply(base: dict[str, Any], params: dict[str, Any], loc_prefix: tuple[str, ...]) -> Scenario:
    data = copy.deepcopy(base)
    for path, value in params.items():
        set_path(data, path, value)
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        errors: list[dict[str, Any]] = [
            {"loc": loc_prefix + tuple(e["loc"]), "msg": e["msg"], "type": e["type"]}
            for e in exc.errors(include_url=False)
        ]
        first = errors[0]
        raise StudyError(first["loc"], f"{first['msg']} (point {params})", errors) from None


def expand(spec: StudySpec, base: Scenario, *, max_runs: int = MAX_POINTS_DEFAULT) -> list[Point]:
    """Every point of the study as a validated Scenario, with its seeds (common random
    numbers: every point uses the same seeds, so differences between points are paired)."""
    runs = spec.point_count() * spec.replications
    if runs > max_runs:
        raise StudyError(
            ("parameters",),
            f"the study has {runs} runs (points x replications); the cap is {max_runs}",
        )
    base_data = base.model_dump(mode="json")
    seeds = [base.seed + r for r in range(spec.replications)]
    points = []
    baseline_hash = None
    if spec.baseline is not None:
        baseline_hash = _apply(base_data, spec.baseline, ("baseline",)).scenario_hash()
    for i, params in enumerate(_combinations(spec)):
        scenario = _apply(base_data, params, ("parameters",))
        points.append(
            Point(
                index=i,
                parameters=params,
                scenario=scenario,
                seeds=list(seeds),
                is_baseline=scenario.scenario_hash() == baseline_hash,
            )
        )
    if baseline_hash is not None and not any(p.is_baseline for p in points):
        raise StudyError(("baseline",), "the baseline is not one of the study's points")
    return points


def resolve_base(
    spec: StudySpec, *, scenario_by_id: Callable[[str], Scenario] | None = None
) -> Scenario:
    """The base scenario: a preset, a stored scenario (via `scenario_by_id`), or inline."""
    from engine.presets import load_preset

    base = spec.base
    if set(base) == {"preset"}:
        return load_preset(base["preset"])
    if set(base) == {"scenario_id"}:
        if scenario_by_id is None:
            raise StudyError(("base", "scenario_id"), "stored scenarios need the service")
        return scenario_by_id(base["scenario_id"])
    data = base["scenario"] if set(base) == {"scenario"} else base
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        errors: list[dict[str, Any]] = [
            {"loc": ("base",) + tuple(e["loc"]), "msg": e["msg"], "type": e["type"]}
            for e in exc.errors(include_url=False)
        ]
        raise StudyError(errors[0]["loc"], errors[0]["msg"], errors) from None
