"""What a sweep may be asked over HTTP: a bad sweep is rejected whole at its field's path,
a stored scenario is a base, another tenant's sweep is a 404."""

from __future__ import annotations

import copy
import random
from typing import Any

from journeys import PROBLEM, assert_problem
from servicekit import Stack
from sqlalchemy import create_engine, text
from sweepkit import (
    RATE,
    WINDOW,
    count,
    small_base,
    sweep_body,
)


def test_a_bad_sweep_is_rejected_whole(pg_stack: Stack) -> None:
    body = sweep_body(pg_stack, 7)
    sweeps = count(pg_stack, "SELECT count(*) FROM sweeps")
    runs = count(pg_stack, "SELECT count(*) FROM runs")
    with pg_stack.client as client:

        def rejected(change: dict[str, Any]) -> dict[str, Any]:
            resp = client.post("/v1/sweeps", json={**copy.deepcopy(body), **change})
            return assert_problem(resp, 422)

        bad_path = {**body["parameters"], "links.nope.rate": ["T1", "T3"]}
        problem = rejected({"parameters": bad_path})
        assert ["body", "parameters", "links.nope.rate"] in [e["loc"] for e in problem["errors"]]
        assert "nope" in problem["detail"]

        bad_value = {RATE: ["T1", "T3"], WINDOW: [8760, "lots"]}
        problem = rejected({"parameters": bad_value})
        err = problem["errors"][0]
        assert err["loc"] == ["body", "parameters", WINDOW, 1], problem
        assert err["pointer"] == f"/parameters/{WINDOW}/1"

        bad_field = {RATE: ["T1"], "links.access1.colour": ["red"]}
        problem = rejected({"parameters": bad_field, "baseline": None})
        assert problem["errors"][0]["loc"][:3] == ["body", "parameters", "links.access1.colour"]

        problem = rejected({"baseline": {RATE: "E1", WINDOW: 8760}})
        assert problem["errors"][0]["loc"][:2] == ["body", "baseline"]

        problem = rejected({"replications": 1000})  # 4 points x 1000 > the cap of 1000
        assert "4000 runs" in problem["detail"] and "cap is 1000" in problem["detail"]
        assert problem["cap"] == 1000 and problem["runs"] == 4000

        huge = copy.deepcopy(body["base"]["scenario"])
        huge["flows"][0]["bytes"] = 10**12
        problem = rejected(
            {"base": {"scenario": huge}, "parameters": {"duration": [60, 10**7]}, "baseline": None}
        )
        assert problem["errors"][0]["type"] == "over_budget", problem
        assert problem["detail"].startswith("1 point(s) exceed the per-run budget: point 1 ")
        assert problem["over"] == ["events"] and "simulation events" in problem["detail"]

        problem = rejected({"base": {"preset": "no-such-preset"}})
        assert problem["errors"][0]["loc"] == ["body", "base", "preset"]
        problem = rejected({"base": {"scenario_id": "00000000-0000-7000-8000-000000000000"}})
        assert problem["errors"][0]["loc"] == ["body", "base", "scenario_id"]
        rejected({"mode": "zip", "parameters": {RATE: ["T1", "T3"], WINDOW: [8760]}})
        rejected({"parameters": {}})

        refuses_hostile_bodies(client, body)
    assert count(pg_stack, "SELECT count(*) FROM sweeps") == sweeps
    assert count(pg_stack, "SELECT count(*) FROM runs") == runs


def refuses_hostile_bodies(client: Any, body: dict[str, Any]) -> None:
    """Bodies no client should send (not JSON, not an object, values out of every range)
    get a 4xx problem, never a 500."""
    for hostile in [
        b"nope",
        b"[]",
        {"base": 5},
        {"base": {"preset": 5}},
        {"base": {"preset": "riverbed-study"}, "parameters": {RATE: ["T1"]}},
        {**body, "replications": 0},
        {**body, "cache": "maybe"},
        {**body, "seed": -1},
        {**body, "extra": 1},
        {**body, "name": "a\x00b"},  # Postgres text cannot hold NUL
        {**body, "parameters": {RATE: ["T1"], WINDOW: [2**70]}},  # nor JSON a 70-bit int
    ]:
        kwargs: dict[str, Any] = (
            {"content": hostile} if isinstance(hostile, bytes) else {"json": hostile}
        )
        resp = client.post("/v1/sweeps", headers={"content-type": "application/json"}, **kwargs)
        assert 400 <= resp.status_code < 500, (hostile, resp.text)
        assert resp.headers["content-type"].startswith(PROBLEM)


def test_a_stored_scenario_is_a_base(pg_stack: Stack) -> None:
    with pg_stack.client as client:
        stored = client.post("/v1/scenarios", json=small_base(pg_stack)).json()
        body = {**sweep_body(pg_stack, 5), "base": {"scenario_id": stored["id"]}}
        plan = client.post("/v1/sweeps", params={"dry_run": "true"}, json=body)
        assert plan.status_code == 200, plan.text
        assert plan.json()["point_count"] == 4 and plan.json()["estimate"]["runs"] == 12
        problem = assert_problem(
            client.post("/v1/sweeps", json={**body, "base": {"scenario_id": "nope"}}), 422
        )
        assert problem["errors"][0]["loc"] == ["body", "base", "scenario_id"]


def test_unknown_and_other_tenants_sweeps_are_404(pg_stack: Stack) -> None:
    url = pg_stack.env["DATABASE_URL"].replace("postgresql://", "postgresql+psycopg://")
    engine = create_engine(url)
    with engine.begin() as conn:
        tenant = conn.execute(
            text(
                "INSERT INTO tenants (id, name, created_at) VALUES (gen_random_uuid(), :n, now())"
                " RETURNING id"
            ),
            {"n": f"other-{random.randrange(2**40)}"},
        ).scalar_one()
        sweep_id = conn.execute(
            text(
                "INSERT INTO sweeps (id, tenant_id, name, spec, points, seeds, run_count, cache,"
                " cancel_requested, created_at) VALUES (gen_random_uuid(), :t, 'theirs',"
                " '{}'::jsonb, '[]'::jsonb, '[1]'::jsonb, 0, 'reuse', false, now()) RETURNING id"
            ),
            {"t": tenant},
        ).scalar_one()
    engine.dispose()
    with pg_stack.client as client:
        for sid in (sweep_id, "00000000-0000-7000-8000-000000000000"):
            assert_problem(client.get(f"/v1/sweeps/{sid}"), 404)
            assert_problem(client.get(f"/v1/sweeps/{sid}/summary"), 404)
            assert_problem(client.get(f"/v1/sweeps/{sid}/runs"), 404)
            assert_problem(client.post(f"/v1/sweeps/{sid}/cancel"), 404)
        assert str(sweep_id) not in {s["id"] for s in client.get("/v1/sweeps").json()["items"]}
        assert_problem(client.get("/v1/sweeps/not-a-uuid"), 422)
        assert_problem(client.get("/v1/sweeps", params={"cursor": "!!"}), 422)
