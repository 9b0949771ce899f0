"""How fast this deployment simulates, for a sweep's time estimate (dry run, time left).

A sweep's wall time is about (events + per-run overhead) / engine speed, summed over the
runs to simulate, over the workers. The overhead of a run (the engine's setup, a worker
claiming the run, loading it, storing its result and series, the hand-over through the
broker) is counted in events, `TCPFR_SWEEP_RUN_OVERHEAD_EVENTS`: it is Python work that
slows down with the machine as the engine does (bench/estimate_bench.py: 0.12 s per run at
184k events/s, 0.2-0.45 s at 70-100k events/s: about 25,000 events' worth).

The engine speed is measured, not assumed: a run's engine time is a fixed setup (building
the network, finalising the Result) plus a cost per event, fitted by least squares over the
last runs this service simulated (their Results hold both figures), so a machine slower or
busier than the one `TCPFR_ENGINE_EVENTS_PER_SECOND` was measured on is priced as it is,
and a sweep of large runs is priced by the per-event cost, not by small runs' time, most of
which is setup. The fit needs runs of different sizes (the largest several times the
smallest): without them the two parts cannot be told apart, and a short probe of two sizes
in a thread measures them (`probe`); failing that, the setting.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from settings import Settings
from store.models import RunResult

RECENT = 200  # runs the speed is fitted over
MIN_RUNS = 5  # fewer and the probe (or the setting) is used
MIN_SECONDS = 1.0  # of engine time among them
#: A fit tells the setup from the per-event cost only with runs of different sizes: at
#: least MIN_LARGE runs with MIN_SPREAD times the events of the smallest tenth.
MIN_SPREAD = 4.0
MIN_LARGE = 3
TTL = 5.0  # seconds a measurement is reused (per process): a sweep takes longer
PROBE_TTL = 60.0
#: The probe's two transfers: ~4k and ~20k events, ~0.05 s and ~0.2 s.
PROBE_SIZES = ("2MB", "10MB")


@dataclass(frozen=True, slots=True)
class Fit:
    """A run's engine seconds = setup_seconds + events x seconds_per_event."""

    setup_seconds: float
    seconds_per_event: float
    runs: int

    @property
    def events_per_second(self) -> float:
        return 1.0 / self.seconds_per_event


def fit(
    samples: Sequence[tuple[float, float]],
    *,
    min_runs: int = MIN_RUNS,
    min_seconds: float = MIN_SECONDS,
) -> Fit | None:
    """The setup and per-event cost that best explain these runs' (events, engine seconds),
    by least squares; None when there are too few runs, too little time among them, or
    sizes too alike to tell the two parts apart (then nothing is extrapolated)."""
    data = np.array(samples, dtype=float).reshape(-1, 2)
    data = data[np.isfinite(data).all(axis=1) & (data > 0).all(axis=1)]
    if len(data) < min_runs or data[:, 1].sum() < min_seconds:
        return None
    x, y = data[:, 0], data[:, 1]
    large = np.count_nonzero(x >= MIN_SPREAD * np.percentile(x, 10))
    if large < min(MIN_LARGE, min_runs - 1):
        return None
    slope, intercept = np.polyfit(x, y, 1)
    if intercept < 0:  # a setup cannot take negative time: the best line through 0
        slope, intercept = float(x @ y / (x @ x)), 0.0
    if not slope > 0:
        return None
    return Fit(float(intercept), float(slope), len(data))


@dataclass(frozen=True, slots=True)
class Speed:
    events_per_second: float
    run_overhead_events: int
    basis: Literal["measured", "probe", "setting"]
    runs: int  # the runs measured (0 otherwise)
    setup_seconds: float = 0.0  # the engine's fixed part of a run, fitted (0: not measured)

    @property
    def run_overhead_seconds(self) -> float:
        return self.run_overhead_events / self.events_per_second


_cache: dict[str, tuple[float, Speed]] = {}
_probe: list[tuple[float, Speed]] = []  # (when, what it found)
_probe_lock = threading.Lock()


def setting(settings: Settings) -> Speed:
    return Speed(
        settings.engine_events_per_second, settings.sweep_run_overhead_events, "setting", 0
    )


def speed(session: Session, settings: Settings) -> Speed:
    """Measured over the last runs, or the setting (see `probe`) when there are too few."""
    key = str(session.get_bind().engine.url)
    hit = _cache.get(key)
    if hit is not None and time.monotonic() - hit[0] < TTL:
        return hit[1]
    recent = (
        select(RunResult.events, RunResult.wall_time)
        .order_by(RunResult.created_at.desc())
        .limit(RECENT)
    )
    found = setting(settings)
    if (got := fit([(float(e), float(w)) for e, w in session.execute(recent)])) is not None:
        found = _fitted(settings, got, "measured")
    _cache[key] = (time.monotonic(), found)
    return found


def probe(settings: Settings) -> Speed:
    """The engine's speed on this machine now, fitted to two short simulations of different
    sizes (~0.25 s): for a service that has not simulated runs of different sizes yet.
    Blocking: call it in a thread."""
    import engine
    from engine.example import EXAMPLE_SCENARIO

    with _probe_lock:
        if _probe and time.monotonic() - _probe[0][0] < PROBE_TTL:
            return _probe[0][1]
        samples = []
        for size in PROBE_SIZES:
            body = copy.deepcopy(EXAMPLE_SCENARIO)
            body["flows"][0]["bytes"] = size
            try:
                result = engine.simulate(engine.Scenario.model_validate(body))
            except Exception:  # noqa: BLE001 - an estimate must not fail a dry run
                return setting(settings)
            samples.append((float(result.events), float(result.wall_time)))
        got = fit(samples, min_runs=2, min_seconds=0.0)
        if got is None:  # timing noise: the larger run's whole time, setup and all
            events, seconds = samples[-1]
            got = Fit(0.0, seconds / events, 1)
        found = _fitted(settings, got, "probe")
        _probe[:] = [(time.monotonic(), found)]
    return found


def _fitted(settings: Settings, got: Fit, basis: Literal["measured", "probe"]) -> Speed:
    return Speed(
        got.events_per_second,
        settings.sweep_run_overhead_events,
        basis,
        got.runs if basis == "measured" else 0,
        round(got.setup_seconds, 6),
    )


def wall_seconds(events: int, runs: int, workers: int, s: Speed) -> tuple[float, float]:
    """(cpu seconds, wall seconds) of `runs` runs totalling `events` on `workers`."""
    cpu = (events + runs * s.run_overhead_events) / s.events_per_second
    # Fewer runs than workers leave workers idle.
    return cpu, cpu / max(1, min(workers, runs)) if runs else 0.0
