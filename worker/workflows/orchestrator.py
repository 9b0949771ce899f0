"""Driving workflows: steps until nothing is new, the runs each step made sent to the workers
after its commit; and, when a run ends, a step for each workflow waiting on it."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from celery import Celery
from sqlalchemy.orm import Session, sessionmaker

from messaging import send_advance, send_runs
from settings import Settings
from store.db import session_scope
from store.runs import RunRepository
from store.workflows import WorkflowRepository

if TYPE_CHECKING:  # the engine is imported by the first step, as by the first run
    from worker.workflows.kinds import Kind

log = logging.getLogger(__name__)


class Orchestrator:
    def __init__(
        self,
        settings: Settings,
        sessions: sessionmaker[Session],
        celery: Celery,
        *,
        known: Mapping[str, Kind] | None = None,
    ) -> None:
        self.settings = settings
        self.sessions = sessions
        self.celery = celery
        self.known = known

    def advance(self, workflow_id: uuid.UUID) -> int:
        """Steps of the workflow until one makes only runs that must be simulated (or none,
        or it finishes); returns how many steps did something. A step's new runs are sent
        once it is committed, as the API sends the runs it creates."""
        from worker.workflows.kinds import kinds
        from worker.workflows.step import step

        known = self.known if self.known is not None else kinds()
        taken = 0
        # Each step that loops makes at least one run within the budget: this bound is
        # never reached by a workflow that keeps its contract.
        for _ in range(self.settings.sweep_max_runs + 1):
            with session_scope(self.sessions) as session:
                done = step(session, workflow_id, kinds=known, settings=self.settings)
            if done is None:
                return taken
            taken += 1
            self.send(done.to_send)
            if not done.again:
                return taken
        log.warning("workflow %s: stopped stepping after %d steps", workflow_id, taken)
        return taken

    def send(self, run_ids: Sequence[uuid.UUID]) -> None:
        """Committed runs to the broker, recorded as `api.dispatch.enqueue` records them;
        those the broker refuses are left to the reconciler."""
        if not run_ids:
            return
        ids = list(run_ids)
        with session_scope(self.sessions) as session:
            RunRepository(session).mark_enqueued_many(ids)
        sent = send_runs(self.celery, ids)
        if len(sent) < len(ids):
            with session_scope(self.sessions) as session:
                RunRepository(session).mark_unsent(ids[len(sent) :])

    def run_finished(self, run_id: uuid.UUID) -> None:
        """A run has ended (its end is committed): a step for each workflow waiting on it.
        A lost message here is found by the reconciler (``WorkflowRepository.stalled``)."""
        try:
            with session_scope(self.sessions) as session:
                waiting = WorkflowRepository(session).waiting_on(run_id)
            for workflow_id in waiting:
                send_advance(self.celery, workflow_id)
        except Exception:
            log.warning("run %s: could not wake its workflow", run_id, exc_info=True)
