"""The API under concurrency and at its limits, against the real server: hundreds of
concurrent reads all answered, idempotent sweep creation without races, per-tenant limits
(429 with Retry-After), inputs that cannot be simulated refused at submission, and HTTP's
own rules (Allow, OPTIONS, 415). Functional checks with generous deadlines, not timings."""

from __future__ import annotations

import asyncio
import secrets
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from journeys import assert_problem
from servicekit import Stack, api_beside
from test_tenants import issue

pytestmark = pytest.mark.integration

SMALL_SWEEP = {
    "base": {"preset": "riverbed-t1-64k"},
    "parameters": {"flows.backup.bytes": [20_000, 30_000]},
    "replications": 1,
}


def finished_run(stack: Stack) -> str:
    with stack.client as client:
        run = client.post("/v1/runs", json={"preset": "riverbed-t1-64k", "seed": 11}).json()
    done = stack.wait_run(run["id"])
    assert done["status"] == "succeeded", done
    return str(run["id"])


async def _storm(base_url: str, paths: list[str]) -> list[int | str]:
    limits = httpx.Limits(max_connections=len(paths), max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=base_url, timeout=120, limits=limits) as client:

        async def one(path: str) -> int | str:
            try:
                return (await client.get(path)).status_code
            except httpx.HTTPError as exc:
                return type(exc).__name__

        return await asyncio.gather(*(one(p) for p in paths))


@pytest.mark.parametrize("stack_name", ["pg_stack", "embedded_stack"])
def test_300_concurrent_reads_all_answered(stack_name: str, request: pytest.FixtureRequest) -> None:
    stack: Stack = request.getfixturevalue(stack_name)
    run_id = finished_run(stack)
    kinds = [
        f"/v1/runs/{run_id}",
        f"/v1/runs/{run_id}/series/flow.backup.cwnd?max_points=200",
        "/v1/runs?limit=50",
        f"/v1/runs/{run_id}/series",
        f"/v1/runs/{run_id}/events",
    ]
    # Distinct queries, so most are not served from the document cache.
    paths = [
        f"{kinds[i % len(kinds)]}{'&' if '?' in kinds[i % len(kinds)] else '?'}n={i}"
        for i in range(300)
    ]
    statuses = asyncio.run(_storm(stack.base_url, paths))
    assert Counter(statuses) == Counter({200: 300}), Counter(statuses)
    with stack.client as client:  # and it answers at once after the storm
        assert client.get(f"/v1/runs/{run_id}", timeout=10).status_code == 200


def _race(stack: Stack, path: str, body: dict[str, Any] | None) -> list[httpx.Response]:
    key = f"race-{secrets.token_hex(6)}"

    def post(_: int) -> httpx.Response:
        with httpx.Client(base_url=stack.base_url, timeout=120) as client:
            return client.post(path, json=body, headers={"Idempotency-Key": key})

    with ThreadPoolExecutor(10) as pool:
        return list(pool.map(post, range(10)))


@pytest.mark.parametrize(
    ("path", "body"),
    [("/v1/sweeps", SMALL_SWEEP), ("/v1/presets/riverbed-study/sweep", None)],
)
def test_concurrent_identical_sweeps_make_one(pg_stack: Stack, path: str, body: Any) -> None:
    if body is not None:
        body = {**body, "seed": secrets.randbelow(2**30)}  # a sweep no other test made
    responses = _race(pg_stack, path, body)
    codes = [r.status_code for r in responses]
    assert all(c in (200, 201, 202) for c in codes), [(r.status_code, r.text) for r in responses]
    ids = {r.json()["id"] for r in responses}
    assert len(ids) == 1, ids
    assert sum(c != 200 for c in codes) == 1, codes  # one made it; nine replayed it


def test_concurrent_identical_sweeps_make_one_embedded(embedded_stack: Stack) -> None:
    body = {**SMALL_SWEEP, "seed": secrets.randbelow(2**30)}
    responses = _race(embedded_stack, "/v1/sweeps", body)
    assert all(r.status_code in (200, 201, 202) for r in responses), [r.text for r in responses]
    assert len({r.json()["id"] for r in responses}) == 1


# --- per-tenant limits ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def limited(pg_stack: Stack) -> Iterator[Stack]:
    """An API process on pg_stack's database with auth on and small limits, sending runs to
    a queue no worker reads: its runs stay queued, so they count as active."""
    with api_beside(
        pg_stack,
        "limited",
        TCPFR_AUTH="true",
        TCPFR_QUEUE=f"nobody-{secrets.token_hex(4)}",
        TCPFR_RECONCILE_INTERVAL="0",
        TCPFR_RATE_LIMIT="30/second",
        TCPFR_MAX_ACTIVE_RUNS="3",
    ) as stack:
        yield stack


def _client(stack: Stack, key: str) -> httpx.Client:
    return httpx.Client(base_url=stack.base_url, timeout=60, headers={"X-API-Key": key})


def _run_body(seed: int) -> dict[str, Any]:
    return {"preset": "riverbed-t1-64k", "seed": seed, "cache": "refresh"}


