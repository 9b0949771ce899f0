"""Runs over HTTP against the production shape: Postgres, Redis, a real Celery worker."""

from __future__ import annotations

import random
import time
import uuid

from journeys import PROBLEM, assert_problem, bad_requests, happy_path, never_500
from servicekit import Stack

from store.models import DEFAULT_TENANT_ID


def _preset_body(stack: Stack, name: str = "riverbed-t1-8k") -> dict:
    with stack.client as client:
        return client.get(f"/v1/presets/{name}").json()["body"]


def test_preset_runs_to_success_over_http(pg_stack: Stack) -> None:
    happy_path(pg_stack)


def test_bad_requests_are_problems(pg_stack: Stack) -> None:
    bad_requests(pg_stack)


def test_nothing_a_client_sends_is_a_500(pg_stack: Stack) -> None:
    never_500(pg_stack)


def test_repeat_request_is_served_from_the_cache(pg_stack: Stack) -> None:
    seed = random.randrange(1, 2**31)
    with pg_stack.client as client:
        first = client.post("/v1/runs", json={"preset": "riverbed-t1-64k", "seed": seed}).json()
        pg_stack.wait_run(first["id"])

        resp = client.post("/v1/runs", json={"preset": "riverbed-t1-64k", "seed": seed})
        assert resp.status_code == 201, resp.text
        hit = resp.json()
        assert hit["id"] != first["id"] and hit["status"] == "succeeded"
        assert hit["cache_hit"] is True and hit["source_run_id"] == first["id"]
        assert hit["summary"]["flows"]["backup"]["completed"] is True
        assert hit["diagnosis"]["backup"]["limit"] == "link_capacity"
        # The inline scenario is the same simulation: same hash, same cache entry.
        inline = client.post(
            "/v1/runs", json={"scenario": _preset_body(pg_stack, "riverbed-t1-64k"), "seed": seed}
        )
        assert inline.status_code == 201 and inline.json()["source_run_id"] == first["id"]
        series = client.get(f"/v1/runs/{hit['id']}/series").json()["series"]
        assert any(s["key"] == "flow.backup.cwnd" for s in series)

        resp = client.post(
            "/v1/runs", json={"preset": "riverbed-t1-64k", "seed": seed, "cache": "refresh"}
        )
        assert resp.status_code == 202
        fresh = pg_stack.wait_run(resp.json()["id"])
        assert fresh["cache_hit"] is False and fresh["status"] == "succeeded"
        # Same scenario, seed and engine: the same result, to the bit.
        assert fresh["summary"]["flows"] == first_summary(pg_stack, first["id"])["flows"]


def first_summary(stack: Stack, run_id: str) -> dict:
    with stack.client as client:
        return client.get(f"/v1/runs/{run_id}").json()["summary"]


def test_idempotency_key_returns_the_same_run(pg_stack: Stack) -> None:
    key = str(uuid.uuid4())
    body = {"preset": "riverbed-t3-8k", "seed": random.randrange(1, 2**31)}
    with pg_stack.client as client:
        first = client.post("/v1/runs", json=body, headers={"Idempotency-Key": key})
        assert first.status_code == 202
        again = client.post("/v1/runs", json=body, headers={"Idempotency-Key": key})
        assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
        assert again.headers["location"] == first.headers["location"]
        other = client.post(
            "/v1/runs", json={**body, "seed": body["seed"] + 1}, headers={"Idempotency-Key": key}
        )
        problem = assert_problem(other, 422)
        assert problem["errors"][0]["loc"] == ["header", "Idempotency-Key"]
    pg_stack.wait_run(first.json()["id"])


