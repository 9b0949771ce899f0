"""No run lost, none duplicated: workers killed with SIGKILL mid-run, Postgres and Redis
restarted under load, lost messages and dead hosts found by the reconciler.

Everything runs against a private Postgres and a private Redis (``ephemeral``), so the
servers other tests share are never stopped. Leases and intervals are short here so the
recoveries happen in seconds. ``TCPFR_KILL_TRIALS`` (default 2) sets the trials per kind of
kill, ``TCPFR_RESTART_TRIALS`` (default 1) the restarts of each server; each test prints its
figures (``pytest -s``).
"""

from __future__ import annotations

import os
import random
import re
import signal
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
from ephemeral import PrivatePostgres, PrivateRedis, private_services, private_stack, worker_argv
from journeys import assert_problem
from psycopg.types.json import Jsonb
from servicekit import Stack

from store.models import DEFAULT_TENANT_ID

TRIALS = int(os.environ.get("TCPFR_KILL_TRIALS", "2"))
RESTART_TRIALS = range(int(os.environ.get("TCPFR_RESTART_TRIALS", "1")))
# Seconds of simulation wanted per run: long enough to be caught running and killed.
LONG_BYTES = 200_000_000  # ~2 s of simulation on the 2-core machine, alone

SHORT_LEASES = {
    "TCPFR_HEARTBEAT_INTERVAL": "0.5",
    # Above the 5 s in which Celery notices a dead pool process (its maintenance timer), so
    # that case is Celery's to recover and a whole dead worker the reconciler's.
    "TCPFR_RUN_LEASE": "6",
    "TCPFR_QUEUED_LEASE": "3",
    "TCPFR_RECONCILE_INTERVAL": "0.5",
    "TCPFR_MAX_ATTEMPTS": "2",
}


@pytest.fixture(scope="module")
def services() -> Iterator[tuple[PrivatePostgres, PrivateRedis]]:
    with private_services() as both:
        yield both


# -- helpers ---------------------------------------------------------------------------


def long_run_body(stack: Stack, nbytes: int = LONG_BYTES) -> dict[str, Any]:
    with stack.client as client:
        body = client.get("/v1/presets/riverbed-t1-64k").json()["body"]
    body["flows"][0]["bytes"] = nbytes
    return {"scenario": body, "seed": random.randrange(1, 2**31), "cache": "refresh"}


def submit(stack: Stack, body: dict[str, Any]) -> str:
    with stack.client as client:
        resp = client.post("/v1/runs", json=body)
    assert resp.status_code == 202, resp.text
    return resp.json()["id"]


def history(stack: Stack, run_id: str) -> dict[str, Any]:
    with stack.client as client:
        resp = client.get(f"/v1/runs/{run_id}/events")
    assert resp.status_code == 200, resp.text
    return resp.json()


def events(stack: Stack, run_id: str, kind: str) -> list[dict[str, Any]]:
    return [e for e in history(stack, run_id)["events"] if e["event"] == kind]


