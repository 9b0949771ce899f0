"""The API journeys the integration tests run against each stack (Postgres + Redis, embedded)."""

from __future__ import annotations

import random
from typing import Any

from servicekit import Stack

PROBLEM = "application/problem+json"


def assert_problem(resp: Any, status: int) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith(PROBLEM), resp.headers
    body = resp.json()
    assert body["status"] == status and body["title"] and body["type"]
    return body


def happy_path(stack: Stack, preset: str = "riverbed-t1-8k") -> dict[str, Any]:
    """Submit a preset, poll to success, read summary, diagnosis and a downsampled series."""
    seed = random.randrange(1, 2**31)
    with stack.client as client:
        resp = client.post("/v1/runs", json={"preset": preset, "seed": seed})
        assert resp.status_code == 202, resp.text
        run = resp.json()
        assert resp.headers["location"] == f"/v1/runs/{run['id']}"
        assert run["status"] in ("queued", "running", "succeeded")
        assert run["preset"] == preset and run["seed"] == seed and not run["cache_hit"]

        done = stack.wait_run(run["id"])
        assert done["status"] == "succeeded", (done, stack.logs())
        assert done["progress"] == 1.0 and done["attempts"] == 1
        assert done["started_at"] and done["finished_at"]

        flow = done["summary"]["flows"]["backup"]
        assert flow["completed"] is True
        assert flow["bytes_delivered"] == 25_000_000
        assert 0 < flow["completion_time"] <= done["summary"]["sim_time"]
        assert done["diagnosis"]["backup"]["limit"] == "receive_window"
        assert "rcv_buf" in done["diagnosis"]["backup"]["advice"]

        _series_journey(client, run["id"])
    return done


def _series_journey(client: Any, run_id: str) -> None:
    """A finished run's series: listed with units, downsampled by time-weighted means or
    keeping peaks, link keys with '>' in the path, a strong ETag and its 304."""
    index = client.get(f"/v1/runs/{run_id}/series").json()["series"]
    by_key = {s["key"]: s for s in index}
    key = "flow.backup.goodput_bps"
    assert by_key[key]["unit"] == "bit/s" and by_key[key]["length"] > 1000

    resp = client.get(f"/v1/runs/{run_id}/series/{key}", params={"max_points": 200})
    assert resp.status_code == 200, resp.text
    series = resp.json()
    # A rate: time-weighted bucket means by default (its mean rate is kept).
    assert series["downsampled"] is True and series["method"] == "rate-mean"
    assert series["points"] == len(series["t"]) == len(series["v"]) <= 200
    assert series["length"] == by_key[key]["length"]
    assert series["t"] == sorted(series["t"])
    # agg=max keeps the extremes: the peak survives downsampling.
    full = client.get(f"/v1/runs/{run_id}/series/{key}", params={"max_points": 100_000}).json()
    assert full["downsampled"] is False and len(full["t"]) == by_key[key]["length"]
    peaks = client.get(
        f"/v1/runs/{run_id}/series/{key}", params={"max_points": 200, "agg": "max"}
    ).json()
    assert max(peaks["v"]) == max(full["v"])

    # Link keys carry '>' ("link.access1.branch>cloud.queue_packets"): fine in a path.
    link_key = next(k for k in by_key if k.startswith("link.") and ">" in k)
    link = client.get(f"/v1/runs/{run_id}/series/{link_key}", params={"max_points": 50})
    assert link.status_code == 200 and link.json()["key"] == link_key

    # Finished runs are immutable: strong ETag, 304 on If-None-Match.
    etag = resp.headers["etag"]
    assert etag.startswith('"')
    again = client.get(
        f"/v1/runs/{run_id}/series/{key}",
        params={"max_points": 200},
        headers={"If-None-Match": etag},
    )
    assert again.status_code == 304 and again.headers["etag"] == etag and not again.content


