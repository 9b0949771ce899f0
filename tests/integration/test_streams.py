"""Server-Sent Events: /v1/runs/{id}/stream and /v1/sweeps/{id}/stream against the real
server and workers: resuming with Last-Event-ID, the heartbeat, the per-process bound, and
streams ending when the server stops."""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from journeys import assert_problem
from servicekit import Stack, free_port

Event = dict[str, Any]


def read_events(
    resp: httpx.Response, *, stop: Any = None, comments: list[str] | None = None
) -> list[Event]:
    """Parse a text/event-stream body until it ends or ``stop(events)`` is true."""
    events: list[Event] = []
    block: dict[str, str] = {}
    for line in resp.iter_lines():
        if line == "":
            if "data" in block:
                events.append(
                    {
                        "id": int(block["id"]),
                        "event": block["event"],
                        "data": json.loads(block["data"]),
                    }
                )
                if stop is not None and stop(events):
                    return events
            block = {}
        elif line.startswith(":"):
            if comments is not None:
                comments.append(line)
        else:
            field, _, value = line.partition(":")
            block[field] = value.removeprefix(" ")
    return events


def stream(client: httpx.Client, path: str, last_id: int | None = None) -> Any:
    headers = {"Accept": "text/event-stream"}
    if last_id is not None:
        headers["Last-Event-ID"] = str(last_id)
    return client.stream("GET", path, headers=headers, timeout=60)


def slow_run_body(client: httpx.Client, factor: int = 4) -> dict[str, Any]:
    """riverbed-t1-8k carrying `factor` times the bytes: a few seconds of a worker."""
    scenario = client.get("/v1/presets/riverbed-t1-8k").json()["body"]
    scenario["flows"][0]["bytes"] *= factor
    return {"scenario": scenario, "seed": random.randrange(1, 2**31)}


def test_a_run_stream_resumes_after_last_event_id_without_repeats(pg_stack: Stack) -> None:
    with pg_stack.client as client:
        run = client.post("/v1/runs", json=slow_run_body(client)).json()
        path = f"/v1/runs/{run['id']}/stream"
        with stream(client, path) as resp:
            assert resp.status_code == 200
            assert resp.headers["content-type"].startswith("text/event-stream")
            assert resp.headers["cache-control"] == "no-cache"
            # Hang up once the worker has started it: mid-run.
            first = read_events(
                resp,
                stop=lambda ev: (
                    ev[-1]["event"] == "status" and ev[-1]["data"]["event"] == "started"
                ),
            )
        assert first and first[-1]["data"]["status"] == "running", first
        last_id = first[-1]["id"]
        time.sleep(1.0)  # things happen while it is away
        with stream(client, path, last_id) as resp:
            second = read_events(resp)
        history = client.get(f"/v1/runs/{run['id']}/events").json()["events"]

    ids = [e["id"] for e in first + second]
    assert ids == sorted(set(ids)), ids  # strictly growing: nothing twice
    assert all(e["id"] > last_id for e in second)
    assert second[-1]["event"] == "done" and second[-1]["data"]["status"] == "succeeded"
    assert [e["event"] for e in second].count("done") == 1
    # The status events are the run's history: each step exactly once across the two
    # connections, in order, the ones after the id on the second.
    statuses = [e["data"]["event"] for e in first + second if e["event"] == "status"]
    assert statuses == [h["event"] for h in history], (statuses, history)
    after = [e["data"]["event"] for e in second if e["event"] == "status"]
    assert after == [h["event"] for h in history[len(history) - len(after) :]]
    assert after[-1] == "succeeded"
    progress = [e["data"]["progress"] for e in first + second if e["event"] == "progress"]
    assert progress == sorted(progress) and progress[-1] == 1.0

    # Resuming at any id gives exactly the events after it; at `done`, nothing at all.
    with pg_stack.client as client:
        full = read_events(client.get(path))
        # A status event's id is its history row's (x 10,000): its identity, not its place.
        status_ids = [e["id"] for e in full if e["event"] == "status"]
        assert len(status_ids) == len(history) and all(i % 10_000 == 0 for i in status_ids)
        for cut in full:
            resumed = read_events(client.get(path, headers={"Last-Event-ID": str(cut["id"])}))
            assert resumed == [e for e in full if e["id"] > cut["id"]]
        by_query = read_events(client.get(path, params={"last_event_id": full[0]["id"]}))
        assert by_query == full[1:]


