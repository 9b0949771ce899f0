"""The time axis of a series answer, both ways: simulated seconds from the run's start (the
default), or milliseconds since the Unix epoch, simulated time laid from the moment the run
started, as Grafana plots against wall-clock time. `start` and `end` are read on the axis
the request chose. The per-run series and the comparison of several runs both ask here."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from fastapi import Query

from api.exceptions import Unprocessable, field_error
from store.models import Run

Axis = Literal["sim", "epoch_ms"]
TimeAxis = Annotated[
    Axis,
    Query(
        alias="time",
        description="`sim`: `t` in simulated seconds from the run's start (the default); "
        "`epoch_ms`: `t` in milliseconds since the Unix epoch, simulated time laid from the "
        "moment the run started (its `started_at`, or `created_at` when the cache served it), "
        "for tools that plot against wall-clock time, as Grafana does. `start` and `end` are "
        "read on the same axis",
    ),
]
Start = Annotated[
    float | None,
    Query(
        allow_inf_nan=False,
        description="Window start on the `time` axis: simulated seconds, or with "
        "`time=epoch_ms` milliseconds since the Unix epoch (as Grafana sends a zoom)",
    ),
]
End = Annotated[
    float | None,
    Query(allow_inf_nan=False, description="Window end on the `time` axis, as `start`"),
]
#: Epoch milliseconds before this (1973-03-03) are simulated seconds sent by mistake.
EPOCH_MS_FLOOR = 1e11


def origin_ms(run: Run, axis: Axis) -> float | None:
    """Where the run's simulated time 0 lies on the epoch-ms axis, or None for simulated
    seconds."""
    if axis != "epoch_ms":
        return None
    at = run.started_at or run.created_at
    return at.timestamp() * 1000.0


def on_axis(t: Any, origin: float | None) -> Any:
    """Simulated seconds `t` (a number or an array) on the axis whose origin is `origin`."""
    return t if origin is None else np.round(t * 1000.0 + origin, 3)


def check_window(start: float | None, end: float | None, axis: Axis) -> None:
    """A value on the epoch-ms axis that cannot be one (before 1973) is a 422 naming its
    field: simulated seconds sent with `time=epoch_ms` would select nothing, silently."""
    if axis != "epoch_ms":
        return
    for name, value in (("start", start), ("end", end)):
        if value is not None and value < EPOCH_MS_FLOOR:
            raise Unprocessable(
                f"{name} is on the time=epoch_ms axis: milliseconds since the Unix epoch",
                errors=[
                    field_error(
                        ["query", name],
                        f"must be epoch milliseconds (>= {EPOCH_MS_FLOOR:.0f}) with "
                        "time=epoch_ms; simulated seconds need time=sim",
                    )
                ],
            )


def sim_window(
    start: float | None, end: float | None, origin: float | None
) -> tuple[float | None, float | None]:
    """`start` and `end`, read on the axis whose origin is `origin`, in simulated seconds."""
    if origin is None:
        return start, end

    def sim(x: float | None) -> float | None:
        return None if x is None else (x - origin) / 1000.0

    return sim(start), sim(end)
