"""Limits over HTTP, on a stack started with small ones: the simulation budget (422 with the
estimate and the budget), the request body size (413, also for a chunked body), the list
page size and series points (422), and the worker's time limit (a run past it fails)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from journeys import assert_problem
from servicekit import Stack, _base_env, free_port

BUDGET = 20_000_000  # events: ~15 s of a compiled worker at 1.3M events/s
SOFT_TIME_LIMIT = 3  # seconds: a preset needs ~0.3 s, the long scenario below ~10 s
MAX_BODY = 64 * 1024
MAX_PAGE = 20
MAX_POINTS = 5000
MSS = 1460


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """`python -m api.serve` in embedded mode with the limits above."""
    tmp = tmp_path_factory.mktemp("limits")
    port = free_port()
    env = _base_env(tmp)
    env.update(
        PORT=str(port),
        TCPFR_WORKER_CONCURRENCY="2",
        TCPFR_MAX_EVENTS_PER_RUN=str(BUDGET),
        TCPFR_TASK_SOFT_TIME_LIMIT=str(SOFT_TIME_LIMIT),
        TCPFR_MAX_BODY_BYTES=str(MAX_BODY),
        TCPFR_MAX_PAGE_SIZE=str(MAX_PAGE),
        TCPFR_PAGE_SIZE="10",
        TCPFR_SERIES_MAX_POINTS_LIMIT=str(MAX_POINTS),
    )
    stack = Stack(base_url=f"http://127.0.0.1:{port}", env=env, tmp=tmp)
    try:
        stack.start("serve", [__import__("sys").executable, "-m", "api.serve"])
        stack.wait_ready()
        yield stack
    finally:
        stack.stop()


def _preset(stack: Stack, name: str = "riverbed-t1-64k") -> dict[str, Any]:
    with stack.client as client:
        body = client.get(f"/v1/presets/{name}").json()["body"]
    body["name"] = f"{name}-{uuid.uuid4().hex[:8]}"
    return body


def _transfer(stack: Stack, size: int) -> dict[str, Any]:
    """The T1/64 KB preset sending `size` bytes, with time enough to finish."""
    body = _preset(stack)
    body["flows"][0]["bytes"] = size
    body["duration"] = 10**7
    return body


def _all_runs(stack: Stack) -> list[dict[str, Any]]:
    items, cursor = [], None
    with stack.client as client:
        while True:
            params: dict[str, Any] = {"limit": MAX_PAGE, **({"cursor": cursor} if cursor else {})}
            page = client.get("/v1/runs", params=params).json()
            items += page["items"]
            if not (cursor := page["next_cursor"]):
                return items


def test_a_run_over_the_budget_is_refused_with_the_estimate_and_the_budget(stack: Stack) -> None:
    size = 10 * 10**9
    body = _transfer(stack, size)
    key = str(uuid.uuid4())
    with stack.client as client:
        resp = client.post("/v1/runs", json={"scenario": body}, headers={"Idempotency-Key": key})
        problem = assert_problem(resp, 422)
        assert problem["type"].endswith("over-budget"), problem
        assert problem["budget"]["events"] == BUDGET
        # Each data segment crosses the path's 4 hops: at least 4 events per segment.
        assert problem["estimate"]["events"] >= 4 * size / MSS > BUDGET
        assert problem["estimate"]["packets"] >= size / MSS
        assert problem["estimate"]["seconds"] > problem["budget"]["seconds"] > 0
        (error,) = problem["errors"]
        assert error["loc"] == ["body", "scenario"] and error["pointer"] == "/scenario"
        assert f"{BUDGET:,}" in error["msg"] and "duration" in error["msg"]

        # The dry run said so beforehand, with the same figures.
        dry = client.post("/v1/scenarios/validate", json=body)
        assert dry.status_code == 200, dry.text
        cost = dry.json()["cost"]
        assert cost["within_budget"] is False
        assert cost["estimate"] == problem["estimate"] and cost["budget"] == problem["budget"]

        # A stored scenario is not a run: storing it is fine, running it is refused.
        stored = client.post("/v1/scenarios", json=body)
        assert stored.status_code == 201, stored.text
        resp = client.post("/v1/runs", json={"scenario_id": stored.json()["id"]})
        problem = assert_problem(resp, 422)
        assert problem["errors"][0]["loc"] == ["body", "scenario_id"]

        # Nothing was stored for the refused requests: no run, and the key is still free.
        assert not [r for r in _all_runs(stack) if r["scenario_name"] == body["name"]]
        small = client.post(
            "/v1/runs", json={"preset": "riverbed-t1-8k"}, headers={"Idempotency-Key": key}
        )
        assert small.status_code in (201, 202), small.text

        within = client.post("/v1/scenarios/validate", json=_preset(stack)).json()["cost"]
        assert within["within_budget"] is True and within["estimate"]["events"] < BUDGET
        # A preset is checked too; every preset is far below the default budget, not this one.
        assert client.post("/v1/runs", json={"preset": "riverbed-t1-64k"}).status_code in (
            201,
            202,
        )


def test_a_body_over_the_limit_is_a_413_however_it_is_sent(stack: Stack) -> None:
    body = _preset(stack)
    # Valid JSON over the limit: a description at its longest and nodes nobody links.
    body["description"] = "x" * 10_000
    body["nodes"] += [{"id": f"spare{i}", "kind": "host"} for i in range(2000)]
    raw = __import__("json").dumps(body).encode()
    assert len(raw) > MAX_BODY
    with stack.client as client:
        problem = assert_problem(
            client.post("/v1/scenarios", content=raw, headers={"content-type": "application/json"}),
            413,
        )
        assert problem["max_body_bytes"] == MAX_BODY and "limit" in problem["detail"]

        def chunks() -> Iterator[bytes]:  # no Content-Length: Transfer-Encoding: chunked
            for i in range(0, len(raw), 4096):
                yield raw[i : i + 4096]

        resp = client.post(
            "/v1/scenarios", content=chunks(), headers={"content-type": "application/json"}
        )
        assert "content-length" not in resp.request.headers
        assert_problem(resp, 413)

        names = {
            s["name"]
            for s in client.get("/v1/scenarios", params={"limit": MAX_PAGE}).json()["items"]
        }
        assert body["name"] not in names

        # Under the limit, chunked or not, the same endpoint works.
        small = __import__("json").dumps(_preset(stack)).encode()
        ok = client.post(
            "/v1/scenarios",
            content=iter([small[:100], small[100:]]),
            headers={"content-type": "application/json"},
        )
        assert ok.status_code == 201, ok.text


def test_list_pages_and_series_points_have_ceilings(stack: Stack) -> None:
    with stack.client as client:
        for path in ("/v1/runs", "/v1/scenarios"):
            problem = assert_problem(client.get(path, params={"limit": MAX_PAGE + 1}), 422)
            assert problem["errors"][0]["loc"] == ["query", "limit"]
            assert str(MAX_PAGE) in problem["errors"][0]["msg"]
            assert client.get(path, params={"limit": MAX_PAGE}).status_code == 200

        run = client.post("/v1/runs", json={"preset": "riverbed-t1-8k", "seed": 5}).json()
        done = stack.wait_run(run["id"], timeout=120)
        assert done["status"] == "succeeded", (done, stack.logs())
        url = f"/v1/runs/{run['id']}/series/flow.backup.goodput_bps"
        problem = assert_problem(client.get(url, params={"max_points": MAX_POINTS + 1}), 422)
        assert problem["errors"][0]["loc"] == ["query", "max_points"]
        resp = client.get(url, params={"max_points": MAX_POINTS})
        assert resp.status_code == 200 and len(resp.json()["t"]) <= MAX_POINTS


def test_a_run_past_its_time_limit_fails_saying_so(stack: Stack) -> None:
    body = _transfer(stack, 3 * 10**9)  # ~13M events: within the budget, 3x the limit or more
    with stack.client as client:
        dry = client.post("/v1/scenarios/validate", json=body).json()["cost"]
        assert dry["within_budget"] is True
        assert dry["estimate"]["seconds"] > 2 * SOFT_TIME_LIMIT
        resp = client.post("/v1/runs", json={"scenario": body, "cache": "refresh"})
        assert resp.status_code == 202, resp.text
    done = stack.wait_run(resp.json()["id"], timeout=120)
    assert done["status"] == "failed", (done, stack.logs())
    assert done["summary"] is None and done["attempts"] == 1
    assert done["error"]["type"] == "SoftTimeLimitExceeded"
    assert "time limit" in done["error"]["message"], done["error"]
    assert f"{SOFT_TIME_LIMIT} s" in done["error"]["message"], done["error"]