def test_active_runs_limit_is_429_and_counts_sweeps_by_runs(limited: Stack) -> None:
    key = issue(limited, f"busy-{secrets.token_hex(4)}")
    with _client(limited, key) as client:
        runs = [client.post("/v1/runs", json=_run_body(s)) for s in (1, 2)]
        assert [r.status_code for r in runs] == [202, 202]
        # A sweep of two more runs would make 4 > 3: refused whole, nothing created.
        before = client.get("/v1/sweeps").json()["items"]
        over = client.post("/v1/sweeps", json={**SMALL_SWEEP, "cache": "refresh", "seed": 5})
        assert_problem(over, 429)
        assert int(over.headers["Retry-After"]) > 0
        assert over.json()["limit"] == 3 and over.json()["active"] == 2
        assert client.get("/v1/sweeps").json()["items"] == before
        third = client.post("/v1/runs", json=_run_body(3))
        assert third.status_code == 202
        fourth = client.post("/v1/runs", json=_run_body(4))
        assert_problem(fourth, 429)
        assert fourth.headers["Retry-After"]
        # Another tenant is not held back by this one.
        with _client(limited, issue(limited, f"calm-{secrets.token_hex(4)}")) as other:
            assert other.post("/v1/runs", json=_run_body(4)).status_code == 202
        # Cancelling one makes room for one.
        assert client.post(f"/v1/runs/{runs[0].json()['id']}/cancel").status_code == 202
        assert client.post("/v1/runs", json=_run_body(4)).status_code == 202


def test_concurrent_submissions_cannot_pass_the_limit_together(limited: Stack) -> None:
    key = issue(limited, f"racer-{secrets.token_hex(4)}")

    def submit(seed: int) -> int:
        with _client(limited, key) as client:
            return client.post("/v1/runs", json=_run_body(100 + seed)).status_code

    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(submit, range(8)))
    assert sorted(codes) == [202, 202, 202, 429, 429, 429, 429, 429], codes


def test_request_rate_limit_is_429_with_retry_after(limited: Stack) -> None:
    key = issue(limited, f"chatty-{secrets.token_hex(4)}")

    async def burst() -> list[httpx.Response]:
        async with httpx.AsyncClient(
            base_url=limited.base_url, timeout=60, headers={"X-API-Key": key}
        ) as client:
            return await asyncio.gather(*(client.get("/v1/runs?limit=1") for _ in range(80)))

    responses = asyncio.run(burst())
    codes = Counter(r.status_code for r in responses)
    assert set(codes) == {200, 429}, codes
    assert codes[200] <= 30  # at most the limit in the window, whatever the interleaving
    limited_ = next(r for r in responses if r.status_code == 429)
    assert_problem(limited_, 429)
    assert 1 <= int(limited_.headers["Retry-After"]) <= 2
    # The public catalogue carries no tenant: it is never limited.
    with httpx.Client(base_url=limited.base_url, timeout=60) as client:
        assert client.get("/v1/presets").status_code == 200


# --- inputs that cannot be simulated -----------------------------------------------------


def test_overflowing_and_non_finite_inputs_are_422_at_submission(pg_stack: Stack) -> None:
    with pg_stack.client as client:
        body = client.get("/v1/presets/riverbed-t1-64k").json()["body"]
        body["links"][0]["delay"] = 1e308
        bad = client.post("/v1/runs", json={"scenario": body})
        assert_problem(bad, 422)
        assert any(e["loc"][:4] == ["body", "scenario", "links", 0] for e in bad.json()["errors"])
        for literal in ("NaN", "Infinity", "1e999"):
            raw = '{"preset": "riverbed-t1-64k", "seed": 1, "scenario": null, "x": ' + literal + "}"
            r = client.post("/v1/runs", content=raw, headers={"Content-Type": "application/json"})
            assert r.status_code == 422, (literal, r.status_code, r.text)
        sweep = client.post(
            "/v1/sweeps",
            json={"base": {"preset": "riverbed-t1-64k"}, "parameters": {"duration": [1e308]}},
        )
        assert_problem(sweep, 422)
        run_id = finished_run(pg_stack)
        for q in ("start=nan", "end=inf", "start=-Infinity"):
            r = client.get(f"/v1/runs/{run_id}/series/flow.backup.cwnd?{q}")
            assert_problem(r, 422)
            assert r.json()["errors"][0]["loc"][0] == "query"


# --- HTTP's own rules --------------------------------------------------------------------


def test_allow_lists_every_method_of_the_path(pg_stack: Stack) -> None:
    with pg_stack.client as client:
        options = client.options("/v1/runs")
        assert options.status_code == 204
        assert {"GET", "POST", "HEAD", "OPTIONS"} <= set(options.headers["Allow"].split(", "))
        put = client.put("/v1/runs", json={})
        assert_problem(put, 405)
        assert {"GET", "POST"} <= set(put.headers["Allow"].split(", "))
        validate = client.get("/v1/scenarios/validate")
        assert_problem(validate, 405)
        assert "POST" in validate.headers["Allow"].split(", ")
        one = client.options(f"/v1/scenarios/{uuid.uuid4()}")
        assert {"GET", "DELETE"} <= set(one.headers["Allow"].split(", "))


def test_a_body_that_is_not_json_is_415(pg_stack: Stack) -> None:
    with pg_stack.client as client:
        r = client.post(
            "/v1/runs",
            content=b'{"preset": "riverbed-t1-64k"}',
            headers={"Content-Type": "text/plain"},
        )
        assert_problem(r, 415)
        ok = client.post(
            "/v1/runs",
            content=b'{"preset": "riverbed-t1-64k"}',
            headers={"Content-Type": "application/json; charset=utf-8"},
        )
        assert ok.status_code in (201, 202)
