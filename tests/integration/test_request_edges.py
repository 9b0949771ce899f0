"""Edges of the HTTP contract a client can reach (issue 27's small failures): a figure too wide
for 64 bits in a refusal, booleans posing as seeds, the OpenAPI document's seed bounds
against the server's, the methods OPTIONS names, and when to ask /readyz again."""

from __future__ import annotations

import time

import httpx
from journeys import assert_problem
from servicekit import Stack, free_port

BASE = {"preset": "riverbed-t1-8k"}
ONE_POINT = {"flows.backup.tcp.rcv_buf": [8760]}


def test_a_sweep_of_more_than_2_to_the_64_points_is_refused_not_a_500(pg_stack: Stack) -> None:
    """65 parameters of two values each: 2^65 points, a run count orjson cannot write as a
    JSON number. The refusal carries it as its exact decimal text."""
    parameters = {f"flows.backup.tcp.p{i}": [1, 2] for i in range(65)}
    with pg_stack.client as client:
        resp = client.post("/v1/sweeps", json={"base": BASE, "parameters": parameters})
    problem = assert_problem(resp, 422)
    assert problem["runs"] == str(2**65)
    assert problem["errors"][0]["type"] == "too_many_runs"


def test_true_and_false_are_not_seeds(pg_stack: Stack) -> None:
    with pg_stack.client as client:
        preset = client.get("/v1/presets/riverbed-t1-8k").json()["body"]
        for flag in (True, False):
            bodies = [
                ("/v1/runs", {**BASE, "seed": flag}, ["body", "seed"]),
                ("/v1/runs", {"scenario": {**preset, "seed": flag}}, ["body", "scenario", "seed"]),
                (
                    "/v1/sweeps",
                    {"base": BASE, "parameters": ONE_POINT, "seed": flag},
                    ["body", "seed"],
                ),
                ("/v1/presets/riverbed-study/sweep", {"seed": flag}, ["body", "seed"]),
            ]
            for path, body, loc in bodies:
                problem = assert_problem(client.post(path, json=body), 422)
                assert loc in [e["loc"] for e in problem["errors"]], (path, problem)


def _bound(schema: dict, name: str) -> tuple[int, bool]:
    """A schema property's upper bound as the document states it (a JSON number: a double),
    and whether it is inclusive."""
    (numeric,) = [
        s
        for s in schema["properties"][name].get("anyOf", [schema["properties"][name]])
        if s.get("type") == "integer"
    ]
    if "maximum" in numeric:
        return int(numeric["maximum"]), True
    return int(numeric["exclusiveMaximum"]), False


def test_the_documented_seed_bounds_are_the_servers(pg_stack: Stack) -> None:
    """The largest seed the OpenAPI document allows is accepted, the next one refused."""
    with pg_stack.client as client:
        schemas = client.get("/openapi.json").json()["components"]["schemas"]
        cases = [
            # A real run (a short one) at the largest seed.
            ("RunCreate", lambda s: client.post("/v1/runs", json={**BASE, "seed": s})),
            (
                "Scenario",
                lambda s: client.post("/v1/scenarios/validate", json=_scenario(client, s)),
            ),
            (
                "SweepCreate",
                lambda s: client.post(
                    "/v1/sweeps",
                    params={"dry_run": "true"},
                    json={"base": BASE, "parameters": ONE_POINT, "seed": s, "replications": 1000},
                ),
            ),
            (
                "PresetSweepCreate",
                lambda s: client.post(
                    "/v1/presets/riverbed-study/sweep", params={"dry_run": "true"}, json={"seed": s}
                ),
            ),
        ]
        for name, post in cases:
            bound, inclusive = _bound(schemas[name], "seed")
            largest = bound if inclusive else bound - 1
            resp = post(largest)
            assert resp.status_code in (200, 201, 202), (name, largest, resp.text)
            problem = assert_problem(post(largest + 1), 422)
            assert problem["errors"][0]["loc"][-1] == "seed", (name, problem)


def _scenario(client: httpx.Client, seed: int) -> dict:
    return {**client.get("/v1/presets/riverbed-t1-8k").json()["body"], "seed": seed}


def test_options_names_the_methods_of_the_resource_itself(pg_stack: Stack) -> None:
    """`/v1/scenarios/validate` also matches `/v1/scenarios/{scenario_id}`, whose GET and
    DELETE are not the validator's."""
    with pg_stack.client as client:
        resp = client.options("/v1/scenarios/validate")
        assert resp.status_code == 204
        assert resp.headers["allow"] == "OPTIONS, POST"
        resp = client.options("/v1/scenarios/00000000-0000-7000-8000-000000000000")
        assert resp.headers["allow"] == "DELETE, GET, HEAD, OPTIONS"


def test_not_ready_says_when_to_ask_again(pg_stack: Stack) -> None:
    """An API whose broker is unreachable is up but not ready: 503 with Retry-After."""
    closed = free_port()  # nothing listens there
    port = free_port()
    env = {**pg_stack.env, "PORT": str(port), "BROKER_URL": f"redis://127.0.0.1:{closed}/0"}
    tmp = pg_stack.tmp / "unready"
    tmp.mkdir(exist_ok=True)
    stack = Stack(base_url=f"http://127.0.0.1:{port}", env=env, tmp=tmp)
    from api.serve import api_command
    from settings import Settings

    stack.start("api", api_command(Settings(_env_file=None, port=port)))
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                resp = httpx.get(stack.base_url + "/readyz", timeout=10)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, stack.logs()
                time.sleep(0.2)
        assert resp.status_code == 503, resp.text
        assert resp.json()["checks"]["broker"].startswith("error")
        assert int(resp.headers["retry-after"]) > 0
    finally:
        stack.stop()