def test_scenarios_are_stored_listed_run_and_deleted(pg_stack: Stack) -> None:
    body = _preset_body(pg_stack, "riverbed-t3-8k")
    body["name"] = f"mine-{uuid.uuid4().hex[:8]}"
    with pg_stack.client as client:
        facts = client.post("/v1/scenarios/validate", json=body)
        assert facts.status_code == 200, facts.text
        assert facts.json()["scenario_hash"].startswith("sha256:")
        assert facts.json()["facts"]

        created = [client.post("/v1/scenarios", json=body) for _ in range(3)]
        assert all(r.status_code == 201 for r in created)
        ids = [r.json()["id"] for r in created]
        assert created[0].headers["location"] == f"/v1/scenarios/{ids[0]}"

        seen, cursor = [], None
        while True:
            page = client.get(
                "/v1/scenarios", params={"limit": 2, **({"cursor": cursor} if cursor else {})}
            ).json()
            seen += [s["id"] for s in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen.index(ids[2]) < seen.index(ids[1]) < seen.index(ids[0])  # newest first
        assert len(seen) == len(set(seen))

        got = client.get(f"/v1/scenarios/{ids[0]}").json()
        assert got["name"] == body["name"] and got["scenario"]["links"][1]["rate"] == 44_736_000

        run = client.post("/v1/runs", json={"scenario_id": ids[0], "cache": "refresh"}).json()
        done = pg_stack.wait_run(run["id"])
        assert done["status"] == "succeeded" and done["scenario_id"] == ids[0]
        listed = client.get("/v1/runs", params={"scenario_id": ids[0]}).json()["items"]
        assert [r["id"] for r in listed] == [run["id"]]

        assert client.delete(f"/v1/scenarios/{ids[0]}").status_code == 204
        assert_problem(client.get(f"/v1/scenarios/{ids[0]}"), 404)
        assert_problem(client.delete(f"/v1/scenarios/{ids[0]}"), 404)
        # The run keeps its own copy of what it simulated.
        assert client.get(f"/v1/runs/{run['id']}/scenario").json()["name"] == body["name"]


def test_runs_are_listed_by_status_with_cursors(pg_stack: Stack) -> None:
    with pg_stack.client as client:
        ids = []
        for _ in range(3):
            r = client.post(
                "/v1/runs", json={"preset": "riverbed-t1-8k", "seed": random.randrange(1, 2**31)}
            )
            ids.append(r.json()["id"])
        for run_id in ids:
            pg_stack.wait_run(run_id)
        page = client.get("/v1/runs", params={"status": "succeeded", "limit": 2}).json()
        assert len(page["items"]) == 2 and page["next_cursor"]
        assert all(r["status"] == "succeeded" for r in page["items"])
        rest = client.get(
            "/v1/runs", params={"status": "succeeded", "limit": 2, "cursor": page["next_cursor"]}
        ).json()
        assert not {r["id"] for r in rest["items"]} & {r["id"] for r in page["items"]}
        by_preset = client.get("/v1/runs", params={"preset": "riverbed-t1-8k", "limit": 500}).json()
        assert set(ids) <= {r["id"] for r in by_preset["items"]}


def test_series_csv_frames_and_windows(pg_stack: Stack) -> None:
    with pg_stack.client as client:
        run = client.post("/v1/runs", json={"preset": "riverbed-t1-8k", "seed": 7}).json()
        run_id = pg_stack.wait_run(run["id"])["id"]
        key = "flow.backup.goodput_bps"

        csv = client.get(
            f"/v1/runs/{run_id}/series/{key}",
            params={"max_points": 50},
            headers={"Accept": "text/csv"},
        )
        assert csv.status_code == 200 and csv.headers["content-type"].startswith("text/csv")
        lines = csv.text.strip().splitlines()
        assert lines[0] == "t,v" and 2 < len(lines) <= 51

        window = client.get(
            f"/v1/runs/{run_id}/series/{key}", params={"start": 10, "end": 20}
        ).json()
        assert window["t"] and min(window["t"]) >= 10 and max(window["t"]) <= 20

        keys = f"{key},flow.backup.cwnd"
        wide = client.get(
            f"/v1/runs/{run_id}/frame", params={"keys": keys, "max_points": 100}
        ).json()
        cols = wide["columns"]
        assert wide["shape"] == "wide" and set(cols) == {"t", key, "flow.backup.cwnd"}
        assert len(cols["t"]) == len(cols[key]) == len(cols["flow.backup.cwnd"])
        assert wide["units"]["flow.backup.cwnd"] == "bytes"
        long = client.get(f"/v1/runs/{run_id}/frame", params={"keys": keys, "shape": "long"}).json()
        assert set(long["columns"]) == {"t", "key", "value"}
        assert set(long["columns"]["key"]) == {key, "flow.backup.cwnd"}
        csv = client.get(f"/v1/runs/{run_id}/frame", params={"keys": keys, "format": "csv"})
        assert csv.text.splitlines()[0] == f"t,{key},flow.backup.cwnd"

        missing = client.get(f"/v1/runs/{run_id}/frame", params={"keys": f"{key},nope"})
        assert_problem(missing, 404)
        assert_problem(client.get(f"/v1/runs/{run_id}/series/nope"), 404)
        assert_problem(
            client.get(f"/v1/runs/{run_id}/series/{key}", params={"start": 5, "end": 1}), 422
        )
        assert_problem(
            client.get(f"/v1/runs/{run_id}/series/{key}", params={"max_points": 10**9}), 422
        )

        detail = client.get(f"/v1/runs/{run_id}")
        assert (
            client.get(
                f"/v1/runs/{run_id}", headers={"If-None-Match": detail.headers["etag"]}
            ).status_code
            == 304
        )


def test_a_running_run_is_cancelled_cooperatively(pg_stack: Stack) -> None:
    body = _preset_body(pg_stack)
    body["flows"][0]["bytes"] = 10**12  # far beyond what the time cap lets it send
    body["duration"] = 10**6
    with pg_stack.client as client:
        run = client.post("/v1/runs", json={"scenario": body, "cache": "refresh"}).json()
        running = pg_stack.wait_run(run["id"], timeout=60, until={"running", "succeeded", "failed"})
        assert running["status"] == "running", running
        resp = client.post(f"/v1/runs/{run['id']}/cancel")
        assert resp.status_code == 202 and resp.json()["cancel_requested"] is True
        done = pg_stack.wait_run(run["id"], timeout=30)
        assert done["status"] == "cancelled", done
        assert client.post(f"/v1/runs/{run['id']}/cancel").json()["status"] == "cancelled"
        assert_problem(client.get(f"/v1/runs/{run['id']}/series"), 409)


def test_finished_runs_cannot_be_cancelled(pg_stack: Stack) -> None:
    with pg_stack.client as client:
        run = client.post("/v1/runs", json={"preset": "riverbed-t1-8k", "seed": 11}).json()
        pg_stack.wait_run(run["id"])
        assert_problem(client.post(f"/v1/runs/{run['id']}/cancel"), 409)


def test_health(pg_stack: Stack) -> None:
    with pg_stack.client as client:
        assert client.get("/healthz").json()["status"] == "ok"
        ready = client.get("/readyz").json()
        assert ready["checks"] == {"database": "ok", "broker": "ok"}
        presets = {p["name"]: p for p in client.get("/v1/presets").json()}
        assert {"riverbed-t1-8k", "riverbed-t3-8k", "riverbed-t1-64k"} <= set(presets)
        assert presets["riverbed-t1-8k"]["kind"] == "scenario"
        assert client.get("/openapi.json").headers["content-type"].startswith("application/json")
    assert PROBLEM


def test_a_run_never_sent_is_sent_by_the_reconciler(pg_stack: Stack) -> None:
    """The outbox path: a committed run whose message never reached the broker."""
    from sqlalchemy import create_engine, text

    body = _preset_body(pg_stack)
    run_id = uuid.uuid4()
    engine = create_engine(
        pg_stack.env["DATABASE_URL"].replace("postgresql://", "postgresql+psycopg://")
    )
    import json

    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO runs (id, tenant_id, status, scenario_name, scenario_hash, scenario, seed, engine_version,"
                " cache_hit, progress, cancel_requested, attempts, created_at)"
                " VALUES (:id, :tenant, 'queued', 'orphan', 'sha256:x', CAST(:doc AS jsonb), 5, '0', false, 0, false, 0,"
                " now() - interval '1 minute')"
            ),
            {"id": run_id, "tenant": DEFAULT_TENANT_ID, "doc": json.dumps(body)},
        )
    engine.dispose()
    deadline = time.monotonic() + 60
    done = pg_stack.wait_run(str(run_id), timeout=max(1.0, deadline - time.monotonic()))
    assert done["status"] == "succeeded", (done, pg_stack.logs())