def bad_requests(stack: Stack) -> None:
    """Bad scenarios get 422 problem+json with the field's path; unknown ids 404; no 500."""
    with stack.client as client:
        preset = client.get("/v1/presets/riverbed-t1-8k").json()["body"]
        preset["links"][1]["rate"] = "fast"
        body = assert_problem(client.post("/v1/runs", json={"scenario": preset}), 422)
        err = next(e for e in body["errors"] if e["loc"][:4] == ["body", "scenario", "links", 1])
        assert err["loc"] == ["body", "scenario", "links", 1, "rate"], body
        assert err["pointer"] == "/scenario/links/1/rate"

        preset["links"][1]["rate"] = "T1"
        preset["flows"][0]["dst"] = "nowhere"
        body = assert_problem(client.post("/v1/scenarios/validate", json=preset), 422)
        assert any(e["pointer"] == "/flows/0/dst" for e in body["errors"]), body

        assert_problem(client.get("/v1/runs/00000000-0000-7000-8000-000000000000"), 404)
        assert_problem(client.get("/v1/scenarios/00000000-0000-7000-8000-000000000000"), 404)
        assert_problem(client.get("/v1/runs/00000000-0000-7000-8000-000000000000/series"), 404)
        assert_problem(client.get("/v1/presets/no-such-preset"), 404)
        assert_problem(client.get("/v1/no-such-route"), 404)
        body = assert_problem(client.get("/v1/runs/not-a-uuid"), 422)
        assert body["errors"][0]["loc"] == ["path", "run_id"]
        body = assert_problem(client.post("/v1/runs", json={"preset": "no-such-preset"}), 422)
        assert body["errors"][0]["loc"] == ["body", "preset"]
        assert_problem(client.post("/v1/runs", json={"preset": "riverbed-study"}), 422)
        assert_problem(client.post("/v1/runs", json={}), 422)
        assert_problem(
            client.post(
                "/v1/runs",
                json={
                    "preset": "riverbed-t1-8k",
                    "scenario_id": "00000000-0000-7000-8000-000000000000",
                },
            ),
            422,
        )
        body = assert_problem(
            client.post("/v1/runs", json={"scenario_id": "00000000-0000-7000-8000-000000000000"}),
            422,
        )
        assert body["errors"][0]["loc"] == ["body", "scenario_id"]


def never_500(stack: Stack) -> None:
    """Hostile input of every kind is a 4xx problem, never a 500."""
    bodies: list[Any] = [
        b"not json",
        b"{",
        b"[]",
        b"null",
        b"1e999",
        b'"x"',
        b"\xff\xfe",
        {"preset": 5},
        {"preset": "x" * 5000},
        {"seed": -1, "preset": "riverbed-t1-8k"},
        {"seed": 2**70, "preset": "riverbed-t1-8k"},
        {"scenario_id": "abc"},
        {"scenario": {"name": "x"}},
        {"scenario": []},
        {"preset": "riverbed-t1-8k", "cache": "maybe"},
        {"preset": "riverbed-t1-8k", "extra": 1},
        {"preset": "../../etc/passwd"},
        {
            "scenario": {
                "name": "n",
                "nodes": [{"id": "a", "kind": "host"}] * 3,
                "links": [],
                "flows": [],
            }
        },
    ]
    with stack.client as client:
        for body in bodies:
            kwargs: dict[str, Any] = (
                {"content": body} if isinstance(body, bytes) else {"json": body}
            )
            resp = client.post("/v1/runs", headers={"content-type": "application/json"}, **kwargs)
            assert 400 <= resp.status_code < 500, (body, resp.status_code, resp.text)
            assert resp.headers["content-type"].startswith(PROBLEM)
            resp = client.post(
                "/v1/scenarios/validate", headers={"content-type": "application/json"}, **kwargs
            )
            assert 400 <= resp.status_code < 500, (body, resp.status_code, resp.text)
        run_id = "00000000-0000-7000-8000-000000000000"
        for path, params in [
            ("/v1/runs", {"limit": 0}),
            ("/v1/runs", {"limit": "x"}),
            ("/v1/runs", {"cursor": "!!"}),
            ("/v1/runs", {"cursor": "AAAA"}),
            ("/v1/runs", {"status": "bogus"}),
            ("/v1/scenarios", {"cursor": "%%%"}),
            (f"/v1/runs/{run_id}/series/x", {"max_points": 0}),
            (f"/v1/runs/{run_id}/frame", {}),
            (f"/v1/runs/{run_id}/frame", {"keys": ","}),
        ]:
            resp = client.get(path, params=params)
            assert 400 <= resp.status_code < 500, (path, params, resp.status_code, resp.text)
            assert resp.headers["content-type"].startswith(PROBLEM)
        resp = client.delete("/v1/runs")
        assert_problem(resp, 405)
