"""Scenarios from JSON or YAML text and files."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from engine.scenario.document import Scenario


class ScenarioFormatError(ValueError):
    """Scenario text that is not valid JSON or YAML, or not a mapping."""


def load_scenario(source: str | bytes | Path | Mapping[str, Any]) -> Scenario:
    """Load and validate a scenario from a file path, JSON or YAML text, or a mapping."""
    if isinstance(source, Mapping):
        return Scenario.model_validate(source)
    if isinstance(source, Path) or (
        isinstance(source, str) and "\n" not in source and Path(source).suffix in _SUFFIXES
    ):
        path = Path(source)
        return Scenario.model_validate(_parse(path.read_text(encoding="utf-8"), str(path)))
    try:
        text = source.decode() if isinstance(source, bytes) else source
    except UnicodeDecodeError as exc:
        raise ScenarioFormatError(f"<text>: not UTF-8: {exc}") from None
    return Scenario.model_validate(_parse(text, "<text>"))


_SUFFIXES = frozenset({".json", ".yaml", ".yml"})
#: libyaml's parser where PyYAML was built with it (the same safe constructor and resolver):
#: it refuses nesting past 1,000 levels in milliseconds where the pure parser scanned 5,000
#: unclosed "[" for 1.6 s before its recursion error.
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _parse(text: str, origin: str) -> dict[str, Any]:
    """Parse JSON (text starting with '{') or YAML into a mapping."""
    try:
        data = json.loads(text) if text.lstrip().startswith("{") else yaml.load(text, _LOADER)
    except (ValueError, yaml.YAMLError, RecursionError) as exc:  # RecursionError: too deep
        raise ScenarioFormatError(f"{origin}: not valid JSON or YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ScenarioFormatError(f"{origin}: a scenario must be a mapping of fields")
    return data
