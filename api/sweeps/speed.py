"""How fast this deployment simulates, for a sweep's time estimate (dry run, time left).

A sweep's wall time is about (events + per-run overhead) / engine speed, summed over the
runs to simulate, over the workers. The overhead of a run (the engine's setup, a worker
claiming the run, loading it, storing its result and series, the hand-over through the
broker) is counted in events, `TCPFR_SWEEP_RUN_OVERHEAD_EVENTS`: it is Python work that
slows down with the machine as the engine does (bench/estimate_bench.py: 0.12 s per run at
184k events/s, 0.2-0.45 s at 70-100k events/s: about 25,000 events' worth).

The engine speed is measured, not assumed: the events per second of the last runs this
service simulated (their Results hold both, less the engine's setup), so a machine slower
or busier than the one `TCPFR_ENGINE_EVENTS_PER_SECOND` was measured on is priced as it
is. Before there are enough runs, a short simulation in a thread measures it (`probe`);
failing that, the setting.
"""

from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass, replace
from typing import Literal

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from settings import Settings
from store.models import RunResult

RECENT = 200  # runs the speed is measured over
MIN_RUNS = 5  # fewer and the probe (or the setting) is used
MIN_SECONDS = 1.0  # of engine time among them
TTL = 5.0  # seconds a measurement is reused (per process): a sweep takes longer
PROBE_TTL = 60.0
# Seconds of a run's engine time that do not depend on its size (building the network,
# finalising the Result): a 5,000-event run spends about half its engine time there, so
# without it small runs would make the engine look half as fast as it is on large ones.
ENGINE_SETUP_SECONDS = 0.04


@dataclass(frozen=True, slots=True)
class Speed:
    events_per_second: float
    run_overhead_events: int
    basis: Literal["measured", "probe", "setting"]
    runs: int  # the runs measured (0 otherwise)

    @property
    def run_overhead_seconds(self) -> float:
        return self.run_overhead_events / self.events_per_second


_cache: dict[str, tuple[float, Speed]] = {}
_probe: list[tuple[float, float]] = []  # (when, events per second)
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
        .subquery()
    )
    # The engine time that grows with the events: less the setup, at least a tenth.
    sized = func.greatest if session.get_bind().dialect.name == "postgresql" else func.max
    scaled = sized(recent.c.wall_time - ENGINE_SETUP_SECONDS, recent.c.wall_time * 0.1)
    n, events, seconds = session.execute(
        select(func.count(), func.sum(recent.c.events), func.sum(scaled))
    ).one()
    found = setting(settings)
    if n >= MIN_RUNS and seconds and seconds >= MIN_SECONDS and events:
        found = Speed(
            float(events) / float(seconds), settings.sweep_run_overhead_events, "measured", int(n)
        )
    _cache[key] = (time.monotonic(), found)
    return found


def probe(settings: Settings) -> Speed:
    """The engine's speed on this machine now, from a short simulation (~0.2 s): for a
    service that has not simulated enough yet. Blocking: call it in a thread."""
    import engine
    from engine.example import EXAMPLE_SCENARIO

    with _probe_lock:
        if _probe and time.monotonic() - _probe[0][0] < PROBE_TTL:
            eps = _probe[0][1]
        else:
            body = copy.deepcopy(EXAMPLE_SCENARIO)
            body["flows"][0]["bytes"] = "10MB"  # ~20k events: the setup is a small part
            try:
                result = engine.simulate(engine.Scenario.model_validate(body))
            except Exception:  # noqa: BLE001 - an estimate must not fail a dry run
                return setting(settings)
            busy = max(result.wall_time - ENGINE_SETUP_SECONDS, result.wall_time * 0.1)
            eps = result.events / busy if busy > 0 else settings.engine_events_per_second
            _probe[:] = [(time.monotonic(), eps)]
    return replace(setting(settings), events_per_second=eps, basis="probe")


def wall_seconds(events: int, runs: int, workers: int, s: Speed) -> tuple[float, float]:
    """(cpu seconds, wall seconds) of `runs` runs totalling `events` on `workers`."""
    cpu = (events + runs * s.run_overhead_events) / s.events_per_second
    # Fewer runs than workers leave workers idle.
    return cpu, cpu / max(1, min(workers, runs)) if runs else 0.0
