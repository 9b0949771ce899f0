"""Driving a workflow on this machine, without services: propose, simulate in a process pool,
observe, until the workflow has finished (`python -m engine advise`, `... check`, the bench
and the tests). The worker's orchestration (worker/workflows/) does the same through
ordinary runs, stored and cached.

Within one drive, a configuration simulated once is not simulated again (the same scenario
hash and seed give the same result to the bit).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from engine.scenario import Scenario
from engine.simulation import simulate
from engine.study import StudyError, apply_changes
from engine.workflow import Candidate, Workflow


@dataclass
class Drive:
    report: BaseModel
    runs: int  # simulations run (cache hits excluded)
    rounds: int
    wall_time: float
    cpu_time: float  # the simulations' processor time added up (the machine's load aside)


def _simulate(args: tuple[Scenario, int]) -> tuple[dict[str, Any], float]:
    scenario, seed = args
    start = time.process_time()
    summary = simulate(scenario, seed=seed).summary()
    return summary, time.process_time() - start


class _Serial(Executor):
    def map(self, fn: Callable[..., Any], *iterables: Any, **_: Any) -> Any:
        return [fn(*args) for args in zip(*iterables, strict=True)]


def drive(
    scenario: Scenario,
    workflow: Workflow,
    *,
    jobs: int = 1,
    on_round: Callable[[int, list[Candidate]], None] | None = None,
) -> Drive:
    """Run `workflow` to the end; `on_round(round, candidates)` reports progress."""
    start = time.perf_counter()
    done: dict[tuple[str, int], dict[str, Any]] = {}
    runs = rounds = 0
    cpu_time = 0.0
    pool: Executor = ProcessPoolExecutor(max_workers=jobs) if jobs > 1 else _Serial()
    with pool:
        while True:
            candidates = workflow.propose()
            if not candidates:
                if workflow.finished():
                    break
                raise RuntimeError("the workflow waits for runs nobody is running")
            rounds += 1
            if on_round is not None:
                on_round(rounds, candidates)
            todo: dict[tuple[str, int], Scenario] = {}
            failed: list[Candidate] = []
            ids: list[tuple[Candidate, tuple[str, int]]] = []
            for c in candidates:
                try:
                    s = apply_changes(scenario, c.changes)
                except StudyError:
                    failed.append(c)
                    continue
                ident = (s.scenario_hash(), c.seed)
                ids.append((c, ident))
                if ident not in done:
                    todo[ident] = s
            results = pool.map(_simulate, [(s, seed) for (_, seed), s in todo.items()])
            for ident, (summary, cpu) in zip(todo, results, strict=True):
                done[ident] = summary
                cpu_time += cpu
            runs += len(todo)
            for c in failed:
                workflow.observe(c.key, c.seed, None)
            for c, ident in ids:
                workflow.observe(c.key, c.seed, done[ident])
    return Drive(workflow.report(), runs, rounds, time.perf_counter() - start, cpu_time)
