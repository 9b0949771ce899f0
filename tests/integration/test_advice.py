"""Advice and remedy checks through the service: the API creates the workflow, real worker
processes take its steps and simulate its runs (Postgres, Redis), and the answers are
checked against window and link physics, not against what the code printed.

Kept cheap: seed 003's path with a 2.5 MB transfer (a tenth of the lab's) and a 5 MB Frame
Relay backup, a few tenths of a second of a worker per run."""

from __future__ import annotations

import time
from typing import Any

import pytest
from journeys import assert_problem
from servicekit import Stack

pytestmark = pytest.mark.integration

BYTES = 2_500_000
WINDOW = "flows.backup.tcp.rcv_buf"
ACCESS = ["links.access1.rate", "links.access2.rate"]


def short_seed_003(stack: Stack) -> dict[str, Any]:
    with stack.client as client:
        body = client.get("/v1/presets/riverbed-t1-8k").json()["body"]
    body["name"] = "riverbed-t1-8k, 2.5 MB"
    body["flows"][0]["bytes"] = BYTES
    return body


def wait_advice(stack: Stack, advice_id: str, timeout: float = 240) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    with stack.client as client:
        while True:
            doc = client.get(f"/v1/advice/{advice_id}").json()
            if doc["status"] not in ("queued", "running"):
                return doc
            if time.monotonic() > deadline:
                raise AssertionError(f"advice {advice_id} still {doc['status']}\n{stack.logs()}")
            time.sleep(0.2)


def test_the_window_not_the_t3_meets_the_target(pg_stack: Stack) -> None:
    """Seed 003's finding, shortened: the transfer is window-limited (W/RTT), so a larger
    receive window meets the target and the T3 upgrade does not."""
    scenario = short_seed_003(pg_stack)
    target = 20.0
    body = {
        "scenario": scenario,
        "target": {"flow": "backup", "metric": "completion_time", "value": target},
        "levers": [WINDOW, {"paths": ACCESS}],
        "budget": 20,
    }
    with pg_stack.client as client:
        resp = client.post("/v1/advice", json=body)
        assert resp.status_code == 202, resp.text
        created = resp.json()
        assert resp.headers["location"] == f"/v1/advice/{created['id']}"
        assert created["kind"] == "advice" and created["status"] in ("queued", "running")
        assert created["progress"]["run_budget"] == 20
    done = wait_advice(pg_stack, created["id"])
    assert done["status"] == "succeeded", done
    report = done["report"]
    assert report["finished"] is True and report["reachable"] is True

    # Physics: the base run's own minimum RTT (167 ms of propagation and a frame's
    # serialisation); a window-limited transfer takes BYTES / (W / RTT) at least.
    with pg_stack.client as client:
        runs = client.get(f"/v1/advice/{created['id']}/runs").json()["items"]
        base_run = next(r for r in runs if r["changes"] == {})
        flow = client.get(f"/v1/runs/{base_run['id']}").json()["summary"]["flows"]["backup"]
    rtt = flow["rtt_min"]
    assert 0.16 < rtt < 0.20, rtt

    top = report["fixes"][0]
    assert [c["path"] for c in top["changes"]] == [WINDOW] and top["cost"] == 0
    window = top["changes"][0]["value"]
    assert top["measured"]["mean"] <= target
    # The smallest window that can meet the target moves BYTES in `target` seconds.
    assert window >= BYTES * rtt / target, (window, rtt)
    assert window <= 2.0 * BYTES * rtt / target, window  # bisected, not just the maximum

    t3 = next(r for r in report["rejected"] if r["paths"] == ACCESS)
    assert t3["limit"] == "window"
    on_t3 = t3["measured"]["mean"]
    # On T3 the window still rules: 2.5 MB at 8,760 B per round trip.
    assert on_t3 > target
    assert abs(on_t3 - BYTES / (8760 / rtt)) / on_t3 < 0.15, (on_t3, rtt)

    curves_bound_the_measured(pg_stack, created["id"])

    # Every run is an ordinary run, visible and counted.
    assert len(runs) == report["runs"] == done["progress"]["runs"] <= 20
    assert done["progress"]["fraction"] == 1.0
    assert done["progress"]["counts"]["succeeded"] == len(runs)


