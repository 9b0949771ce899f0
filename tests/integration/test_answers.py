"""Answers a user can trust and read, over HTTP against Postgres, Redis and real workers:
rate series keep their mean when downsampled, on every series endpoint; the 422s of
plausible mistakes say what was expected and what was probably meant; the 202 carries the
scenario's warnings."""

from __future__ import annotations

import copy
import random
from typing import Any

import numpy as np
import pytest
from journeys import assert_problem
from servicekit import Stack

from engine.presets import load_preset

pytestmark = pytest.mark.integration

MAX_POINTS = [10, 11, 25, 50, 200, 1000]


def time_weighted_mean(t: list[float], v: list[float | None]) -> float:
    """A rate point at `t` covers the interval since the previous point (the first, one
    interval before it): the convention of the engine's samples and of the buckets."""
    ta = np.asarray(t, dtype=float)
    va = np.asarray([np.nan if x is None else x for x in v], dtype=float)
    dt = np.diff(np.concatenate(([ta[0] - (ta[1] - ta[0])], ta)))
    ok = ~np.isnan(va)
    return float(np.sum(va[ok] * dt[ok]) / np.sum(dt[ok]))


def scenario(name: str = "riverbed-t1-8k") -> dict[str, Any]:
    return load_preset(name).model_dump(mode="json")


@pytest.fixture(scope="module")
def finished_run(pg_stack: Stack) -> dict[str, Any]:
    seed = random.randrange(1, 2**40)
    with pg_stack.client as client:
        resp = client.post("/v1/runs", json={"preset": "riverbed-t1-8k", "seed": seed})
        assert resp.status_code in (201, 202), resp.text
    return pg_stack.wait_run(resp.json()["id"])


@pytest.mark.parametrize(
    "key", ["flow.backup.goodput_bps", "link.access1.branch>cloud.utilization"]
)
def test_downsampled_rates_keep_their_mean_on_every_endpoint(
    pg_stack: Stack, finished_run: dict[str, Any], key: str
) -> None:
    run_id = finished_run["id"]
    with pg_stack.client as client:
        full = client.get(f"/v1/runs/{run_id}/series/{key}", params={"max_points": 100_000})
        assert full.status_code == 200, full.text
        body = full.json()
        assert not body["downsampled"] and body["length"] > 1000
        exact = time_weighted_mean(body["t"], body["v"])
        for n in MAX_POINTS:
            one = client.get(f"/v1/runs/{run_id}/series/{key}", params={"max_points": n}).json()
            assert one["downsampled"] and one["method"] == "rate-mean" and one["points"] == n
            assert time_weighted_mean(one["t"], one["v"]) == pytest.approx(exact, rel=0.01)
            frame = client.get(
                f"/v1/runs/{run_id}/frame", params={"keys": key, "max_points": n}
            ).json()["columns"]
            assert time_weighted_mean(frame["t"], frame[key]) == pytest.approx(exact, rel=0.01)
            common = client.get(
                "/v1/compare/series", params={"runs": run_id, "key": key, "max_points": n}
            ).json()
            assert common["agg"] == "mean" and common["points"] == n
            col = common["columns"]
            assert time_weighted_mean(col["t"], col[run_id]) == pytest.approx(exact, rel=0.01)
        # The other aggregates: of the samples in each bucket.
        top = client.get(
            f"/v1/runs/{run_id}/series/{key}", params={"max_points": 20, "agg": "max"}
        ).json()
        assert top["method"] == "rate-max" and max(top["v"]) == max(body["v"])
        low = client.get(
            f"/v1/runs/{run_id}/series/{key}", params={"max_points": 20, "agg": "min"}
        ).json()
        assert min(low["v"]) == min(body["v"])
        assert_problem(client.get(f"/v1/runs/{run_id}/series/{key}", params={"agg": "median"}), 422)


