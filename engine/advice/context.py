"""What the remedy rules read about one diagnosed flow (`Context`), apart from the modules
that read it: the rules, the sentences and the headline all take it, and none of them
needs the others to name it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from engine.advice.whatif import PathModel
from engine.analysis import PathFacts
from engine.result import Bounds, Result, TcpFlowSummary
from engine.scenario import Link, Pvc, Scenario, TcpBulkFlow
from engine.usage import Share


class PolicingFacts(Protocol):
    """The diagnosis' account of a PVC policer that discarded the flow's bursts."""

    pvc: Pvc
    link_drops: int
    frame_bits: int

    @property
    def counters(self) -> Any: ...


@dataclass
class Context:
    """Everything the rules read about one diagnosed flow."""

    scenario: Scenario
    links: dict[str, Link]
    flow: TcpBulkFlow
    summary: TcpFlowSummary
    result: Result
    facts: PathFacts
    share: Share
    limit: str
    bounds: Bounds
    loss_rate: float
    policing: PolicingFacts | None
    model: PathModel | None