def test_a_sweep_stream_reports_each_run_and_resumes(pg_stack: Stack) -> None:
    with pg_stack.client as client:
        sweep = client.post(
            "/v1/presets/riverbed-study/sweep", json={"seed": random.randrange(1, 2**31)}
        ).json()
        path = f"/v1/sweeps/{sweep['id']}/stream"
        with stream(client, path) as resp:
            first = read_events(resp, stop=lambda ev: ev[-1]["event"] == "status")
        cut = first[-1]["id"]
        with stream(client, path, cut) as resp:
            second = read_events(resp)
    ids = [e["id"] for e in first + second]
    assert ids == sorted(set(ids)), ids
    finishes = [e["data"] for e in first + second if e["event"] == "status"]
    assert [f["finished"] for f in finishes] == [1, 2, 3, 4]
    assert sorted(f["run"]["point_index"] for f in finishes) == [0, 1, 2, 3]
    assert [f["status"] for f in finishes] == ["running"] * 3 + ["succeeded"]
    done = second[-1]
    assert done["event"] == "done" and done["data"]["status"] == "succeeded"
    assert done["data"]["progress"]["fraction"] == 1.0
    fractions = [e["data"]["fraction"] for e in first + second if e["event"] == "progress"]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0


def test_stream_errors_are_problems(pg_stack: Stack) -> None:
    with pg_stack.client as client:
        missing = "01900000-0000-7000-8000-000000000000"
        assert_problem(client.get(f"/v1/runs/{missing}/stream"), 404)
        assert_problem(client.get(f"/v1/sweeps/{missing}/stream"), 404)
        run = client.post("/v1/runs", json={"preset": "riverbed-t1-8k"}).json()
        bad = client.get(f"/v1/runs/{run['id']}/stream", headers={"Last-Event-ID": "abc"})
        problem = assert_problem(bad, 422)
        assert problem["errors"][0]["loc"] == ["header", "Last-Event-ID"]


@pytest.fixture
def idle_api(pg_stack: Stack) -> Iterator[Stack]:
    """A second API process on pg_stack's database whose runs go to a queue no worker reads
    (so they stay queued), with a fast heartbeat and room for one stream."""
    port = free_port()
    tmp = pg_stack.tmp / f"idle-{port}"
    tmp.mkdir()
    env = {
        **pg_stack.env,
        "PORT": str(port),
        "TCPFR_QUEUE": f"nobody-reads-{port}",
        "TCPFR_MAX_STREAMS": "1",
        "TCPFR_STREAM_HEARTBEAT": "0.3",
        "TCPFR_RECONCILE_INTERVAL": "0",
    }
    stack = Stack(base_url=f"http://127.0.0.1:{port}", env=env, tmp=tmp)
    from api.serve import api_command
    from settings import Settings

    try:
        # One process: TCPFR_MAX_STREAMS bounds each process's streams.
        stack.start("api", api_command(Settings(_env_file=None, port=port, api_processes=1)))
        stack.wait_ready()
        yield stack
    finally:
        stack.stop()


def test_heartbeat_bound_and_shutdown(pg_stack: Stack, idle_api: Stack) -> None:
    with idle_api.client as client:
        run = client.post("/v1/runs", json=slow_run_body(client, factor=1)).json()
        path = f"/v1/runs/{run['id']}/stream"
        # A stream that ends (here: the client hangs up) gives its slot back.
        for _ in range(3):
            with stream(client, path) as resp:
                assert resp.status_code == 200
                next(resp.iter_lines())
            time.sleep(0.3)  # the server sees the hang-up asynchronously
        comments: list[str] = []
        with stream(client, path) as resp:
            assert resp.status_code == 200
            lines = resp.iter_lines()
            deadline = time.monotonic() + 10
            while comments.count(": heartbeat") < 2:
                line = next(lines)
                if line.startswith(":"):
                    comments.append(line)
                assert time.monotonic() < deadline, comments
            # The one slot is taken: a second stream is refused, with when to come back.
            refused = client.get(path)
            problem = assert_problem(refused, 503)
            assert int(refused.headers["retry-after"]) > 0, problem
            # SIGTERM: the open stream ends at once, not after the graceful-shutdown timeout.
            proc = idle_api.procs["api"]
            stopped_at = time.monotonic()
            os.killpg(proc.pid, signal.SIGTERM)
            for _ in lines:
                pass
            ended = time.monotonic() - stopped_at
        proc.wait(timeout=15)
        assert ended < 5, ended
        assert time.monotonic() - stopped_at < 8
    # Leave no run queued where no worker looks (the reconciler would find it later).
    with pg_stack.client as client:
        assert client.post(f"/v1/runs/{run['id']}/cancel").status_code == 202
