"""Sweeps over HTTP against Postgres, Redis and two worker processes: a 2x2x3 sweep whose
summary is recomputed here from the stored runs, the result cache, cancel, the Riverbed
study through one POST. The export's table beside the summary's: test_sweep_tables.py. What
a sweep may be asked (rejections, a stored scenario as base, 404s): test_sweep_requests.py."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
import uuid
from typing import Any

import numpy as np
import pytest
from journeys import assert_problem
from servicekit import ROOT, Stack
from sweepkit import (
    RATE,
    WINDOW,
    all_runs,
    count,
    events_of,
    flows_of,
    small_base,
    stored_results,
    sweep_body,
    t_interval,
    wait_sweep,
)


def test_a_2x2x3_sweep_is_summarised_from_its_runs(pg_stack: Stack) -> None:
    seed = random.randrange(1, 2**40)
    body = sweep_body(pg_stack, seed)
    before = count(pg_stack, "SELECT count(*) FROM runs")
    with pg_stack.client as client:
        plan = client.post("/v1/sweeps", params={"dry_run": "true"}, json=body)
        assert plan.status_code == 200, plan.text
        est = plan.json()["estimate"]
        assert (est["runs"], est["cached"], est["to_simulate"]) == (12, 0, 12)
        # The events and each run's overhead (in events) at the engine's speed.
        assert est["events"] > 0 and est["cpu_seconds"] == pytest.approx(
            (est["events"] + 12 * est["run_overhead_events"]) / est["events_per_second"],
            rel=1e-3,
        )
        assert plan.json()["seeds"] == [seed, seed + 1, seed + 2]
        assert count(pg_stack, "SELECT count(*) FROM runs") == before  # a dry run creates nothing

        resp = client.post("/v1/sweeps", json=body)
        assert resp.status_code == 202, resp.text
        sweep = resp.json()
        assert resp.headers["location"] == f"/v1/sweeps/{sweep['id']}"
        assert sweep["run_count"] == 12 and len(sweep["points"]) == 4
        assert sweep["baseline_index"] == 0 and sweep["points"][0]["is_baseline"]
        assert sweep["cache_hits"] == 0 and sweep["simulations"] == 12
        assert sweep["progress"]["eta_method"] in ("estimate", "run_time")

    done = wait_sweep(pg_stack, sweep["id"])
    assert done["status"] == "succeeded", (done, pg_stack.logs())
    assert done["progress"]["counts"]["succeeded"] == 12 and done["progress"]["fraction"] == 1.0
    assert done["progress"]["eta_seconds"] is None

    runs = all_runs(pg_stack, sweep["id"])
    assert [(r["point_index"], r["replication"]) for r in runs] == [
        (p, r) for p in range(4) for r in range(3)
    ]
    # Common random numbers: every point runs with the same seeds.
    assert {tuple(r["seed"] for r in runs if r["point_index"] == p) for p in range(4)} == {
        (seed, seed + 1, seed + 2)
    }
    values: Values = {}
    for r in runs:
        values.setdefault(r["point_index"], {})[r["seed"]] = flows_of(pg_stack, r["id"])

    with pg_stack.client as client:
        resp = client.get(f"/v1/sweeps/{sweep['id']}/summary")
        assert resp.status_code == 200, resp.text
        summary = resp.json()
        again = client.get(
            f"/v1/sweeps/{sweep['id']}/summary", headers={"If-None-Match": resp.headers["etag"]}
        )
        assert again.status_code == 304
    assert summary["partial"] is False and summary["status"] == "succeeded"
    directions = {(m["flow"], m["metric"]): m["direction"] for m in summary["metrics"]}
    assert directions[("backup", "completion_time")] == "lower"
    assert directions[("backup", "goodput_bps")] == "higher"

    seeds = [seed, seed + 1, seed + 2]
    check_statistics(summary, values, seeds)
    check_effects(summary, values, seeds)


Values = dict[int, dict[int, dict[str, Any]]]  # point -> seed -> flow summary


def check_statistics(summary: dict[str, Any], values: Values, seeds: list[int]) -> None:
    """Each point's mean, sd and t-interval, and its paired delta from the baseline,
    recomputed from the runs' own figures."""
    for metric in ("completion_time", "goodput_bps", "retransmissions", "rtt_mean"):
        base = np.array([values[0][s][metric] for s in seeds], dtype=float)
        for row in summary["points"]:
            x = np.array([values[row["index"]][s][metric] for s in seeds], dtype=float)
            stat = row["metrics"]["backup"][metric]
            assert stat["n"] == 3
            assert stat["mean"] == pytest.approx(x.mean(), rel=1e-12)
            assert stat["sd"] == pytest.approx(x.std(ddof=1), rel=1e-9, abs=1e-12)
            lo, hi = t_interval(x)
            # Every one of these metrics is >= 0: the t-interval is cut at 0, and says so.
            assert stat["ci95"]["clipped"] == (lo < 0)
            lo = max(lo, 0.0)
            assert (stat["ci95"]["low"], stat["ci95"]["high"]) == pytest.approx((lo, hi), rel=1e-9)
            if row["is_baseline"]:
                assert stat["delta"] is None
                continue
            d = x - base  # paired per seed
            delta = stat["delta"]
            assert delta["paired"] and delta["n"] == 3
            assert delta["mean"] == pytest.approx(d.mean(), rel=1e-9, abs=1e-12)
            if d.std(ddof=1) > 0:
                lo, hi = t_interval(d)
                lo = max(lo, -base.mean())  # the point's mean cannot go below 0
                assert (delta["ci95"]["low"], delta["ci95"]["high"]) == pytest.approx(
                    (lo, hi), rel=1e-9
                )
            if base.mean():
                assert delta["pct"] == pytest.approx(100 * d.mean() / base.mean(), rel=1e-9)


