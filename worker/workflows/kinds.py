"""Which multi-run workflows the worker can drive, and how it starts or restores each one.

A kind is the pure workflow's two constructors (``engine.workflow``): from the base scenario
and the request (the first step), and from those and the state a previous step stored; and,
for the advisor, its curves, stored with its report after each step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import BaseModel

from engine import Scenario
from engine.workflow import Workflow


@dataclass(frozen=True, slots=True)
class Kind:
    name: str
    start: Callable[[Scenario, dict[str, Any]], Workflow]
    restore: Callable[[Scenario, dict[str, Any], dict[str, Any]], Workflow]
    curves: Callable[[Any], Sequence[BaseModel]] | None = None

    def build(
        self, scenario: Scenario, request: dict[str, Any], state: dict[str, Any] | None
    ) -> Workflow:
        """The workflow as the last step left it (new when no step has run yet)."""
        if state is None:
            return self.start(scenario, request)
        return self.restore(scenario, request, state)


@cache
def kinds() -> Mapping[str, Kind]:
    """The workflows the service offers, by the name stored in ``workflows.kind``."""
    from engine.advice.check import RemedyCheck
    from engine.advice.curves import curves
    from engine.advice.search import Advisor

    return {
        "advice": Kind("advice", Advisor, Advisor, curves),
        "remedy_check": Kind("remedy_check", RemedyCheck, RemedyCheck),
    }
