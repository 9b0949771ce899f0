"""The reconciler: the database is the truth, the broker a delivery service that can lose
things. Each pass sends again the runs a worker should have but does not:

- queued runs never sent (the broker was down at submit time, or a send failed);
- running runs whose heartbeat is older than ``run_lease`` (their worker, or its host, is
  gone): taken back and sent again;
- queued runs sent longer than ``queued_lease`` ago and not taken while the broker's queue
  is empty (the broker was restarted or flushed): their message is gone, so sent again.

A run taken back or sent again ``max_attempts`` times fails with ``RetryBudgetExceeded``
instead of looping. A workflow (advice, a remedy check) that went quiet with no run left
to wait for is sent another step (``worker.workflows``; a step with nothing new does
nothing). Every step is a conditional update recorded in the run's history, so
several processes could reconcile at once; on PostgreSQL one does (``Leadership``): the
others pass their turns until it goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
import time
import uuid
from dataclasses import dataclass

import anyio
from celery import Celery
from sqlalchemy import Connection, Engine
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session, sessionmaker

from messaging import queue_depth, send_advance, send_run
from settings import Settings
from store.db import database_unavailable, lock_timed_out, session_scope, wait_for_locks
from store.models import Run, RunStatus
from store.run_events import EventKind
from store.runs import RunRepository
from store.workflows import WorkflowRepository

log = logging.getLogger(__name__)


@dataclass
class Pass:
    """What one pass did."""

    sent: int = 0
    requeued: int = 0
    failed: int = 0
    woken: int = 0  # workflows sent a step


def _budget_error(run: Run, requeues: int, settings: Settings) -> dict[str, str]:
    return {
        "type": "RetryBudgetExceeded",
        "message": f"started {run.attempts} times and sent again {requeues} times without "
        f"finishing (max_attempts={settings.max_attempts}): its workers keep getting lost, "
        "or its messages do",
    }


def reconcile_once(
    sessions: sessionmaker[Session],
    celery: Celery,
    settings: Settings,
    *,
    take_back_running: bool = True,
) -> Pass:
    """One pass. ``take_back_running=False`` leaves running runs alone: right after the
    database itself was away, a stale heartbeat says nothing about the worker."""
    done = Pass()
    with session_scope(sessions) as session:
        runs = RunRepository(session)
        # run -> why it is sent by us (None: the reason is on its `requeued` event)
        to_send: dict[Run, str | None] = {
            run: "never sent: the broker did not take it when it was submitted"
            for run in runs.never_sent()
        }
        silent = runs.silent(run_lease=settings.run_lease) if take_back_running else []
        unclaimed = runs.unclaimed(queued_lease=settings.queued_lease)
    if unclaimed:
        try:
            waiting = queue_depth(celery, settings.queue)
        except Exception:
            log.warning("reconciler could not reach the broker", exc_info=True)
            return done
        if waiting:
            # Messages are still waiting: these runs are presumably among them, behind a
            # backlog (a big sweep), not lost.
            unclaimed = []
    # Each run's requeues so far, in one statement, once the broker has had its say (a
    # backlog of a big sweep's runs left waiting in the queue needs none).
    requeues: dict[uuid.UUID, int] = {}
    if silent or unclaimed:
        with session_scope(sessions) as session:
            ids = [r.id for r in [*silent, *unclaimed]]
            requeues = RunRepository(session).events.counts(ids, EventKind.requeued)

    for run, reason in [
        *((r, "lease expired: the worker running it stopped beating") for r in silent),
        *(
            (r, "message lost: queued, not taken, and the broker's queue is empty")
            for r in unclaimed
        ),
    ]:
        try:
            _take_back(sessions, run, reason, requeues.get(run.id, 0), settings, done, to_send)
        except Exception as exc:
            if not lock_timed_out(exc):
                raise
            # Its row is locked by a session whose machine is gone (its transaction ends
            # at the server's idle-in-transaction timeout): the others go on meanwhile,
            # and the next pass tries this one again.
            log.warning("run %s: its row is locked; taken back on a later pass", run.id)

    _send(sessions, celery, to_send, done)
    if done.sent or done.failed:
        log.info(
            "reconciler: %d sent, %d taken back, %d failed", done.sent, done.requeued, done.failed
        )
    done.woken = _wake_workflows(sessions, celery, settings)
    return done


def _send(
    sessions: sessionmaker[Session], celery: Celery, to_send: dict[Run, str | None], done: Pass
) -> None:
    """Send each run again, recording why (None: its `requeued` event says)."""
    for run, why in to_send.items():
        try:
            send_run(celery, run.id)
        except Exception:
            # It stays queued and unsent: the next pass tries again.
            log.warning("reconciler could not reach the broker", exc_info=True)
            return
        with session_scope(sessions) as session:
            if RunRepository(session).mark_enqueued(run.id, by="reconciler", reason=why):
                done.sent += 1


#: Seconds a pass waits for a run's row lock before leaving that run to the next pass.
LOCK_WAIT = 2.0


def _take_back(
    sessions: sessionmaker[Session],
    run: Run,
    reason: str,
    requeues: int,
    settings: Settings,
    done: Pass,
    to_send: dict[Run, str | None],
) -> None:
    """Requeue one stale run to be sent again, or fail it past its retry budget."""
    with session_scope(sessions) as session:
        wait_for_locks(session, LOCK_WAIT)
        runs = RunRepository(session)
        if max(run.attempts, requeues) >= settings.max_attempts:
            error = _budget_error(run, requeues, settings)
            guard = (
                [Run.heartbeat_at == run.heartbeat_at]
                if run.status is RunStatus.running
                else [Run.enqueued_at == run.enqueued_at]
            )
            if runs.fail(run.id, error=error, where=[*guard, Run.attempts == run.attempts]):
                done.failed += 1
                log.warning("run %s failed: %s", run.id, error["message"])
            return
        if runs.requeue(run, reason=reason, run_lease=settings.run_lease):
            done.requeued += 1
            to_send[run] = None
            log.info("run %s taken back (%s)", run.id, reason)


def _wake_workflows(sessions: sessionmaker[Session], celery: Celery, settings: Settings) -> int:
    with session_scope(sessions) as session:
        stalled = WorkflowRepository(session).stalled(quiet_for=settings.workflow_lease)
    woken = 0
    for workflow_id in stalled:
        try:
            send_advance(celery, workflow_id)
        except Exception:
            log.warning("reconciler could not reach the broker", exc_info=True)
            break
        woken += 1
    if woken:
        log.info("reconciler: %d quiet workflows sent a step", woken)
    return woken


#: The PostgreSQL advisory lock the reconciling process holds: a bigint of its own (the
#: first 8 bytes of sha256("tcpfr.reconciler")); advisory locks are per database, so two
#: deployments on one server do not meet.
LEADER_LOCK = int.from_bytes(hashlib.sha256(b"tcpfr.reconciler").digest()[:8], "big", signed=True)


class Leadership:
    """Whether this process is the one that reconciles. On PostgreSQL, the holder of a
    session-level advisory lock (LEADER_LOCK) on a connection of its own: every API process
    of a deployment (each of a container's, each container's) runs the loop, the first to
    take the lock reconciles and the others pass their turns, at one short connection a
    turn. The server frees the lock when its holder's connection ends (its process exits,
    its host or network goes: the keepalives end it), and the next to try takes it, one
    reconcile_interval later. The holder checks its connection each turn: one it lost is
    a turn passed, not a second reconciler. On SQLite (one machine): always this one.
    Used from one thread at a time (the loop's)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._conn: Connection | None = None

    def held(self) -> bool:
        if self._engine.dialect.name != "postgresql":
            return True
        if self._conn is not None:
            try:
                self._conn.exec_driver_sql("SELECT 1").scalar()
                return True
            except sa_exc.DBAPIError:
                log.warning("reconciler: lost the connection that held the lock; passing")
                self.release()
                return False
        conn = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            taken = conn.exec_driver_sql(
                "SELECT pg_try_advisory_lock(%(key)s)", {"key": LEADER_LOCK}
            ).scalar()
        except BaseException:
            conn.invalidate()
            conn.close()
            raise
        if not taken:
            conn.close()  # another process reconciles: hold no connection for nothing
            return False
        log.info("reconciler: this process reconciles (it holds the lock)")
        self._conn = conn
        return True

    def release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.invalidate()  # the server ends the session, and the lock with it
            conn.close()


def _turn(
    leadership: Leadership,
    sessions: sessionmaker[Session],
    celery: Celery,
    settings: Settings,
    *,
    take_back_running: bool,
) -> Pass | None:
    """One turn of the loop: a pass if this process reconciles, else None."""
    if not leadership.held():
        return None
    return reconcile_once(sessions, celery, settings, take_back_running=take_back_running)


async def reconcile_forever(
    sessions: sessionmaker[Session], celery: Celery, settings: Settings
) -> None:
    # Since when the database has answered every pass: a worker cannot beat while the
    # database is away, so running runs are judged only after a whole lease of answers.
    answering_since: float | None = None
    # One thread of its own: never one of the request path's, never more than one pass.
    thread = anyio.CapacityLimiter(1)
    leadership = Leadership(sessions.kw["bind"])
    try:
        while True:
            await asyncio.sleep(settings.reconcile_interval)
            answering_since = await _next_turn(
                leadership, sessions, celery, settings, thread, answering_since
            )
    finally:
        with contextlib.suppress(Exception):
            leadership.release()


async def _next_turn(
    leadership: Leadership,
    sessions: sessionmaker[Session],
    celery: Celery,
    settings: Settings,
    thread: anyio.CapacityLimiter,
    answering_since: float | None,
) -> float | None:
    """A turn, in the loop's thread; what answering_since is after it."""
    now = time.monotonic()
    settled = answering_since is not None and now - answering_since >= settings.run_lease
    try:
        await anyio.to_thread.run_sync(
            functools.partial(
                _turn, leadership, sessions, celery, settings, take_back_running=settled
            ),
            limiter=thread,
        )
    except Exception as exc:
        if database_unavailable(exc):  # expected during a restart: one line, no trace
            log.warning("reconciler: database unavailable (%s)", type(exc).__name__)
        else:
            log.warning("reconciler pass failed", exc_info=True)
        return None
    return now if answering_since is None else answering_since


def main() -> None:
    """``python -m api.reconciler``: the reconciler alone, as ``make run`` starts it (once,
    beside the API's processes, which then reconcile nothing)."""
    from messaging import make_celery
    from settings import get_settings
    from store.db import make_engine, make_sessionmaker

    settings = get_settings()
    logging.basicConfig(
        level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    engine = make_engine(settings, pool_size=1, max_overflow=1)
    celery = make_celery(settings, name="tcpfr-reconciler")
    try:
        asyncio.run(reconcile_forever(make_sessionmaker(engine), celery, settings))
    except KeyboardInterrupt:
        pass
    finally:
        engine.dispose()


if __name__ == "__main__":
    main()
