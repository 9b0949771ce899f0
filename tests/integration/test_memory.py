"""A run's memory, bounded twice: a scenario estimated over the memory budget is refused at
submission (422 naming what to change), and a worker stops a run that outgrows its ceiling
(the run fails saying so, once, and the worker goes on serving)."""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ephemeral import worker_argv
from journeys import assert_problem
from servicekit import Stack, free_port

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from engine_scale import flows_dumbbell  # noqa: E402

CEILING_MIB = 256


def flood(duration: float) -> dict[str, Any]:
    """A 90 Mb/s CBR stream into a 1 Mb/s link whose queue takes ten million packets: some
    22,000 datagrams more wait each simulated second, each a packet object in memory."""
    return {
        "name": "flood",
        "duration": duration,
        "nodes": [
            {"id": "a", "kind": "host"},
            {"id": "r", "kind": "router"},
            {"id": "b", "kind": "host"},
        ],
        "links": [
            {"id": "in", "a": "a", "b": "r", "rate": "100Mbps", "delay": "1ms"},
            {
                "id": "out",
                "a": "r",
                "b": "b",
                "rate": "1Mbps",
                "delay": "1ms",
                "queue": {"discipline": "droptail", "limit_packets": 10_000_000},
            },
        ],
        "flows": [
            {"id": "u", "kind": "udp_cbr", "src": "a", "dst": "b", "rate": "90Mbps"},
        ],
    }


def test_a_run_estimated_over_the_memory_budget_is_refused(pg_stack: Stack) -> None:
    """Two simulated minutes of the flood queue 2.6 M datagrams: over the default 1 GiB."""
    body = flood(120.0)
    with pg_stack.client as client:
        cost = client.post("/v1/scenarios/validate", json=body).json()["cost"]
        assert cost["within_budget"] is False and cost["over"] == ["memory"]
        assert cost["estimate"]["memory_bytes"] > cost["budget"]["memory_bytes"] == 1 << 30
        problem = assert_problem(client.post("/v1/runs", json={"scenario": body}), 422)
        assert problem["type"].endswith("over-budget") and problem["over"] == ["memory"]
        assert problem["estimate"] == cost["estimate"]
        assert "sample_interval" in problem["detail"] and "MiB" in problem["detail"]
        assert problem["errors"][0]["loc"] == ["body", "scenario"]
        # The same point in a sweep rejects the sweep whole.
        sweep = {"base": {"scenario": body}, "parameters": {"duration": [10, 120]}}
        problem = assert_problem(client.post("/v1/sweeps", json=sweep), 422)
        assert problem["over"] == ["memory"] and "point 1 " in problem["detail"]
        # A tenth of it is within the budget.
        small = client.post("/v1/scenarios/validate", json=flood(12.0)).json()["cost"]
        assert small["within_budget"] is True and small["over"] == []


@pytest.fixture(scope="module")
def low_ceiling(pg_stack: Stack) -> Iterator[Stack]:
    """On pg_stack's database, a queue of its own: an API with the default budget, and a
    worker of two processes that allows a run only CEILING_MIB."""
    port = free_port()
    env = {**pg_stack.env, "PORT": str(port), "TCPFR_QUEUE": f"tcpfr-mem-{secrets.token_hex(4)}"}
    tmp = pg_stack.tmp / "ceiling"
    tmp.mkdir(exist_ok=True)
    stack = Stack(base_url=f"http://127.0.0.1:{port}", env=env, tmp=tmp)
    from api.serve import api_command
    from settings import Settings

    try:
        worker_env = {**env, "TCPFR_MAX_RUN_MEMORY": f"{CEILING_MIB}MiB"}
        stack.start("worker", worker_argv(env, "ceiling", concurrency=2), env=worker_env)
        stack.start("api", api_command(Settings(_env_file=None, port=port)))
        stack.wait_ready()
        yield stack
    finally:
        stack.stop()


def test_a_run_past_the_memory_ceiling_fails_saying_so_and_the_worker_goes_on(
    low_ceiling: Stack,
) -> None:
    """A hundred flows sampled every 0.1 ms for 2 s hold some 3 M points (about 350 MiB):
    accepted by the API (estimated 550 MiB, under 1 GiB), stopped by a worker that allows
    256 MiB. A run beside it on the same worker, and one after it, succeed."""
    hog = flows_dumbbell(100, 2.0)
    hog["sample_interval"] = 0.0001
    with low_ceiling.client as client:
        resp = client.post("/v1/runs", json={"scenario": hog, "cache": "refresh"})
        assert resp.status_code == 202, resp.text
        beside = client.post("/v1/runs", json={"preset": "riverbed-t1-64k", "cache": "refresh"})
    failed = low_ceiling.wait_run(resp.json()["id"], timeout=180)
    assert failed["status"] == "failed", (failed, low_ceiling.logs())
    assert failed["attempts"] == 1 and failed["error"]["type"] == "RunOverMemory"
    assert f"{CEILING_MIB} MiB" in failed["error"]["message"]
    assert "TCPFR_MAX_RUN_MEMORY" in failed["error"]["message"]
    assert low_ceiling.wait_run(beside.json()["id"])["status"] == "succeeded"
    with low_ceiling.client as client:
        after = client.post("/v1/runs", json={"preset": "riverbed-t1-8k", "cache": "refresh"})
    done = low_ceiling.wait_run(after.json()["id"])
    assert done["status"] == "succeeded"
    assert low_ceiling.procs["worker"].poll() is None  # the worker itself never went away


def _nice(pid: int) -> int:
    """A process's nice value: field 19 of /proc/PID/stat (after the parenthesised name)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[16])


def test_a_workers_simulations_run_nicer_than_the_api(low_ceiling: Stack) -> None:
    """Simulations are batch work beside the interactive API on the same cores: every pool
    process of a worker runs 10 nicer (settings.worker_nice) than the worker that forked it,
    which itself stays as it started, as the API does; and the worker's session (its
    autogroup) 10 nicer than the API's."""
    worker = low_ceiling.procs["worker"].pid
    low_ceiling.wait_run(
        low_ceiling.client.post("/v1/runs", json={"preset": "riverbed-t1-8k"}).json()["id"]
    )
    children = Path(f"/proc/{worker}/task/{worker}/children").read_text().split()
    assert children, "the worker has no pool process"
    assert _nice(worker) == _nice(os.getpid())
    assert [_nice(int(pid)) for pid in children] == [min(19, _nice(worker) + 10)] * len(children)
    # Linux weighs each session as one (autogroups): the worker leads its own here, as under
    # `make run`, so its session takes the nice too, or it would compete with the API's
    # session as an equal whatever its processes' nice.
    autogroup = Path(f"/proc/{worker}/autogroup")
    if autogroup.exists():
        assert autogroup.read_text().split()[-2:] == ["nice", "10"]
