"""Presets: the seed studies shipped as YAML scenarios and studies inside this package.

Each `*.yaml` file here is one preset named after its file. A file holding `base:` and
`parameters:` is a study (a sweep, docs/scenario.md "Sweep (study)"); any other is a scenario.
Every file opens with a comment header whose `# source: seed NNN (...)` line names the seed
study it reproduces; the derivations live beside them (`riverbed.md`, `SEEDS.md`).

Scenarios are validated by `engine.scenario.load_scenario`, imported on first use so that
listing presets needs neither pydantic models nor the simulator.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

if TYPE_CHECKING:
    from engine.scenario import Scenario

__all__ = [
    "PresetError",
    "PresetInfo",
    "PresetKind",
    "UnknownPreset",
    "list_presets",
    "load_preset",
    "load_study",
    "preset_names",
    "preset_path",
    "preset_text",
]

PresetKind = Literal["scenario", "study"]

_SUFFIX = ".yaml"
_SOURCE = re.compile(r"^#\s*source:\s*(?P<source>seed\s+\d+)", re.MULTILINE | re.IGNORECASE)
# Keys that make a YAML mapping a study rather than a scenario.
_STUDY_MARKERS = frozenset({"base", "parameters"})
# Keys of a study file that describe the preset itself and are not part of the sweep body.
_STUDY_META = ("name", "description")
_STUDY_MODES = ("grid", "zip")


@dataclass(frozen=True, slots=True)
class PresetInfo:
    """One line of `python -m engine presets`."""

    name: str
    description: str
    kind: PresetKind
    source: str  # the seed it reproduces, e.g. "seed 003"; "" when the header names none


class UnknownPreset(KeyError):
    """No preset has this name; `available` lists the names that exist."""

    def __init__(self, name: str, available: tuple[str, ...]) -> None:
        super().__init__(name)
        self.name = name
        self.available = available

    def __str__(self) -> str:  # KeyError would print only repr(name)
        return f"unknown preset {self.name!r}; available: {', '.join(self.available)}"


class PresetError(ValueError):
    """A preset file is malformed, or is used as the wrong kind (a study as a scenario)."""


@cache
def _index() -> dict[str, Path]:
    """Map preset name -> file, for every YAML file shipped in this package."""
    found: dict[str, Path] = {}
    for entry in resources.files(__package__).iterdir():
        if entry.is_file() and entry.name.endswith(_SUFFIX):
            # Shipped as a regular package (setuptools package-data), so entries are paths.
            found[entry.name.removesuffix(_SUFFIX)] = Path(str(entry))
    return dict(sorted(found.items()))


def preset_names() -> list[str]:
    """Names of all presets, sorted."""
    return list(_index())


def preset_path(name: str) -> Path:
    """The YAML file of preset `name`; raises `UnknownPreset`."""
    try:
        return _index()[name]
    except KeyError:
        raise UnknownPreset(name, tuple(_index())) from None


@cache
def preset_text(name: str) -> str:
    """The YAML text of preset `name`, comment header included."""
    return preset_path(name).read_text(encoding="utf-8")


def _data(name: str) -> dict[str, Any]:
    """The parsed YAML mapping of preset `name` (a fresh copy: callers may mutate it)."""
    return copy.deepcopy(_parsed(name))


@cache
def _parsed(name: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(preset_text(name))
    except yaml.YAMLError as exc:
        raise PresetError(f"preset {name!r}: invalid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise PresetError(f"preset {name!r}: expected a mapping at the top level")
    return data


def _kind(data: dict[str, Any]) -> PresetKind:
    return "study" if data.keys() >= _STUDY_MARKERS else "scenario"


def list_presets() -> list[PresetInfo]:
    """Every preset with its one-line description, kind and source seed, sorted by name."""
    infos = []
    for name in _index():
        data = _parsed(name)
        match = _SOURCE.search(preset_text(name))
        infos.append(
            PresetInfo(
                name=name,
                description=" ".join(str(data.get("description", "")).split()),
                kind=_kind(data),
                source=" ".join(match["source"].lower().split()) if match else "",
            )
        )
    return infos


def load_preset(name: str) -> Scenario:
    """The scenario preset `name`, validated; raises `UnknownPreset`, or `PresetError` for a study."""
    path = preset_path(name)
    if _kind(_parsed(name)) != "scenario":
        raise PresetError(f"preset {name!r} is a study: use load_study({name!r})")
    from engine.scenario import load_scenario  # deferred: listing must not need the models

    return load_scenario(path)


def load_study(name: str) -> dict[str, Any]:
    """The study preset `name` as a plain sweep body (docs/scenario.md "Sweep (study)").

    `name` and `description` are dropped (they describe the preset, not the sweep). The
    shape is checked here only as far as a file in this package can get it wrong; the
    study model validates the rest.
    """
    data = _data(name)
    if _kind(data) != "study":
        raise PresetError(f"preset {name!r} is a scenario: use load_preset({name!r})")
    for key in _STUDY_META:
        data.pop(key, None)
    base = data["base"]
    if isinstance(base, dict) and "preset" in base:
        target = base["preset"]
        if target not in _index() or _kind(_parsed(target)) != "scenario":
            raise PresetError(f"study {name!r}: base preset {target!r} is not a scenario preset")
    parameters = data["parameters"]
    if not isinstance(parameters, dict) or not parameters:
        raise PresetError(f"study {name!r}: parameters must be a non-empty mapping")
    for path, values in parameters.items():
        if not isinstance(values, list) or not values:
            raise PresetError(f"study {name!r}: parameters.{path} must be a non-empty list")
    mode = data.setdefault("mode", "grid")
    if mode not in _STUDY_MODES:
        raise PresetError(f"study {name!r}: mode must be one of {_STUDY_MODES}, got {mode!r}")
    if mode == "zip" and len({len(v) for v in parameters.values()}) != 1:
        raise PresetError(f"study {name!r}: mode zip needs parameter lists of equal length")
    return data
