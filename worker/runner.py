"""What a task does with a run: claim it, simulate it with a heartbeat, persist the result.

The task in ``worker.tasks`` only wires Celery to this; everything here takes plain
arguments, so it reads (and is tested) without Celery.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy.orm import Session, sessionmaker

from settings import Settings
from store.db import database_unavailable, make_engine, make_sessionmaker, session_scope
from store.models import RunStatus
from store.results import ResultRepository, pack, pack_series
from store.runs import RunRepository
from worker.memory import RunOverMemory

if TYPE_CHECKING:  # the engine itself is imported when a run starts (see Runner.run)
    from engine.result import Result, Series

log = logging.getLogger(__name__)
T = TypeVar("T")


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
    lost: threading.Event = field(default_factory=threading.Event)  # no longer this task's
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
        # Rounded here, where a run's progress becomes data: the row, its JSON and its
        # stream then say 0.1, not the simulated clock's 0.09999999999999999.
        self.progress = round(min(max(float(fraction), 0.0), 1.0), 4)

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
            if cancel is None:
                self.lost.set()
            if cancel is None or cancel:
                self.stop_requested.set()


#: A snapshot may take at most this share of a run's wall time: the next waits the longer of
#: the interval and this many times the last one's cost (a big run's series take a while).
SNAPSHOT_COST_SHARE = 0.1


@dataclass
class Snapshots:
    """The engine's snapshot hook for one run: the series so far replace the stored ones at
    most every ``interval`` seconds of wall time, the first after one interval, so a short
    run writes none. Written from the simulating thread between slices: the run waits for
    the write, which the cost share bounds."""

    sessions: sessionmaker[Session]
    run_id: uuid.UUID
    task_id: str
    interval: float
    _next: float = field(default=0.0)

    def __post_init__(self) -> None:
        self._next = time.monotonic() + self.interval

    def __call__(self, now: float, read: Callable[[], dict[str, Series]]) -> None:
        began = time.monotonic()
        if began < self._next:
            return
        try:
            packed = pack_series(read())
            with session_scope(self.sessions) as session:
                ResultRepository(session).save_partial(
                    self.run_id, task_id=self.task_id, series=packed
                )
        except Exception:  # a missed snapshot costs a chart some freshness, not the run
            log.warning("series snapshot of run %s failed", self.run_id, exc_info=True)
        spent = time.monotonic() - began
        self._next = began + max(self.interval, spent / SNAPSHOT_COST_SHARE)


class Runner:
    def __init__(
        self,
        settings: Settings,
        *,
        sessions: sessionmaker[Session] | None = None,
        on_finished: Callable[[uuid.UUID], None] | None = None,
    ) -> None:
        self.settings = settings
        self.sessions = sessions or make_sessionmaker(make_engine(settings))
        # Told each run this runner ended, once its end is committed (a workflow waiting
        # on it takes its next step: ``worker.workflows``).
        self.on_finished = on_finished

    def run(self, run_id: uuid.UUID, *, task_id: str, worker: str) -> RunStatus | None:
        """Simulate one run. Returns its final status, or None when there was nothing to do
        (finished already, cancelled, or being run by a live worker)."""
        status = self._run(run_id, task_id=task_id, worker=worker)
        if status is not None and self.on_finished is not None:
            self.on_finished(run_id)
        return status

    def _run(self, run_id: uuid.UUID, *, task_id: str, worker: str) -> RunStatus | None:
        import engine

        # A database away at this point raises: nothing is simulated yet, so the task's
        # own retry (see worker.tasks) is the cheap way to try again.
        with session_scope(self.sessions) as session:
            runs = RunRepository(session)
            # A run whose worker died under it every time (hard time limit, out of memory)
            # is failed here rather than started once more.
            if not runs.claim(
                run_id,
                task_id=task_id,
                worker=worker,
                lease=self.settings.run_lease,
                max_attempts=self.settings.max_attempts,
            ):
                log.info(
                    "run %s: nothing to do (finished, owned elsewhere, or over budget)", run_id
                )
                return None
            run = runs.get(run_id)
            assert run is not None
            scenario_doc, seed = run.scenario, run.seed

        with Heartbeat(self.sessions, run_id, task_id, self.settings.heartbeat_interval) as beat:
            snapshots = None
            if self.settings.series_snapshot_interval > 0:
                snapshots = Snapshots(
                    self.sessions, run_id, task_id, self.settings.series_snapshot_interval
                )
            try:
                scenario = engine.Scenario.model_validate(scenario_doc)
                result = engine.simulate(
                    scenario,
                    seed=seed,
                    progress=beat.report,
                    should_stop=beat.should_stop,
                    snapshot=snapshots,
                )
            except engine.SimulationCancelled:
                return self._finish(run_id, task_id, RunStatus.cancelled, beat=beat)
            except Exception as exc:
                return self._failed(run_id, task_id, exc, beat)
            # The heartbeat goes on while the result is stored, retries included: the run
            # stays visibly alive, so the reconciler does not hand it to another worker.
            beat.report(1.0)
            try:
                return self._store(run_id, task_id, result, beat=beat)
            except MemoryError as exc:  # packing it for the database took the rest
                del result
                return self._failed(run_id, task_id, exc, beat)

    def _failed(
        self, run_id: uuid.UUID, task_id: str, exc: BaseException, beat: Heartbeat
    ) -> RunStatus | None:
        """The run failed: recorded with its reason in words, never tried again."""
        # SoftTimeLimitExceeded lands here too: a run over its time limit fails, saying
        # so in words (Celery's exception carries no message); as does a run past its
        # memory ceiling (worker.memory: any allocation in it may be the one refused).
        trace = "".join(traceback.format_exception(exc, limit=20))[-4000:]
        log.error("run %s failed: %s\n%s", run_id, type(exc).__name__, trace)
        # The frames of the failed simulation hold all it built: let them go before the
        # failure is written (after a MemoryError that memory is what writing needs).
        traceback.clear_frames(exc.__traceback__)
        if isinstance(exc, MemoryError) and not isinstance(exc, RunOverMemory):
            exc = RunOverMemory(self.settings.max_run_memory)
        message = str(exc) or type(exc).__name__
        if type(exc).__name__ == "SoftTimeLimitExceeded":
            message = (
                "the simulation exceeded the time limit of "
                f"{self.settings.task_soft_time_limit:g} s and was stopped "
                "(TCPFR_TASK_SOFT_TIME_LIMIT); POST /v1/scenarios/validate estimates "
                "a scenario's cost"
            )
        error = {
            "type": type(exc).__name__,
            "message": message,
            "traceback": trace,
        }
        return self._finish(run_id, task_id, RunStatus.failed, error=error, beat=beat)

    def _persist(
        self, run_id: uuid.UUID, write: Callable[[Session, int], T], beat: Heartbeat | None
    ) -> T | None:
        """Run ``write`` in a transaction, again with backoff while the database is away
        (a restart, a failover), for up to ``persist_retry_for`` seconds; then raise, and
        the task's retry takes over. None when the run stopped being ours meanwhile."""
        deadline = time.monotonic() + self.settings.persist_retry_for
        delay, attempt = 0.25, 1
        while True:
            try:
                with session_scope(self.sessions) as session:
                    return write(session, attempt)
            except Exception as exc:
                if not database_unavailable(exc) or time.monotonic() + delay > deadline:
                    raise
                if beat is not None and beat.lost.is_set():
                    log.info("run %s was taken back while the database was away", run_id)
                    return None
                log.warning(
                    "run %s: database unavailable (%s); writing again in %.2f s (try %d)",
                    run_id,
                    type(exc).__name__,
                    delay,
                    attempt + 1,
                )
            time.sleep(delay)
            delay, attempt = min(delay * 2, 5.0), attempt + 1

    def _finish(
        self,
        run_id: uuid.UUID,
        task_id: str,
        status: RunStatus,
        error: dict | None = None,
        beat: Heartbeat | None = None,
    ) -> RunStatus | None:
        def write(session: Session, attempt: int) -> bool:
            # A run that did not succeed shows no series: `finish` drops its snapshots.
            return RunRepository(session).finish(
                run_id,
                task_id=task_id,
                status=status,
                error=error,
                write_attempts=attempt if attempt > 1 else None,
            )

        return status if self._persist(run_id, write, beat) else None

    def _store(
        self, run_id: uuid.UUID, task_id: str, result: Result, beat: Heartbeat
    ) -> RunStatus | None:
        """The result, its series and the status change in one transaction, or none of them."""
        # Packed once, before the transaction: a retry writes the same bytes again.
        packed = pack(result)

        def write(session: Session, attempt: int) -> bool:
            if not RunRepository(session).finish(
                run_id,
                task_id=task_id,
                status=RunStatus.succeeded,
                write_attempts=attempt if attempt > 1 else None,
            ):
                return False
            ResultRepository(session).save(run_id, packed)
            return True

        if not self._persist(run_id, write, beat):
            # Finished or taken back by someone else while we simulated (or stored: a
            # commit whose answer was lost and that did land is found here on the retry).
            log.info("run %s is no longer this task's; result dropped", run_id)
            return None
        return RunStatus.succeeded