def curves_bound_the_measured(stack: Stack, advice_id: str) -> None:
    """The curves: the bound beside the measured points. A bound is optimistic (no slow
    start, no loss), so no measured completion time beats it (2% for rounding); as JSON
    and as CSV."""
    with stack.client as client:
        curves = client.get(f"/v1/advice/{advice_id}/curves").json()
        csv = client.get(f"/v1/advice/{advice_id}/curves", params={"format": "csv"})
    assert curves["unit"] == "s"
    measured = [p for p in curves["points"] if p["measured"] is not None]
    assert {p["lever"] for p in measured} >= {p["lever"] for p in curves["points"]}
    for p in measured:
        assert p["bound"] is not None and p["measured"] >= 0.98 * p["bound"], p
    assert csv.headers["content-type"].startswith("text/csv")
    assert csv.text.splitlines()[0].startswith("lever,paths,value,label,metric,measured[s]")
    assert len(csv.text.splitlines()) == len(curves["points"]) + 1


def test_a_repeated_advice_is_served_by_the_result_cache(pg_stack: Stack) -> None:
    body = {
        "scenario": short_seed_003(pg_stack),
        "target": "backup.completion_time<=30s",
        "levers": [{"paths": [WINDOW]}],
        "budget": 10,
    }
    with pg_stack.client as client:
        first = client.post("/v1/advice", json=body).json()
    first_done = wait_advice(pg_stack, first["id"])
    with pg_stack.client as client:
        again = client.post("/v1/advice", json=body).json()
    again_done = wait_advice(pg_stack, again["id"])
    assert again_done["report"]["fixes"] == first_done["report"]["fixes"]
    assert again_done["progress"]["cache_hits"] == again_done["progress"]["runs"] > 0


def test_advice_events_stream_until_done(pg_stack: Stack) -> None:
    body = {
        "scenario": short_seed_003(pg_stack),
        "target": {"flow": "backup", "metric": "completion_time", "value": 25.0},
        "levers": [{"paths": [WINDOW]}],
        "budget": 8,
    }
    with pg_stack.client as client:
        created = client.post("/v1/advice", json=body).json()
        events: list[str] = []
        with client.stream("GET", f"/v1/advice/{created['id']}/stream", timeout=120) as resp:
            assert resp.status_code == 200
            for line in resp.iter_lines():
                if line.startswith("event: "):
                    events.append(line[7:])
    assert events[-1] == "done" and "progress" in events and "status" in events


def test_a_cancelled_advice_stops_and_keeps_what_it_measured(pg_stack: Stack) -> None:
    scenario = short_seed_003(pg_stack)
    scenario["flows"][0]["bytes"] = 10**11  # beyond what its duration lets it send
    body = {
        "scenario": scenario,
        "target": {"flow": "backup", "metric": "goodput_bps", "value": 10e6},
        "levers": [{"paths": [WINDOW]}],
        "budget": 10,
        "cache": "refresh",
    }
    with pg_stack.client as client:
        created = client.post("/v1/advice", json=body).json()
        resp = client.post(f"/v1/advice/{created['id']}/cancel")
        assert resp.status_code == 202 and resp.json()["status"] == "cancelled"
        again = client.post(f"/v1/advice/{created['id']}/cancel")
        assert again.status_code == 202 and again.json()["status"] == "cancelled"
    deadline = time.monotonic() + 60
    with pg_stack.client as client:
        while True:
            runs = client.get(f"/v1/advice/{created['id']}/runs").json()["items"]
            if all(r["status"] in ("succeeded", "failed", "cancelled") for r in runs):
                break
            assert time.monotonic() < deadline, pg_stack.logs()
            time.sleep(0.2)
        assert client.get(f"/v1/advice/{created['id']}").json()["status"] == "cancelled"


