"""The worker's orchestration of multi-run workflows (``worker.workflows``), in process, on a
real Postgres database, with the real runner simulating each run and a real broker
receiving what is sent: steps that make each candidate's run once however often (and
however concurrently) they are taken, outcomes observed once, the result cache serving a
repeated workflow whole, a failing workflow leaving no half-made round behind.

The workflow here is a small real one (``Bisect``: the smallest receive buffer of a ladder
that meets a completion-time target, over ``simulate``'s results), so these tests do not
depend on the advisor's logic; tests/integration/test_advice.py drives the advisor and the
remedy check through the API and real worker processes."""

from __future__ import annotations

import secrets
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel
from servicekit import REDIS_URL, unavailable
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from engine import Scenario
from engine.presets import load_preset
from engine.version import ENGINE_VERSION
from engine.workflow import Candidate
from messaging import make_celery
from settings import Settings
from store.db import make_engine, make_sessionmaker, session_scope
from store.models import Run, RunStatus, StoredWorkflow, WorkflowRun, WorkflowStatus
from store.new_runs import scenario_document
from store.workflows import WorkflowRepository
from worker.runner import Runner
from worker.workflows.kinds import Kind
from worker.workflows.orchestrator import Orchestrator

pytestmark = pytest.mark.integration

BYTES = 1_000_000
LADDER = [8760, 17520, 35040, 65535]
TARGET = 15.0  # seconds


class BisectReport(BaseModel):
    best: int | None
    times: dict[str, float | None]