def test_step_series_keep_their_peaks_and_take_agg(
    pg_stack: Stack, finished_run: dict[str, Any]
) -> None:
    run_id, key = finished_run["id"], "flow.backup.cwnd"
    with pg_stack.client as client:
        default = client.get(f"/v1/runs/{run_id}/series/{key}", params={"max_points": 50}).json()
        mean = client.get(
            f"/v1/runs/{run_id}/series/{key}", params={"max_points": 50, "agg": "mean"}
        ).json()
    assert default["method"] in ("none", "minmax-lttb")
    if default["downsampled"]:
        assert mean["method"] == "step-mean" and mean["points"] == 50


def _errors(resp: Any) -> list[dict[str, Any]]:
    return assert_problem(resp, 422)["errors"]


def test_plausible_mistakes_get_errors_that_say_what_to_do(pg_stack: Stack) -> None:
    sc = scenario()
    with pg_stack.client as client:
        # A bare scenario where a run request wraps it: one error, the way out.
        (err,) = _errors(client.post("/v1/runs", json=sc))
        assert err["type"] == "bare_scenario" and '{"scenario":' in err["msg"]
        (err,) = _errors(client.post("/v1/sweeps", json=sc))
        assert '"base"' in err["msg"]

        def run_error(mutate: Any) -> dict[str, Any]:
            bad = copy.deepcopy(sc)
            mutate(bad)
            errors = _errors(client.post("/v1/runs", json={"scenario": bad}))
            return errors[0]

        err = run_error(lambda s: s["flows"][0].pop("kind"))
        assert err["loc"] == ["body", "scenario", "flows", 0, "kind"]
        assert err["pointer"] == "/scenario/flows/0/kind"
        assert "'tcp_bulk'" in err["msg"] and "'udp_cbr'" in err["msg"]
        err = run_error(lambda s: s["flows"][0].update(kind="tcp-bulk"))
        assert "did you mean 'tcp_bulk'" in err["msg"]
        err = run_error(lambda s: s["flows"][0]["tcp"].update(window=65535))
        assert err["loc"][-1] == "window" and "did you mean 'rcv_buf'" in err["msg"]
        err = run_error(lambda s: s["links"][0].update(rate="10 Mbs"))
        assert "Mbps" in err["msg"] and "T1" in err["msg"]
        err = run_error(lambda s: s.update(flow=s["flows"]))
        assert "did you mean 'flows'" in err["msg"] and "Valid fields here" in err["msg"]
        err = run_error(lambda s: s["nodes"][0].update(kind="hots"))
        assert "did you mean 'host'" in err["msg"]

        # In a sweep's parameters too.
        bad_path = {
            "base": {"preset": "riverbed-t1-8k"},
            "parameters": {"flows.backup.tcp.window": [8760]},
        }
        problem = assert_problem(client.post("/v1/sweeps", json=bad_path), 422)
        assert "did you mean 'rcv_buf'" in problem["detail"]

        problem = assert_problem(client.post("/v1/runs", json={"preset": "riverbed-t1-8"}), 422)
        assert "did you mean 'riverbed-t1-8k'" in problem["detail"]
        bad_id = {
            "base": {"preset": "riverbed-t1-8k"},
            "parameters": {"flows.bakup.tcp.rcv_buf": [8760]},
        }
        problem = assert_problem(client.post("/v1/sweeps", json=bad_id), 422)
        assert "did you mean 'backup'" in problem["detail"]

        # Malformed JSON: where, as a person counts, not an offset posing as a JSON pointer.
        resp = client.post(
            "/v1/runs",
            content=b'{"preset": "riverbed-t1-8k",\n  "seed": 1,,\n}',
            headers={"Content-Type": "application/json"},
        )
        (err,) = _errors(resp)
        assert (err["line"], err["column"]) == (2, 13) and "line 2, column 13" in err["msg"]
        assert err["loc"] == ["body"] and err.get("pointer", "") == ""

        assert_problem(
            client.post("/v1/runs", content=b"{}", headers={"Content-Type": "text/plain"}), 415
        )


