"""What the analytic bounds (engine/advice/whatif.py) allow a target over the paths of its
flows: for a configuration, the figure of the flow that binds the target (the slowest to
complete, or the one with the least goodput), and whether every flow's bound reaches it."""

from __future__ import annotations

import math
from typing import Any

from engine.advice.target import Target
from engine.advice.whatif import Bound, PathModel, reaches
from engine.scenario import Scenario, TcpBulkFlow
from engine.scenario.topology import Topology


class TargetBounds:
    """The target's bounds over the path models of its flows."""

    def __init__(self, scenario: Scenario, target: Target, flows: list[str]):
        self.target = target
        topo = Topology(scenario)
        links = {link.id: link for link in scenario.links}
        by_id = {f.id: f for f in scenario.flows if isinstance(f, TcpBulkFlow)}
        self.models: dict[str, PathModel] = {}
        for fid in flows:
            model = PathModel.of(scenario, by_id[fid], topo, links)
            if model is None:
                raise ValueError(f"target: flow {fid!r} has no route")
            self.models[fid] = model

    def detail(self, changes: dict[str, Any]) -> Bound:
        """The path facts of the flow the target's bound is set by."""
        bounds = [m.bound(changes) for m in self.models.values()]
        if self.target.lower_is_better:
            return max(bounds, key=lambda b: b.completion_time or math.inf)
        return min(bounds, key=lambda b: b.goodput_bps)

    def value(self, changes: dict[str, Any]) -> float | None:
        b = self.detail(changes)
        return b.completion_time if self.target.lower_is_better else b.goodput_bps

    def limit(self, changes: dict[str, Any]) -> str | None:
        return self.detail(changes).limit

    def reaches(self, changes: dict[str, Any]) -> bool:
        return all(
            reaches(m.bound(changes), self.target.metric, self.target.value)
            for m in self.models.values()
        )
