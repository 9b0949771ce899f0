"""What a task does with a run: claim it, simulate it with a heartbeat, persist the result.

The task in ``worker.tasks`` only wires Celery to this; everything here takes plain
arguments, so it reads (and is tested) without Celery.
"""

from __future__ import annotations

import logging
import threading
import traceback
import uuid
from dataclasses import dataclass, field
from functools import cached_property

from sqlalchemy.orm import Session, sessionmaker

from store.codec import CODEC, encode
from store.config import Settings
from store.db import make_engine, make_sessionmaker, session_scope
from store.models import RunResult, RunSeries, RunStatus
from store.runs import ResultRepository, RunRepository

log = logging.getLogger(__name__)

# Result fields with columns of their own; anything else the engine adds goes to `extra`.
_RESULT_COLUMNS = {
    "engine_version",
    "scenario_hash",
    "seed",
    "sim_time",
    "wall_time",
    "events",
    "warnings",
    "flows",
    "links",
    "pvcs",
    "diagnosis",
    "series",
    "cancelled",
}


@dataclass
class Heartbeat:
    """A thread that records liveness and progress on the run row every interval and
    reads the cancel flag, so ``should_stop`` costs the simulator nothing."""

    sessions: sessionmaker[Session]
    run_id: uuid.UUID
    task_id: str
    interval: float
    progress: float = 0.0
    stop_requested: threading.Event = field(default_factory=threading.Event)
    _done: threading.Event = field(default_factory=threading.Event)

    @cached_property
    def _thread(self) -> threading.Thread:
        return threading.Thread(target=self._loop, name=f"heartbeat-{self.run_id}", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(timeout=self.interval + 5)

    def report(self, fraction: float) -> None:
        self.progress = min(max(float(fraction), 0.0), 1.0)

    def should_stop(self) -> bool:
        return self.stop_requested.is_set()

    def _loop(self) -> None:
        while not self._done.wait(self.interval):
            try:
                with session_scope(self.sessions) as session:
                    cancel = RunRepository(session).heartbeat(
                        self.run_id, task_id=self.task_id, progress=self.progress
                    )
            except Exception:  # a missed beat is not fatal; the lease is several beats long
                log.warning("heartbeat for run %s failed", self.run_id, exc_info=True)
                continue
            # None: the run is no longer ours (taken back or finished): stop as well.
            if cancel is None or cancel:
                self.stop_requested.set()


class Runner:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.sessions = make_sessionmaker(make_engine(settings))

    def run(self, run_id: uuid.UUID, *, task_id: str, worker: str) -> RunStatus | None:
        """Simulate one run. Returns its final status, or None when there was nothing to do
        (finished already, cancelled, or being run by a live worker)."""
        import engine

        with session_scope(self.sessions) as session:
            runs = RunRepository(session)
            if not runs.claim(
                run_id, task_id=task_id, worker=worker, lease=self.settings.run_lease
            ):
                log.info("run %s: nothing to do (finished or owned elsewhere)", run_id)
                return None
            run = runs.get(run_id)
            assert run is not None
            scenario_doc, seed, attempts = run.scenario, run.seed, run.attempts

        if attempts > self.settings.max_attempts:
            # Its worker died under it every time (killed at the hard time limit, out of
            # memory): a redelivery must not start it once more.
            error = {
                "type": "TooManyAttempts",
                "message": f"the worker running it was lost {attempts - 1} times "
                "(hard time limit or out of memory?)",
            }
            return self._finish(run_id, task_id, RunStatus.failed, error=error)

        try:
            scenario = engine.Scenario.model_validate(scenario_doc)
            with Heartbeat(
                self.sessions, run_id, task_id, self.settings.heartbeat_interval
            ) as beat:
                result = engine.simulate(
                    scenario, seed=seed, progress=beat.report, should_stop=beat.should_stop
                )
        except engine.SimulationCancelled:
            return self._finish(run_id, task_id, RunStatus.cancelled)
        except Exception as exc:
            # SoftTimeLimitExceeded lands here too: a run over its time limit fails.
            log.exception("run %s failed", run_id)
            error = {
                "type": type(exc).__name__,
                "message": str(exc) or type(exc).__name__,
                "traceback": traceback.format_exc(limit=20)[-4000:],
            }
            return self._finish(run_id, task_id, RunStatus.failed, error=error)
        if getattr(result, "cancelled", False):
            return self._finish(run_id, task_id, RunStatus.cancelled)
        return self._store(run_id, task_id, result)

    def _finish(
        self, run_id: uuid.UUID, task_id: str, status: RunStatus, error: dict | None = None
    ) -> RunStatus | None:
        with session_scope(self.sessions) as session:
            done = RunRepository(session).finish(
                run_id, task_id=task_id, status=status, error=error
            )
        return status if done else None

    def _store(self, run_id: uuid.UUID, task_id: str, result: object) -> RunStatus | None:
        """The result, its series and the status change in one transaction, or none of them."""
        data = result.model_dump(mode="python", exclude={"series"})  # type: ignore[attr-defined]
        row = RunResult(
            run_id=run_id,
            engine_version=data["engine_version"],
            scenario_hash=data["scenario_hash"],
            seed=data["seed"],
            sim_time=data["sim_time"],
            wall_time=data["wall_time"],
            events=data["events"],
            warnings=list(data.get("warnings") or []),
            flows=data.get("flows") or {},
            links=data.get("links") or {},
            pvcs=data.get("pvcs") or {},
            diagnosis=data.get("diagnosis") or {},
            extra={k: v for k, v in data.items() if k not in _RESULT_COLUMNS},
        )
        series = [_series_row(run_id, key, s) for key, s in result.series.items()]  # type: ignore[attr-defined]
        try:
            with session_scope(self.sessions) as session:
                if not RunRepository(session).finish(
                    run_id, task_id=task_id, status=RunStatus.succeeded
                ):
                    raise _LostRun
                ResultRepository(session).add(row, series)
        except _LostRun:
            log.info("run %s changed hands while simulating; result dropped", run_id)
            return None
        return RunStatus.succeeded


class _LostRun(Exception):
    """The run stopped being this task's while it simulated: roll the result back."""


def _series_row(run_id: uuid.UUID, key: str, series: object) -> RunSeries:
    t = list(series.t)  # type: ignore[attr-defined]
    return RunSeries(
        run_id=run_id,
        key=key,
        unit=series.unit,  # type: ignore[attr-defined]
        length=len(t),
        t_start=t[0] if t else None,
        t_end=t[-1] if t else None,
        codec=CODEC,
        t=encode(t),
        v=encode(series.v),  # type: ignore[attr-defined]
    )