def test_warnings_come_back_in_the_202(pg_stack: Stack) -> None:
    sc = scenario()
    sc["duration"] = 10  # 25 MB over a T1 needs minutes
    sc["name"] = f"short-{random.randrange(2**40)}"
    with pg_stack.client as client:
        resp = client.post("/v1/runs", json={"scenario": sc})
        assert resp.status_code == 202, resp.text
        (warning,) = resp.json()["warnings"]
        assert "cannot deliver" in warning and "duration" in warning
        assert client.get(f"/v1/runs/{resp.json()['id']}").json()["warnings"] is None
        sweep = {
            "base": {"scenario": sc},
            "parameters": {"flows.backup.tcp.rcv_buf": [8760, 65535]},
        }
        plan = client.post("/v1/sweeps", params={"dry_run": "true"}, json=sweep)
        assert plan.status_code == 200 and len(plan.json()["warnings"]) == 2
        est = plan.json()["estimate"]
        assert est["speed_basis"] in ("measured", "probe") and est["run_overhead_events"] > 0
        assert est["cpu_seconds"] == pytest.approx(
            (est["events"] + est["to_simulate"] * est["run_overhead_events"])
            / est["events_per_second"]
        ), est
        created = client.post("/v1/sweeps", json=sweep)
        assert created.status_code in (201, 202), created.text
        assert [w.split(":")[0] for w in created.json()["warnings"]] == ["point 0", "point 1"]
        client.post(f"/v1/sweeps/{created.json()['id']}/cancel")
        ok = client.post("/v1/runs", json={"preset": "riverbed-t1-8k", "seed": 5})
        assert ok.json()["warnings"] == []


def _wait_sweep(stack: Stack, sweep_id: str) -> None:
    import time

    deadline = time.monotonic() + 300
    with stack.client as client:
        while client.get(f"/v1/sweeps/{sweep_id}").json()["status"] not in (
            "succeeded",
            "failed",
            "partial",
            "cancelled",
        ):
            assert time.monotonic() < deadline, "sweep did not finish"
            time.sleep(0.5)


@pytest.fixture(scope="module")
def tied_sweep(pg_stack: Stack) -> str:
    """Receive windows of which three give identical results (the link limits them all),
    in two replications of a scenario without randomness."""
    seed = random.randrange(1, 2**40)
    body = {
        "base": {"preset": "riverbed-t1-8k"},
        "seed": seed,
        "parameters": {
            "links.access1.rate": ["T1"],
            "flows.backup.tcp.rcv_buf": [8760, 65535, 100000, 200000],
            "flows.backup.tcp.window_scaling": [True],
        },
        "replications": 2,
        "baseline": {
            "links.access1.rate": "T1",
            "flows.backup.tcp.rcv_buf": 8760,
            "flows.backup.tcp.window_scaling": True,
        },
    }
    with pg_stack.client as client:
        resp = client.post("/v1/sweeps", json=body)
        assert resp.status_code in (201, 202), resp.text
    _wait_sweep(pg_stack, resp.json()["id"])
    return str(resp.json()["id"])


def test_ties_and_identical_replications_are_said_in_words(
    pg_stack: Stack, tied_sweep: str
) -> None:
    with pg_stack.client as client:
        summary = client.get(f"/v1/sweeps/{tied_sweep}/summary").json()
    best = next(b for b in summary["best"] if b["metric"] == "completion_time")
    assert best["ties"] == [1, 2, 3] and best["point_index"] in best["ties"]
    text = summary["text"]
    assert "is a tie between 3 points" in text and "65535, 100000, 200000" in text
    assert "identical results" in text and "sd 0" in text
    assert "95% CI" not in text  # a zero-width interval is not presented as one