def test_a_redelivered_message_for_a_finished_run_does_nothing(pg_stack: Stack) -> None:
    from messaging import make_celery, send_run
    from settings import Settings

    with pg_stack.client as client:
        run = client.post("/v1/runs", json={"preset": "riverbed-t1-8k", "seed": 13}).json()
        done = pg_stack.wait_run(run["id"])
        settings = Settings(
            broker_url=pg_stack.env["BROKER_URL"],
            queue=pg_stack.env["TCPFR_QUEUE"],
            data_dir=pg_stack.tmp / "producer",
        )
        celery = make_celery(settings)
        for _ in range(2):
            send_run(celery, uuid.UUID(run["id"]))
        time.sleep(2)  # the worker takes both messages at once; give it ample time
        again = client.get(f"/v1/runs/{run['id']}").json()
        assert again["attempts"] == 1 and again["finished_at"] == done["finished_at"]
        assert again["summary"] == done["summary"]
        assert "nothing to do" in pg_stack.logs(lines=400)


def test_the_series_index_says_how_a_series_was_thinned(pg_stack: Stack) -> None:
    """Sampled every millisecond for 135 s, the goodput has N = 135,000 beats for a share of
    at most TRACE_CAP (20,000) points: when it first holds 20,000 points they average in
    pairs, and again each time it fills, so each point is the mean of 2^h beats after h
    halvings, h the most with 20,000 x 2^(h-1) <= N, and it holds ceil(N / 2^h) points; the
    cwnd, which changes a few thousand times, has every point."""
    body = _preset_body(pg_stack, "riverbed-t1-64k")
    body["sample_interval"] = 0.001
    with pg_stack.client as client:
        run = client.post("/v1/runs", json={"scenario": body, "seed": 1}).json()
        done = pg_stack.wait_run(run["id"])
        index = client.get(f"/v1/runs/{done['id']}/series").json()["series"]
    beats = int(done["summary"]["sim_time"] / 0.001 + 1e-9)
    by_key = {s["key"]: s for s in index}
    goodput = by_key["flow.backup.goodput_bps"]
    how = goodput["thinning"]
    halvings = (beats // 20_000).bit_length()
    assert how["method"] == "stride_mean" and how["cap"] == 20_000
    assert how["halvings"] == halvings and how["samples_per_point"] == 2**halvings
    assert goodput["length"] == -(-beats // 2**halvings) <= how["cap"]
    assert by_key["flow.backup.cwnd"]["thinning"] is None
