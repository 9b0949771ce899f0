"""What the user wants: a flow's completion time at most X, its goodput at least Y, or the same
over every TCP flow (`*`): parsed from `backup.completion_time<=200s`, read from a run's
summary, and compared.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.units import format_rate, parse_duration, parse_rate

Metric = Literal["completion_time", "goodput_bps"]
_ALIASES = {
    "completion_time": "completion_time",
    "completion": "completion_time",
    "time": "completion_time",
    "goodput_bps": "goodput_bps",
    "goodput": "goodput_bps",
}
_SYNTAX = re.compile(r"^\s*(?P<flow>[^.\s]+)\.(?P<metric>\w+)\s*(?P<op><=|>=)\s*(?P<value>.+?)\s*$")


class Target(BaseModel):
    """A flow's completion time at most `value` seconds, or its goodput at least `value`
    bit/s; flow `*` means every TCP flow of the scenario (the slowest one must meet it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    flow: str = Field(description="A flow id, or * for every TCP flow")
    metric: Metric
    value: float = Field(gt=0, description="Seconds for completion_time, bit/s for goodput_bps")

    @classmethod
    def parse(cls, text: str) -> Target:
        """`backup.completion_time<=200s`, `backup.goodput>=1Mbps`, `*.time<=10min`."""
        m = _SYNTAX.match(text)
        if m is None or m["metric"] not in _ALIASES:
            raise ValueError(
                f"target {text!r}: write FLOW.completion_time<=DURATION or "
                "FLOW.goodput>=RATE (FLOW may be *)"
            )
        metric = _ALIASES[m["metric"]]
        want = "<=" if metric == "completion_time" else ">="
        if m["op"] != want:
            raise ValueError(f"target {text!r}: {metric} takes {want}")
        value = (
            parse_duration(m["value"]) if metric == "completion_time" else parse_rate(m["value"])
        )
        return cls(flow=m["flow"], metric=metric, value=value)  # type: ignore[arg-type]

    @property
    def lower_is_better(self) -> bool:
        return self.metric == "completion_time"

    def flows(self, tcp_flows: list[str]) -> list[str]:
        return list(tcp_flows) if self.flow == "*" else [self.flow]

    def measure(self, summary: Mapping[str, Any], tcp_flows: list[str]) -> float | None:
        """The target's metric in a run's summary: the flow's completion time (infinite when
        it did not finish) or goodput; over every flow, the worst of them."""
        values = []
        for fid in self.flows(tcp_flows):
            f = (summary.get("flows") or {}).get(fid)
            if not isinstance(f, Mapping):
                return None
            if self.metric == "completion_time":
                t = f.get("completion_time")
                values.append(float(t) if f.get("completed") and t is not None else math.inf)
            else:
                values.append(float(f.get("goodput_bps") or 0.0))
        if not values:
            return None
        return max(values) if self.lower_is_better else min(values)

    def meets(self, value: float | None) -> bool:
        if value is None or math.isnan(value):
            return False
        return value <= self.value if self.lower_is_better else value >= self.value

    def far_end(self, ci95: list[float] | None) -> float | None:
        """The end of an interval that is worst for the target: its upper end for a time,
        its lower end for a rate."""
        if ci95 is None:
            return None
        return ci95[1] if self.lower_is_better else ci95[0]

    def better(self, a: float, b: float) -> bool:
        """a is strictly better than b."""
        return a < b if self.lower_is_better else a > b

    def show(self, value: float | None) -> str:
        if value is None:
            return "n/a"
        if self.metric == "completion_time":
            if math.isinf(value):
                return "not finished"
            return f"{value:,.1f} s" if value < 1000 else f"{value:,.0f} s"
        return format_rate(value, digits=3)

    def text(self) -> str:
        who = "every flow" if self.flow == "*" else self.flow
        if self.metric == "completion_time":
            return f"{who} completes in at most {self.show(self.value)}"
        return f"{who} gets at least {self.show(self.value)} of goodput"
