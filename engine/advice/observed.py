"""How a workflow of runs (the advisor, the remedy check) keeps each run's value of its
target in its state, and reads a configuration's values back, seed by seed. The state is
plain JSON: a transfer that did not finish (an infinite completion time) is kept apart from
the value."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.advice.target import Target

#: A run's record in the state: {"v": value or None, "unfinished": bool, ...}; None for a
#: run that gave no summary (it failed).
Record = dict[str, Any] | None


def record(target: Target, summary: Mapping[str, Any], tcp_flows: list[str]) -> dict[str, Any]:
    """The target's value in a run's summary, as the state keeps it (no Infinity)."""
    v = target.measure(summary, tcp_flows)
    done = v is None or math.isfinite(v)
    return {"v": v if done else None, "unfinished": not done}


@dataclass(frozen=True, slots=True)
class Readings:
    """A configuration's records on its seeds, in seed order (None where a run failed)."""

    records: list[Record]
    values: list[float | None]
    unfinished: int  # runs whose transfer did not finish


def readings(seen: Mapping[str, Record], seeds: list[int]) -> Readings:
    """The records `seen` (by seed, as the state keys them) of these seeds."""
    records = [seen.get(str(s)) for s in seeds]
    values = [None if r is None else r["v"] for r in records]
    unfinished = sum(1 for r in records if r is not None and r.get("unfinished"))
    return Readings(records, values, unfinished)