def check_effects(summary: dict[str, Any], values: Values, seeds: list[int]) -> None:
    """The main effects of the completion time, the best point and the headline,
    recomputed from the runs' own figures."""
    # Main effects of the completion time, recomputed: SS of each parameter's level means
    # over SS_total of all twelve observations.
    params = {row["index"]: row["parameters"] for row in summary["points"]}
    y = np.array([values[p][s]["completion_time"] for p in range(4) for s in seeds])
    grand, ss_total = y.mean(), ((y - y.mean()) ** 2).sum()
    effects = next(
        e for e in summary["effects"] if (e["flow"], e["metric"]) == ("backup", "completion_time")
    )
    assert effects["basis"] == "replications"
    shares = {f["factor"]: f["share"] for f in effects["factors"]}
    for path in (RATE, WINDOW):
        ss = 0.0
        for level in {params[p][path] for p in range(4)}:
            obs = [
                values[p][s]["completion_time"]
                for p in range(4)
                for s in seeds
                if params[p][path] == level
            ]
            ss += len(obs) * (np.mean(obs) - grand) ** 2
        assert shares[path] == pytest.approx(ss / ss_total, rel=1e-9)
    for e in summary["effects"]:
        total = sum(f["share"] or 0 for f in e["factors"])
        assert total <= 1 + 1e-9, e
        if e["interaction_share"] is not None and e["within_share"] is not None:
            assert total + e["interaction_share"] + e["within_share"] == pytest.approx(1.0)

    means = {
        row["index"]: row["metrics"]["backup"]["completion_time"]["mean"]
        for row in summary["points"]
    }
    best = next(b for b in summary["best"] if b["metric"] == "completion_time")
    assert best["point_index"] == min(means, key=means.__getitem__)
    top = max(shares, key=shares.__getitem__)
    assert summary["text"].startswith(f"{top} explains {shares[top]:.0%}"), summary["text"]
    assert "At the baseline" in summary["text"]


def test_a_summary_built_on_kept_observations_is_the_one_built_afresh(pg_stack: Stack) -> None:
    """The API keeps a running sweep's observations between rebuilds of its summary and
    reads only the results it has not read (api/sweeps/summary.py `known`): a summary
    built with half of them kept, and then with all of them, is the one built from the
    database in one go, to every figure and sentence."""
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session

    from api.sweeps import summary as sweep_summary
    from store.models import Sweep

    body = sweep_body(pg_stack, random.randrange(1, 2**40))
    with pg_stack.client as client:
        sweep_id = client.post("/v1/sweeps", json=body).json()["id"]
        wait_sweep(pg_stack, sweep_id)
        served = client.get(f"/v1/sweeps/{sweep_id}/summary").json()
    url = pg_stack.env["DATABASE_URL"].replace("postgresql://", "postgresql+psycopg://")
    engine = create_engine(url)
    try:
        with Session(engine) as session:
            sweep = session.get(Sweep, uuid.UUID(sweep_id))
            assert sweep is not None
            fresh = sweep_summary.build(session, sweep).model_dump(mode="json")
            known: dict[uuid.UUID, Any] = {}
            sweep_summary.build(session, sweep, known=known)
            assert len(known) == 12
            kept = dict(sorted(known.items())[::2])
            half = sweep_summary.build(session, sweep, known=kept).model_dump(mode="json")
            assert len(kept) == 12  # the six not kept were read and added
            full = sweep_summary.build(session, sweep, known=kept).model_dump(mode="json")
    finally:
        engine.dispose()
    assert fresh["finished"] == 12 and not fresh["partial"]
    for key in ("metrics", "points", "effects", "best", "interactions", "text"):
        assert half[key] == fresh[key] == full[key], key
        assert served[key] == fresh[key], key


