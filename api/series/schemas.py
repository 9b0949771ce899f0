"""Bodies of the series endpoints."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from engine.result import Thinning


class SeriesInfo(BaseModel):
    key: str = Field(
        description="flow.<id>.<metric>, link.<id>.<from>><to>.<metric>, pvc.<id>.<metric>"
    )
    unit: str
    length: int = Field(description="Samples stored")
    t_start: float | None
    t_end: float | None
    thinning: Thinning | None = Field(
        default=None,
        description="How the recorder thinned it to its share of the run's points; null: "
        "every point it recorded is stored",
    )


class SeriesIndex(BaseModel):
    run_id: str
    partial: bool = Field(
        default=False,
        description="True while the run is running: the series as far as its last snapshot "
        "goes (stored every few seconds), which grow until the run ends; a key not recorded "
        "yet is empty",
    )
    series: list[SeriesInfo]


class SeriesData(BaseModel):
    key: str
    unit: str
    length: int = Field(description="Samples in [start, end] before downsampling")
    points: int = Field(description="Samples returned")
    downsampled: bool
    method: str = Field(
        description="`none`, `minmax-lttb`, or `rate-<agg>` / `step-<agg>` (time buckets)"
    )
    t: list[float] = Field(
        description="Simulated seconds; epoch milliseconds from the run's start with `time=epoch_ms`"
    )
    v: list[float | None]
    partial: bool = Field(
        default=False,
        description="True while the run is running: the series as far as its last snapshot "
        "goes (stored every few seconds), which grow until the run ends; a key not recorded "
        "yet is empty",
    )


class SeriesFrame(BaseModel):
    """Several series on one time axis (wide: `t` plus one column per key, each value the
    last sample at or before `t`, null before the first), or stacked (long: `t`, `key`,
    `value` columns). Columnar JSON, as Grafana's JSON data sources read it."""

    shape: Literal["wide", "long"]
    keys: list[str]
    units: dict[str, str]
    columns: dict[str, list[float | str | None]]
    partial: bool = Field(
        default=False,
        description="True while the run is running: the series as far as its last snapshot "
        "goes (stored every few seconds), which grow until the run ends; a key not recorded "
        "yet is empty",
    )