def test_sweep_summary_and_comparison_as_csv_and_records(pg_stack: Stack, tied_sweep: str) -> None:
    import csv
    import io

    with pg_stack.client as client:
        by_accept = client.get(f"/v1/sweeps/{tied_sweep}/summary", headers={"Accept": "text/csv"})
        by_query = client.get(f"/v1/sweeps/{tied_sweep}/summary", params={"format": "csv"})
        records = client.get(
            f"/v1/sweeps/{tied_sweep}/summary", params={"format": "records"}
        ).json()
        summary = client.get(f"/v1/sweeps/{tied_sweep}/summary").json()
        runs = client.get(f"/v1/sweeps/{tied_sweep}/runs").json()["items"]
        compared = client.get(
            "/v1/compare", params={"runs": ",".join(r["id"] for r in runs), "format": "csv"}
        )
    assert by_accept.headers["content-type"].startswith("text/csv")
    assert by_accept.text == by_query.text
    rows = list(csv.DictReader(io.StringIO(by_accept.text)))
    assert len(rows) == 4  # 4 points x 1 flow
    header = by_accept.text.splitlines()[0].split(",")
    for col in (
        "point",
        "links.access1.rate[bit/s]",  # a parameter's unit, from its type
        "flows.backup.tcp.rcv_buf[bytes]",
        "flow",
        "completion_time.mean[s]",
        "goodput_bps.mean[bit/s]",
        "plr.mean[fraction]",
    ):
        assert col in header, col
    # Base units: "T1" is 1544000 bit/s in the table.
    assert {float(r["links.access1.rate[bit/s]"]) for r in rows} == {1544000.0}
    by_point = {int(r["point"]): r for r in rows}
    for p in summary["points"]:
        cell = p["metrics"]["backup"]["completion_time"]
        assert float(by_point[p["index"]]["completion_time.mean[s]"]) == cell["mean"]
    assert len(records["records"]) == 4
    names = [c["name"] for c in records["columns"]]
    assert "goodput_bps.ci95_low" in names and records["records"][0]["flow"] == "backup"
    assert compared.status_code == 200 and compared.headers["content-type"].startswith("text/csv")
    assert len(list(csv.DictReader(io.StringIO(compared.text)))) == 4


def test_runs_of_different_scenarios_are_compared_as_wholes(pg_stack: Stack) -> None:
    seed = random.randrange(1, 2**40)
    ids = []
    with pg_stack.client as client:
        for preset in ("riverbed-t1-8k", "hadi-bottleneck", "riverbed-t3-8k"):
            resp = client.post("/v1/runs", json={"preset": preset, "seed": seed})
            assert resp.status_code in (201, 202), resp.text
            ids.append(resp.json()["id"])
    for run_id in ids:
        pg_stack.wait_run(run_id)
    with pg_stack.client as client:
        apart = client.get("/v1/compare", params={"runs": f"{ids[0]},{ids[1]}"}).json()
        close = client.get("/v1/compare", params={"runs": f"{ids[0]},{ids[2]}"}).json()
    assert apart["scenarios_differ"] and apart["differing_path_count"] > 8
    assert [p["parameters"] for p in apart["points"]] == [
        {"scenario": "riverbed-t1-8k"},
        {"scenario": "hadi-bottleneck"},
    ]
    assert apart["conclusions"][0].startswith("These runs are of 2 different scenarios")
    assert "and 1" not in apart["text"] and "more" not in apart["text"]
    # Variations of one scenario: the settings that differ, named by id, and nothing else.
    assert not close["scenarios_differ"]
    assert close["differing_paths"] == ["links.access1.rate", "links.access2.rate"]
    assert set(close["points"][0]["parameters"]) == {"links.access1.rate", "links.access2.rate"}


def test_the_openapi_example_scenario_runs(pg_stack: Stack) -> None:
    with pg_stack.client as client:
        schemas = client.get("/openapi.json").json()["components"]["schemas"]
        (example,) = schemas["Scenario"]["examples"]
        assert client.post("/v1/scenarios/validate", json=example).status_code == 200
        examples = schemas["RunCreate"]["examples"]
        assert {"scenario": example} in examples
        for body in examples:
            resp = client.post("/v1/runs", json=body)
            assert resp.status_code in (201, 202), resp.text
        run = pg_stack.wait_run(resp.json()["id"])
    assert run["status"] == "succeeded" and run["summary"]["flows"]["transfer"]["completed"]