def test_a_sweeps_counts_are_one_statement_built_once(
    pg_stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SweepRepository.progress, which every rebuild of a running sweep's documents reads,
    gives what run_groups.progress and the poll give, from a statement built once."""
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session

    from store import run_groups
    from store.models import DEFAULT_TENANT_ID, Run, RunStatus
    from store.sweeps import SweepRepository

    body = sweep_body(pg_stack, random.randrange(1, 2**40))
    with pg_stack.client as client:
        sweep_id = uuid.UUID(client.post("/v1/sweeps", json=body).json()["id"])
        wait_sweep(pg_stack, str(sweep_id))
    built = []
    columns = run_groups.columns
    monkeypatch.setattr(run_groups, "columns", lambda s: built.append(1) or columns(s))
    url = pg_stack.env["DATABASE_URL"].replace("postgresql://", "postgresql+psycopg://")
    engine = create_engine(url)
    try:
        with Session(engine) as session:
            repo = SweepRepository(session)
            first = repo.progress(sweep_id)
            after_first = len(built)
            assert repo.progress(sweep_id) == first
            assert len(built) == after_first  # not built again
            assert first == run_groups.progress(session, Run.sweep_id == sweep_id)
            polled = repo.poll(sweep_id, tenant_id=DEFAULT_TENANT_ID)
            assert polled is not None and polled[1] == first
            assert first.counts[RunStatus.succeeded] == 12
            assert repo.progress(uuid.uuid4()).finished == 0  # no such sweep: no runs
    finally:
        engine.dispose()


def test_a_resubmitted_sweep_simulates_nothing(pg_stack: Stack) -> None:
    body = sweep_body(pg_stack, random.randrange(1, 2**40))
    with pg_stack.client as client:
        first = client.post("/v1/sweeps", json=body).json()
        wait_sweep(pg_stack, first["id"])
        assert stored_results(pg_stack, first["id"]) == 12
        first_runs = {r["id"] for r in all_runs(pg_stack, first["id"])}

        plan = client.post("/v1/sweeps", params={"dry_run": "true"}, json=body).json()
        assert plan["estimate"]["cached"] == 12 and plan["estimate"]["events"] == 0

        resp = client.post("/v1/sweeps", json=body)
        assert resp.status_code == 201, resp.text  # every run from the cache: done at once
        second = resp.json()
        assert second["id"] != first["id"] and second["status"] == "succeeded"
        assert second["cache_hits"] == 12 and second["simulations"] == 0
        runs = all_runs(pg_stack, second["id"])
        assert all(r["cache_hit"] and r["source_run_id"] in first_runs for r in runs)
        assert stored_results(pg_stack, second["id"]) == 0
        # Each run's history tells how it got its result: simulated, or served.
        simulated = events_of(client, sorted(first_runs)[0])
        assert simulated[:2] == ["queued", "enqueued"] and simulated[-1] == "succeeded"
        assert "started" in simulated
        assert events_of(client, runs[0]["id"]) == ["cache_hit"]
        a = client.get(f"/v1/sweeps/{first['id']}/summary").json()
        b = client.get(f"/v1/sweeps/{second['id']}/summary").json()
        assert [p["metrics"] for p in a["points"]] == [p["metrics"] for p in b["points"]]
        assert a["text"] == b["text"]

        # An Idempotency-Key replays the sweep it created; another body under it is a 422.
        key = f"sweep-{random.randrange(2**62)}"
        made = client.post("/v1/sweeps", json=body, headers={"Idempotency-Key": key})
        replay = client.post("/v1/sweeps", json=body, headers={"Idempotency-Key": key})
        assert made.status_code == 201 and replay.status_code == 200
        assert replay.json()["id"] == made.json()["id"]
        other = client.post(
            "/v1/sweeps", json={**body, "replications": 2}, headers={"Idempotency-Key": key}
        )
        assert assert_problem(other, 422)["errors"][0]["loc"] == ["header", "Idempotency-Key"]

        # cache: refresh simulates every run again.
        fresh = client.post("/v1/sweeps", json={**body, "cache": "refresh"})
        assert fresh.status_code == 202 and fresh.json()["simulations"] == 12
    assert wait_sweep(pg_stack, fresh.json()["id"])["status"] == "succeeded"
    assert stored_results(pg_stack, fresh.json()["id"]) == 12


def test_a_sweep_is_cancelled(pg_stack: Stack) -> None:
    base = small_base(pg_stack)
    base["flows"][0]["bytes"] = 10**12  # far beyond what the time cap lets it send
    base["duration"] = 10**6
    body = {
        "base": {"scenario": base},
        "parameters": {WINDOW: [8760, 65535]},
        "replications": 3,
        "cache": "refresh",
    }
    with pg_stack.client as client:
        sweep = client.post("/v1/sweeps", json=body).json()
        deadline = time.monotonic() + 60
        while client.get(f"/v1/sweeps/{sweep['id']}").json()["progress"]["counts"]["running"] < 1:
            assert time.monotonic() < deadline, pg_stack.logs()
            time.sleep(0.1)
        running = client.get(f"/v1/sweeps/{sweep['id']}").json()
        assert running["status"] == "running"
        assert running["progress"]["eta_seconds"] is not None
        resp = client.get(f"/v1/sweeps/{sweep['id']}/summary")
        # Tagged while partial, and not to be kept beyond a revalidation: no run finishes
        # while these run far beyond the test, so the same tag is current until cancel.
        assert resp.headers["cache-control"] == "private, no-cache"
        partial = resp.json()
        assert partial["partial"] is True
        assert partial["text"].startswith("Partial summary: 0 of 6 runs have finished")
        same = client.get(
            f"/v1/sweeps/{sweep['id']}/summary", headers={"If-None-Match": resp.headers["etag"]}
        )
        assert same.status_code == 304 and same.content == b""
        partial_tag = resp.headers["etag"]
        polled = client.get(f"/v1/sweeps/{sweep['id']}/progress")
        state = polled.json()
        # The state alone: counts and time left in well under a kilobyte.
        assert len(polled.content) < 1024 and "points" not in state, polled.text
        assert state["status"] == "running" and state["progress"]["counts"]["running"] >= 1
        assert polled.headers["etag"] and state["finished_at"] is None
        resp = client.post(f"/v1/sweeps/{sweep['id']}/cancel")
        assert resp.status_code == 202 and resp.json()["cancel_requested"] is True
    done = wait_sweep(pg_stack, sweep["id"], timeout=60)
    assert done["status"] == "cancelled", done
    assert done["progress"]["counts"]["cancelled"] == 6
    with pg_stack.client as client:
        # Settled: the partial summary's tag is stale, and the new one is kept for a day.
        resp = client.get(
            f"/v1/sweeps/{sweep['id']}/summary", headers={"If-None-Match": partial_tag}
        )
        assert resp.status_code == 200 and resp.json()["partial"] is False
        assert resp.headers["cache-control"] == "private, max-age=86400"
        final = client.get(f"/v1/sweeps/{sweep['id']}/progress")
        assert final.json()["status"] == "cancelled" and final.json()["finished_at"]
        again = client.post(f"/v1/sweeps/{sweep['id']}/cancel")
        assert again.status_code == 202 and again.json()["status"] == "cancelled"
        summary = client.get(f"/v1/sweeps/{sweep['id']}/summary").json()
        assert summary["status"] == "cancelled" and not summary["metrics"]
        for run in all_runs(pg_stack, sweep["id"]):
            history = events_of(client, run["id"])
            assert history[-1] == "cancelled", history
            # A run that had started was asked to stop; a queued one was cancelled at once.
            assert ("started" in history) == ("cancel_requested" in history), history


def test_the_riverbed_study_in_one_post(pg_stack: Stack) -> None:
    with pg_stack.client as client:
        plan = client.post(
            "/v1/presets/riverbed-study/sweep", params={"dry_run": "true"}, json={"replications": 1}
        )
        assert plan.status_code == 200 and plan.json()["estimate"]["runs"] == 4
        resp = client.post("/v1/presets/riverbed-study/sweep", json={"replications": 1})
        assert resp.status_code in (201, 202), resp.text
        assert resp.json()["preset"] == "riverbed-study"
        assert_problem(client.post("/v1/presets/riverbed-t1-8k/sweep"), 422)
        assert_problem(client.post("/v1/presets/no-such-study/sweep"), 404)
    done = wait_sweep(pg_stack, resp.json()["id"])
    assert done["status"] == "succeeded", done
    with pg_stack.client as client:
        summary = client.get(f"/v1/sweeps/{done['id']}/summary").json()
    text_ = summary["text"]
    # The seed's conclusion: the window, not the link, limits the 8 KB transfer.
    assert "the receive window, not the link, is what limits backup" in text_, text_
    assert text_.startswith(f"{WINDOW} explains 9"), text_
    shares = {f["factor"]: f["share"] for f in summary["effects"][0]["factors"]}
    assert shares[WINDOW] > 0.9 > shares["links.access1.rate + links.access2.rate"]
    baseline = next(p for p in summary["points"] if p["is_baseline"])
    assert baseline["limits"]["backup"]["limit"] == "receive_window"

    # The engine's own study runner agrees to the bit on every point.
    out = subprocess.run(
        [sys.executable, "-m", "engine", "study", "riverbed-study", "--json", "--jobs", "1"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        text=True,
    ).stdout
    local = [p["result"]["flows"]["backup"]["completion_time"] for p in json.loads(out)["points"]]
    served = [p["metrics"]["backup"]["completion_time"]["mean"] for p in summary["points"]]
    assert served == local