@pytest.mark.parametrize(
    ("change", "loc"),
    [
        ({"target": {"flow": "nope", "metric": "completion_time", "value": 1}}, "target"),
        ({"levers": [{"paths": ["flows.backup.tcp.nonsense"]}]}, "levers"),
        ({"preset": "riverbed-t1-64k"}, "body"),  # two sources
        ({"budget": 100_000}, "budget"),
        ({"assurance": "always"}, "assurance"),
        # A lossy path run on one seed has no interval to be sure by.
        ({"lossy": True, "assurance": "interval", "replications": 1}, "assurance"),
    ],
)
def test_bad_advice_requests_name_the_field(
    pg_stack: Stack, change: dict[str, Any], loc: str
) -> None:
    change = dict(change)
    scenario = short_seed_003(pg_stack)
    if change.pop("lossy", False):
        scenario["links"][1]["loss"] = {"model": "bernoulli", "rate": 0.001}
    body = {
        "scenario": scenario,
        "target": {"flow": "backup", "metric": "completion_time", "value": 20.0},
        **change,
    }
    with pg_stack.client as client:
        before = [a["id"] for a in client.get("/v1/advice").json()["items"]]
        problem = assert_problem(client.post("/v1/advice", json=body), 422)
        assert any(loc in e["loc"] for e in problem["errors"]), problem
        # Nothing stored: the same advice as before (another test's may still be running,
        # its progress moving, so their ids are compared, not their documents).
        assert [a["id"] for a in client.get("/v1/advice").json()["items"]] == before


def short_backup() -> dict[str, Any]:
    import sys

    from servicekit import ROOT

    sys.path.insert(0, str(ROOT / "bench"))
    from goldens import frame_relay_backup

    scenario = frame_relay_backup()
    scenario["flows"][0]["bytes"] = 5_000_000
    return scenario


def test_the_frame_relay_backups_remedies_checked_none_recommended_makes_it_slower(
    pg_stack: Stack,
) -> None:
    with pg_stack.client as client:
        run = client.post("/v1/runs", json={"scenario": short_backup()}).json()
    done = pg_stack.wait_run(run["id"])
    assert done["diagnosis"]["backup"]["limit"] == "pvc_policing"
    with pg_stack.client as client:
        assert client.get(f"/v1/runs/{run['id']}/remedies").json()["check"] is None
        resp = client.post(f"/v1/runs/{run['id']}/remedies/check")
        assert resp.status_code == 202, (resp.text, pg_stack.logs())
        check = resp.json()
        assert check["kind"] == "remedy_check" and check["base"]["run_id"] == run["id"]
        # Asked again: the same check, not a second one.
        again = client.post(f"/v1/runs/{run['id']}/remedies/check")
        assert again.status_code == 200 and again.json()["id"] == check["id"]
    wait_advice(pg_stack, check["id"])
    with pg_stack.client as client:
        remedies = client.get(f"/v1/runs/{run['id']}/remedies").json()
    report = remedies["check"]["report"]
    assert remedies["check"]["status"] == "succeeded", remedies
    before = done["summary"]["flows"]["backup"]["completion_time"]
    assert report["base"]["mean"] == pytest.approx(before)  # the run itself, from the cache
    assert report["items"], report
    for item in report["items"]:
        after = item["after"]["mean"]
        if item["recommended"]:
            assert after < before, item
        if after > before:
            assert item["verdict"] == "worse" and not item["recommended"], item
    # Shaping at the contract's rate (CIR + Be/Tc = 512 kbit/s of frames) passes the policer:
    # better, and never faster than that rate's payload (1460 of every 1508 bytes).
    shaping = next(i for i in report["items"] if i["remedy"]["action"] == "shape")
    assert shaping["verdict"] == "better" and shaping["after"]["mean"] < before
    bucket = 32_000 * 1460 / 1508  # the shaper's Bc leaves at once
    floor = (5_000_000 * 8 - bucket) / (512e3 * 1460 / 1508)
    assert shaping["after"]["mean"] >= floor * (1 - 1e-9)
    be = next(i for i in report["items"] if i["remedy"]["action"] == "raise_be")
    assert be["recommended"] and be["after"]["mean"] < 0.8 * before
