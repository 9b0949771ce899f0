"""How fast this deployment simulates, for a sweep's time estimate (dry run, time left).

A sweep's wall time is about (per-run overhead + engine setup + events / engine speed)
summed over the runs to simulate, over the workers. The engine speed is measured, not assumed: the events per
second of the last runs this service simulated (their Results hold both), so a machine
that is slower or busier than the one `TCPFR_ENGINE_EVENTS_PER_SECOND` was measured on is
priced as it is; with too few runs yet, the setting. The per-run overhead (a worker claims
the run, loads it, stores the result and its series, acknowledges; the API and broker pass
it on) is `TCPFR_SWEEP_RUN_OVERHEAD_SECONDS`, measured by bench/estimate_bench.py.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from store.config import Settings
from store.models import RunResult

RECENT = 200  # runs the speed is measured over
# Seconds of a run's engine time that do not depend on its size (building the network,
# finalising the Result): a 5,000-event run spends about half its engine time there, so
# without it small runs would make the engine look half as fast as it is on large ones.
ENGINE_SETUP_SECONDS = 0.04
MIN_RUNS = 5  # fewer and the setting is used
MIN_SECONDS = 1.0  # of engine time among them
TTL = 5.0  # seconds a measurement is reused (per process): a sweep takes longer

_cache: dict[str, tuple[float, Speed]] = {}


@dataclass(frozen=True, slots=True)
class Speed:
    events_per_second: float
    run_overhead_seconds: float
    basis: str  # "measured" | "setting"
    runs: int  # the runs measured (0 for the setting)


def speed(session: Session, settings: Settings) -> Speed:
    key = str(session.get_bind().url)
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
    found = Speed(settings.engine_events_per_second, settings.sweep_run_overhead_seconds,
                  "setting", 0)
    if n >= MIN_RUNS and seconds and seconds >= MIN_SECONDS and events:
        found = Speed(float(events) / float(seconds), settings.sweep_run_overhead_seconds,
                      "measured", int(n))
    _cache[key] = (time.monotonic(), found)
    return found


def wall_seconds(events: int, runs: int, workers: int, s: Speed) -> tuple[float, float]:
    """(cpu seconds, wall seconds) of `runs` runs totalling `events` on `workers`."""
    cpu = runs * (s.run_overhead_seconds + ENGINE_SETUP_SECONDS) + events / s.events_per_second
    # Fewer runs than workers leave workers idle.
    return cpu, cpu / max(1, min(workers, runs)) if runs else 0.0