class Bisect:
    """The smallest receive buffer among `values` with which `flow` completes within
    `target` seconds (completion time falls as the window grows). Round 0 tries the
    smallest and the largest; each later round the middle of the bracket that is left."""

    def __init__(self, scenario: Scenario, request: dict[str, Any], state: dict | None = None):
        state = state or {}
        self.seed = scenario.seed
        self.flow = request["flow"]
        self.values = sorted(request["values"])
        self.target = float(request["target"])
        if request.get("explode"):
            raise RuntimeError("the workflow's own logic failed")
        self.times: dict[str, float | None] = dict(state.get("times", {}))
        self.asked: list[str] = list(state.get("asked", []))
        self.round: int = state.get("round", 0)

    @staticmethod
    def key(value: int) -> str:
        return f"rcv_buf={value}"

    def _met(self, value: int) -> bool:
        t = self.times.get(self.key(value))
        return t is not None and t <= self.target

    def _wanted(self) -> list[int]:
        if any(k not in self.times for k in self.asked):
            return []  # waiting
        if not self.asked:
            return [self.values[0], self.values[-1]]
        tried = [i for i, v in enumerate(self.values) if self.key(v) in self.times]
        met = [i for i in tried if self._met(self.values[i])]
        if not met:
            return []  # unreachable within the ladder
        hi = min(met)
        below = [i for i in tried if i < hi]
        if not below or hi - max(below) <= 1:
            return []
        return [self.values[(max(below) + hi) // 2]]

    def propose(self) -> list[Candidate]:
        fresh = [v for v in self._wanted() if self.key(v) not in self.asked]
        if not fresh:
            return []
        self.asked += [self.key(v) for v in fresh]
        path = f"flows.{self.flow}.tcp.rcv_buf"
        out = [
            Candidate(key=self.key(v), changes={path: v}, seed=self.seed, round=self.round)
            for v in fresh
        ]
        self.round += 1
        return out

    def observe(self, key: str, seed: int, summary: dict[str, Any] | None) -> None:
        flow = (summary or {}).get("flows", {}).get(self.flow) or {}
        self.times[key] = flow.get("completion_time") if flow.get("completed") else None

    def finished(self) -> bool:
        return all(k in self.times for k in self.asked) and bool(self.asked) and not self._wanted()

    def state(self) -> dict[str, Any]:
        return {"times": self.times, "asked": self.asked, "round": self.round}

    def report(self) -> BisectReport:
        met = [v for v in self.values if self._met(v)]
        return BisectReport(best=min(met) if met else None, times=self.times)


KINDS = {"bisect": Kind("bisect", Bisect, Bisect)}


@pytest.fixture(scope="module")
def world(pg_database: str) -> Iterator[tuple[Orchestrator, Settings]]:
    """The orchestrator on the test database; its broker a queue of its own that no worker
    reads (the runs are simulated in process, by the real runner)."""
    try:
        import redis

        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except Exception as exc:
        unavailable(f"Redis at {REDIS_URL} ({type(exc).__name__})")
    queue = f"tcpfr-test-{secrets.token_hex(4)}"
    settings = Settings(_env_file=None, database_url=pg_database, broker_url=REDIS_URL, queue=queue)
    engine = make_engine(settings)
    orchestrator = Orchestrator(
        settings, make_sessionmaker(engine), make_celery(settings), known=KINDS
    )
    yield orchestrator, settings
    engine.dispose()
    redis.Redis.from_url(REDIS_URL).delete(queue)


def base() -> Scenario:
    data = load_preset("riverbed-t1-8k").model_dump(mode="json")
    data["flows"][0]["bytes"] = BYTES
    return Scenario.model_validate(data)


def create(
    sessions: sessionmaker[Session], budget: int = 10, cache: str = "reuse", **request: Any
) -> uuid.UUID:
    scenario = base()
    with session_scope(sessions) as session:
        wf = WorkflowRepository(session).create(
            kind="bisect",
            name="bisect rcv_buf",
            scenario_name=scenario.name,
            scenario=scenario_document(scenario),
            scenario_hash=scenario.scenario_hash(),
            seed=scenario.seed,
            request={"flow": "backup", "values": LADDER, "target": TARGET, **request},
            run_budget=budget,
            cache=cache,
            engine_version=ENGINE_VERSION,
        )
        return wf.id


def runs_of(sessions: sessionmaker[Session], workflow_id: uuid.UUID) -> list[Run]:
    with session_scope(sessions) as session:
        stmt = (
            select(Run)
            .join(WorkflowRun, WorkflowRun.run_id == Run.id)
            .where(WorkflowRun.workflow_id == workflow_id)
            .order_by(Run.id)
        )
        return list(session.scalars(stmt).all())


def simulate_queued(o: Orchestrator, workflow_id: uuid.UUID) -> None:
    runner = Runner(o.settings, sessions=o.sessions)
    for run in runs_of(o.sessions, workflow_id):
        if run.status is RunStatus.queued:
            assert runner.run(run.id, task_id=f"test-{run.id}", worker="test") is not None


def workflow(sessions: sessionmaker[Session], workflow_id: uuid.UUID) -> StoredWorkflow:
    with session_scope(sessions) as session:
        wf = session.get(StoredWorkflow, workflow_id)
        assert wf is not None
        return wf


def test_a_bisection_makes_each_run_once_and_meets_the_window_physics(world: Any) -> None:
    o, _ = world
    wf_id = create(o.sessions)
    o.advance(wf_id)
    first = runs_of(o.sessions, wf_id)
    assert len(first) == 2 and {r.status for r in first} == {RunStatus.queued}
    assert all(r.enqueued_at is not None for r in first)  # sent after the step's commit
    o.advance(wf_id)  # a redelivered message: nothing new to observe, nothing to make
    assert len(runs_of(o.sessions, wf_id)) == 2

    simulate_queued(o, wf_id)
    # Both runs ended at once: two steps race for the workflow's row lock. The second
    # sees what the first committed, so round 1 is made once.
    threads = [threading.Thread(target=o.advance, args=(wf_id,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    runs = runs_of(o.sessions, wf_id)
    assert len(runs) == 3, [r.scenario["flows"][0]["tcp"]["rcv_buf"] for r in runs]
    with session_scope(o.sessions) as session:
        observed = session.scalar(
            select(func.count())
            .select_from(WorkflowRun)
            .where(WorkflowRun.workflow_id == wf_id, WorkflowRun.observed.is_(True))
        )
    assert observed == 2

    simulate_queued(o, wf_id)
    o.advance(wf_id)
    done = workflow(o.sessions, wf_id)
    assert done.status is WorkflowStatus.succeeded, done.error
    report = BisectReport.model_validate(done.report)

    # Physics: a window-limited transfer moves W bytes per round trip, so 1 MB takes
    # BYTES / (W / RTT) plus the handshake and slow start's first round trips. The RTT is
    # the flow's own minimum (167 ms of propagation, a full frame's serialisation on T1).
    rtt = min(
        f["rtt_min"]
        for r in runs_of(o.sessions, wf_id)
        for f in [_flow_result(o, r)]
        if f.get("rtt_min")
    )
    link_payload = 1.536e6 / 8 * 1460 / 1500  # T1's payload rate less headers, B/s
    predicted = {w: BYTES / min(w / rtt, link_payload) for w in LADDER}
    theory_best = min(w for w in LADDER if predicted[w] <= TARGET)
    assert report.best == theory_best == 17520, (report, predicted)
    for key, measured in report.times.items():
        w = int(key.split("=")[1])
        assert measured is not None
        # within 25% above the steady-state time: handshake, slow start, delayed ACKs
        assert predicted[w] <= measured <= 1.25 * predicted[w] + 4 * rtt, (w, measured)


def _flow_result(o: Orchestrator, run: Run) -> dict[str, Any]:
    from store.models import RunResult

    with session_scope(o.sessions) as session:
        result = session.get(RunResult, run.result_run_id)
        return result.flows["backup"] if result is not None else {}


def test_a_repeated_workflow_is_served_whole_by_the_result_cache(world: Any) -> None:
    o, _ = world
    first = create(o.sessions)
    for _ in range(3):  # as the first test: round 0, round 1, done
        o.advance(first)
        simulate_queued(o, first)
    o.advance(first)
    assert workflow(o.sessions, first).status is WorkflowStatus.succeeded

    again = create(o.sessions)
    assert o.advance(again) == 3  # round 0 from the cache, round 1 from the cache, done
    done = workflow(o.sessions, again)
    assert done.status is WorkflowStatus.succeeded
    runs = runs_of(o.sessions, again)
    assert len(runs) == 3 and all(r.cache_hit for r in runs)
    assert done.report == workflow(o.sessions, first).report


def test_a_workflow_over_its_budget_fails_without_a_half_made_round(world: Any) -> None:
    o, _ = world
    wf_id = create(o.sessions, budget=2, target=13.0)  # round 1 would be the third run
    o.advance(wf_id)
    simulate_queued(o, wf_id)
    o.advance(wf_id)
    failed = workflow(o.sessions, wf_id)
    assert failed.status is WorkflowStatus.failed
    assert failed.error is not None and "over its budget of 2" in failed.error["message"]
    assert len(runs_of(o.sessions, wf_id)) == 2
    assert failed.report is not None and len(failed.report["times"]) == 2  # kept


def test_a_workflow_whose_logic_raises_fails_with_its_message(world: Any) -> None:
    o, _ = world
    wf_id = create(o.sessions, explode=True)
    o.advance(wf_id)
    failed = workflow(o.sessions, wf_id)
    assert failed.status is WorkflowStatus.failed
    assert failed.error == {"type": "RuntimeError", "message": "the workflow's own logic failed"}
    assert runs_of(o.sessions, wf_id) == []


def test_the_reconciler_wakes_a_workflow_whose_step_was_lost(world: Any) -> None:
    """Its runs ended but no step followed (the runner's message lost): once quiet for the
    lease with no run left to wait for, the reconciler sends it a step; one still waiting
    on a run is left alone."""
    import redis

    from api.reconciler import reconcile_once

    o, settings = world
    quiet = settings.model_copy(update={"workflow_lease": 0.2})
    # Simulated afresh: served from the cache, either would finish in its first step.
    waiting, lost = create(o.sessions, cache="refresh"), create(o.sessions, cache="refresh")
    o.advance(waiting)  # its round-0 runs stay queued: it waits on them
    o.advance(lost)
    simulate_queued(o, lost)  # ended, and nobody told the workflow
    queue = redis.Redis.from_url(REDIS_URL)
    queue.delete(settings.queue)
    time.sleep(0.3)
    done = reconcile_once(o.sessions, o.celery, quiet, take_back_running=False)
    assert done.woken == 1
    bodies = [m.decode() for m in queue.lrange(settings.queue, 0, -1)]
    assert sum(str(lost) in b for b in bodies) == 1 and not any(str(waiting) in b for b in bodies)
    o.advance(lost)  # the step the message asks for: round 1 made
    assert len(runs_of(o.sessions, lost)) == 3