def wait_started(stack: Stack, run_id: str, attempt: int, timeout: float = 60) -> str:
    """The worker (node:pid) that started the run's attempt ``attempt``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for e in events(stack, run_id, "started"):
            if e["attempt"] == attempt:
                return e["worker"]
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} never started attempt {attempt}\n{stack.logs()}")


def db_scalar(stack: Stack, sql: str, *params: Any) -> Any:
    with psycopg.connect(stack.env["DATABASE_URL"], connect_timeout=5) as conn:
        return conn.execute(sql, params).fetchone()[0]


def results_of(stack: Stack, run_id: str) -> int:
    return db_scalar(stack, "SELECT count(*) FROM results WHERE run_id = %s", uuid.UUID(run_id))


def finished_events(stack: Stack, run_id: str) -> int:
    return sum(
        e["event"] in ("succeeded", "failed", "cancelled") for e in history(stack, run_id)["events"]
    )


def node_of(worker: str) -> str:
    return worker.split("@", 1)[0]


def pid_of(worker: str) -> int:
    return int(worker.rsplit(":", 1)[1])


# -- worker loss -----------------------------------------------------------------------


class TestWorkerLoss:
    """Two separate worker processes (nodes tcpfr-a and tcpfr-b), one simulation each."""

    @pytest.fixture(scope="class")
    @classmethod
    def stack(
        cls,
        services: tuple[PrivatePostgres, PrivateRedis],
        tmp_path_factory: pytest.TempPathFactory,
    ) -> Iterator[Stack]:
        pg, rd = services
        stack = private_stack(
            tmp_path_factory.mktemp("kill"),
            pg,
            rd,
            workers={"tcpfr-a": 1, "tcpfr-b": 1},
            settings=SHORT_LEASES,
        )
        yield stack
        stack.stop()

    def _check_one_result(self, stack: Stack, run_id: str, outcome: dict[str, int]) -> dict:
        try:
            done = stack.wait_run(run_id, timeout=90)
        except AssertionError:
            outcome["lost"] += 1
            raise
        if done["status"] != "succeeded":
            outcome["lost"] += 1
        stored = results_of(stack, run_id)
        outcome["duplicated"] += max(0, stored - 1) + max(0, finished_events(stack, run_id) - 1)
        outcome["lost"] += stored == 0
        return done

    def test_a_killed_pool_process_run_is_redelivered_and_stored_once(self, stack: Stack) -> None:
        """SIGKILL of the process simulating: its worker gives the message back
        (reject_on_worker_lost) and the run completes in another process."""
        outcome: Counter[str] = Counter()
        for _ in range(TRIALS):
            run_id = submit(stack, long_run_body(stack))
            first = wait_started(stack, run_id, 1)
            os.kill(pid_of(first), signal.SIGKILL)
            done = self._check_one_result(stack, run_id, outcome)
            assert done["status"] == "succeeded", (done, stack.logs())
            assert done["attempts"] == 2
            assert done["summary"]["flows"]["backup"]["bytes_delivered"] == LONG_BYTES
            assert results_of(stack, run_id) == 1
            starts = events(stack, run_id, "started")
            assert [e["attempt"] for e in starts] == [1, 2]
            assert starts[1]["worker"] != first  # the killed process is gone
            # Celery gives the message back once it notices the dead process (within
            # 5 s); were it slower than the lease, the reconciler would take the run back.
            [retry] = events(stack, run_id, "retried") + events(stack, run_id, "requeued")
            assert retry["worker"] == first and retry["detail"]["reason"]
            outcome[
                f"recovered by {'celery' if retry['event'] == 'retried' else 'reconciler'}"
            ] += 1
            [ok] = events(stack, run_id, "succeeded")
            assert ok["attempt"] == 2 and ok["worker"] == starts[1]["worker"]
        print(
            f"\nFIGURES kill pool process: trials={TRIALS} lost={outcome['lost']} "
            f"duplicated={outcome['duplicated']} recovered by celery="
            f"{outcome['recovered by celery']} by reconciler={outcome['recovered by reconciler']}"
        )
        assert outcome["lost"] == outcome["duplicated"] == 0

    def test_a_killed_worker_run_is_taken_back_by_the_reconciler(self, stack: Stack) -> None:
        """SIGKILL of a whole worker (parent and pool): nobody gives its message back, so
        the reconciler takes the run back when its heartbeat is older than the lease, and
        the other worker completes it."""
        keys = {"tcpfr-a": "tcpfr-a", "tcpfr-b": "tcpfr-b"}  # node -> its process in the stack
        outcome: Counter[str] = Counter()
        for trial in range(TRIALS):
            run_id = submit(stack, long_run_body(stack))
            first = wait_started(stack, run_id, 1)
            victim = node_of(first)
            proc = stack.procs[keys[victim]]
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            done = self._check_one_result(stack, run_id, outcome)
            assert done["status"] == "succeeded", (done, stack.logs())
            assert done["attempts"] == 2 and results_of(stack, run_id) == 1
            starts = events(stack, run_id, "started")
            assert [e["attempt"] for e in starts] == [1, 2]
            assert node_of(starts[1]["worker"]) != victim  # completed on the other worker
            [requeued] = events(stack, run_id, "requeued")
            assert requeued["worker"] == first and "lease expired" in requeued["detail"]["reason"]
            # The killed worker comes back for the next trial (as a supervisor would do).
            keys[victim] = f"{victim}.{trial + 1}"
            stack.start(keys[victim], worker_argv(stack.env, victim))
        print(
            f"\nFIGURES kill whole worker: trials={TRIALS} lost={outcome['lost']} "
            f"duplicated={outcome['duplicated']}"
        )
        assert outcome["lost"] == outcome["duplicated"] == 0

    def test_a_run_whose_worker_keeps_dying_fails_with_its_reason(self, stack: Stack) -> None:
        """Budget of 2 starts: killed twice, the third delivery fails it instead."""
        run_id = submit(stack, long_run_body(stack))
        for attempt in (1, 2):
            os.kill(pid_of(wait_started(stack, run_id, attempt)), signal.SIGKILL)
        done = stack.wait_run(run_id, timeout=60)
        assert done["status"] == "failed", done
        assert done["error"]["type"] == "RetryBudgetExceeded"
        assert "started 2 times" in done["error"]["message"]
        assert done["attempts"] == 2 and results_of(stack, run_id) == 0
        [failed] = events(stack, run_id, "failed")
        assert failed["detail"]["error"]["type"] == "RetryBudgetExceeded"

    def test_the_reconciler_takes_back_runs_of_a_gone_host_and_fails_them_past_budget(
        self, stack: Stack
    ) -> None:
        """Rows as a vanished host leaves them (running, heartbeat long stopped) and a run
        whose message was lost more often than the budget allows."""
        body = long_run_body(stack, nbytes=1_000_000)["scenario"]
        gone_once, gone_twice, lost_twice = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
        with psycopg.connect(stack.env["DATABASE_URL"]) as conn:
            for run_id, status, attempts in (
                (gone_once, "running", 1),
                (gone_twice, "running", 2),
                (lost_twice, "queued", 0),
            ):
                conn.execute(
                    "INSERT INTO runs (id, tenant_id, status, scenario_name, scenario_hash,"
                    " scenario, seed, engine_version, cache_hit, progress, cancel_requested,"
                    " attempts, task_id, worker, created_at, enqueued_at, started_at,"
                    " heartbeat_at) VALUES (%s, %s, %s, 'gone', 'sha256:x', %s, 5, '0', false,"
                    " 0, false, %s, 'ghost-task', 'ghost@vanished:1', now() - interval '1 hour',"
                    " now() - interval '1 hour', now() - interval '1 hour',"
                    " now() - interval '1 hour')",
                    (run_id, DEFAULT_TENANT_ID, status, Jsonb(body), attempts),
                )
            for _ in range(2):
                conn.execute(
                    "INSERT INTO run_events (run_id, at, event, detail) VALUES"
                    " (%s, now() - interval '1 hour', 'requeued', '{\"reason\": \"message lost\"}')",
                    (lost_twice,),
                )
        done = stack.wait_run(str(gone_once), timeout=60)
        assert done["status"] == "succeeded" and done["attempts"] == 2, done
        assert results_of(stack, str(gone_once)) == 1
        [requeued] = events(stack, str(gone_once), "requeued")
        assert requeued["worker"] == "ghost@vanished:1"

        for run_id in (gone_twice, lost_twice):
            done = stack.wait_run(str(run_id), timeout=30)
            assert done["status"] == "failed", done
            assert done["error"]["type"] == "RetryBudgetExceeded", done
            assert results_of(stack, str(run_id)) == 0
        # The lost one was not sent a third time: its budget (2) was spent.
        assert len(events(stack, str(lost_twice), "requeued")) == 2
        assert "sent again 2 times" in stack.wait_run(str(lost_twice))["error"]["message"]


# -- restarts --------------------------------------------------------------------------


class TestRestarts:
    """One worker node with two processes; Postgres and Redis stopped and started under it."""

    @pytest.fixture(scope="class")
    @classmethod
    def stack(
        cls,
        services: tuple[PrivatePostgres, PrivateRedis],
        tmp_path_factory: pytest.TempPathFactory,
    ) -> Iterator[Stack]:
        pg, rd = services
        stack = private_stack(
            tmp_path_factory.mktemp("restart"),
            pg,
            rd,
            workers={"tcpfr-w": 2},
            settings={**SHORT_LEASES, "TCPFR_MAX_ATTEMPTS": "3"},
        )
        yield stack
        stack.stop()

    @pytest.mark.parametrize("trial", RESTART_TRIALS)
    def test_postgres_restart_during_a_run(
        self, stack: Stack, services: tuple[PrivatePostgres, PrivateRedis], trial: int
    ) -> None:
        pg, _ = services
        run_id = submit(stack, long_run_body(stack))
        wait_started(stack, run_id, 1)
        pg.stop("fast")  # clients cut off, as in a restart or a failover
        try:
            with httpx.Client(base_url=stack.base_url, timeout=30) as client:
                for resp in (
                    client.get(f"/v1/runs/{run_id}"),
                    client.get("/v1/runs"),
                    client.get(f"/v1/runs/{run_id}/events"),
                    client.post("/v1/runs", json={"preset": "riverbed-t1-8k", "seed": 99}),
                ):
                    problem = assert_problem(resp, 503)
                    assert int(resp.headers["retry-after"]) > 0
                    assert "database" in problem["detail"]
                ready = client.get("/readyz")
                assert ready.status_code == 503
                assert ready.json()["checks"]["database"].startswith("error")
            # Keep it away until the worker has finished simulating and is retrying the
            # write of the result: the case where a result could be lost.
            log = stack.tmp / "tcpfr-w.log"
            deadline = time.monotonic() + 60
            while not re.search(rf"run {run_id}: database unavailable", log.read_text()):
                assert time.monotonic() < deadline, stack.logs()
                time.sleep(0.2)
        finally:
            pg.start()

        # The API recovers by itself: each process's pool reconnects after the request
        # that met its dead connections (a 503 with Retry-After, store/db.py). Every API
        # process must have recovered: ten answers in a row from the database, each on a
        # new connection, which the kernel spreads over the processes (SO_REUSEPORT).
        deadline, in_a_row = time.monotonic() + 30, 0
        while in_a_row < 10:
            resp = httpx.get(f"{stack.base_url}/v1/runs/{run_id}/events", timeout=10)
            in_a_row = in_a_row + 1 if resp.status_code == 200 else 0
            assert resp.status_code in (200, 503) and time.monotonic() < deadline, stack.logs()
            time.sleep(0.05)
        done = stack.wait_run(run_id, timeout=60)
        assert done["status"] == "succeeded", (done, stack.logs())
        # Stored by the same attempt, once, after retries: nothing simulated twice.
        assert done["attempts"] == 1 and results_of(stack, run_id) == 1
        [ok] = events(stack, run_id, "succeeded")
        assert ok["detail"]["write_attempts"] >= 2
        assert finished_events(stack, run_id) == 1
        print(
            f"\nFIGURES postgres restart: runs=1 lost=0 duplicated=0 "
            f"write_attempts={ok['detail']['write_attempts']}"
        )

    @pytest.mark.parametrize("trial", RESTART_TRIALS)
    def test_redis_restart_during_a_batch(
        self, stack: Stack, services: tuple[PrivatePostgres, PrivateRedis], trial: int
    ) -> None:
        """Redis keeps nothing on disk here, so the restart loses every queued and every
        unacknowledged message; the database still knows each run."""
        _, rd = services
        batch = [submit(stack, long_run_body(stack, nbytes=60_000_000)) for _ in range(10)]
        wait_started(stack, batch[0], 1)
        rd.stop()
        try:
            # A run submitted while the broker is away is accepted and sent later.
            with httpx.Client(base_url=stack.base_url, timeout=30) as client:
                resp = client.post("/v1/runs", json=long_run_body(stack, nbytes=60_000_000))
                assert resp.status_code == 202, resp.text
                batch.append(resp.json()["id"])
                ready = client.get("/readyz")
                assert ready.status_code == 503 and ready.json()["checks"]["broker"] != "ok"
            time.sleep(1)
        finally:
            rd.start()

        outcome: Counter[str] = Counter()
        for run_id in batch:
            done = stack.wait_run(run_id, timeout=120)
            outcome["lost"] += done["status"] != "succeeded"
            stored = results_of(stack, run_id)
            outcome["lost"] += stored == 0
            outcome["duplicated"] += max(0, stored - 1) + max(0, finished_events(stack, run_id) - 1)
            steps = history(stack, run_id)["events"]
            outcome["resent"] += any(
                e["event"] == "requeued"
                or (e["event"] == "enqueued" and (e["detail"] or {}).get("by") == "reconciler")
                for e in steps
            )
        print(
            f"\nFIGURES redis restart: runs={len(batch)} lost={outcome['lost']} "
            f"duplicated={outcome['duplicated']} sent again={outcome['resent']}"
        )
        assert outcome["lost"] == outcome["duplicated"] == 0, stack.logs()
        # The flush lost messages, and the reconciler found them: something was sent again.
        assert outcome["resent"] >= 1
        # The one submitted while Redis was away: handed over, refused, sent by the reconciler.
        steps = [e["event"] for e in history(stack, batch[-1])["events"]]
        assert steps[:3] == ["queued", "enqueued", "unsent"], steps
        sent = events(stack, batch[-1], "enqueued")[-1]
        assert sent["detail"]["by"] == "reconciler" and "never sent" in sent["detail"]["reason"]
