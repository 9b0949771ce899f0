"""The `tcpfr` command and the Python client against the real server (API, workers,
Postgres, Redis), and the export bundles they download: a run's bundle reproduces its
result when its request.json is posted back."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from journeys import assert_problem
from servicekit import ROOT, Stack, free_port

from client import Client

TCPFR = Path(sys.executable).with_name("tcpfr")  # the console script `make install` puts there


def _env(stack_url: str, key: str | None = None) -> dict[str, str]:
    assert TCPFR.exists(), f"{TCPFR} missing: `make install` installs the tcpfr command"
    env = {**os.environ, "TCPFR_URL": stack_url}
    env.pop("TCPFR_API_KEY", None)
    if key is not None:
        env["TCPFR_API_KEY"] = key
    return env


def tcpfr(
    stack_url: str, *args: str, timeout: float = 180, key: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TCPFR), *args],
        env=_env(stack_url, key),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def read_bundle(data: bytes) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The manifest and the files of a bundle, each file checked against its sha256."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        files = {name: zf.read(name) for name in zf.namelist()}
    manifest = json.loads(files.pop("manifest.json"))
    listed = {f["name"]: f for f in manifest["files"]}
    assert set(listed) == set(files)
    for name, body in files.items():
        assert listed[name]["sha256"] == hashlib.sha256(body).hexdigest(), name
        assert listed[name]["bytes"] == len(body)
    return manifest, files


def without_wall_time(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k != "wall_time"}


@pytest.fixture(scope="module")
def t1_64k(pg_stack: Stack) -> dict[str, Any]:
    """`tcpfr run riverbed-t1-64k --wait --json`, as a user types it."""
    proc = tcpfr(pg_stack.base_url, "run", "riverbed-t1-64k", "--wait", "--json")
    assert proc.returncode == 0, (proc.stdout, proc.stderr, pg_stack.logs())
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def test_run_wait_json_prints_the_result(t1_64k: dict[str, Any]) -> None:
    assert t1_64k["status"] == "succeeded"
    backup = t1_64k["summary"]["flows"]["backup"]
    # The Riverbed lab's T1 with a 64 KB window (README): 135.3 s.
    assert backup["completion_time"] == pytest.approx(135.3, abs=0.05)
    assert t1_64k["diagnosis"]["backup"]["limit"] == "link_capacity"


def test_run_plain_output_and_progress_lines_when_piped(pg_stack: Stack) -> None:
    proc = tcpfr(pg_stack.base_url, "run", "riverbed-t1-64k", "--seed", "7", "--wait")
    assert proc.returncode == 0, proc.stderr
    assert "succeeded" in proc.stdout and "backup" in proc.stdout and "limit:" in proc.stdout
    # Not a terminal: plain lines, no carriage returns redrawing a bar.
    assert "\r" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].endswith("succeeded 100%")


def test_bad_scenario_file_exits_2_with_the_field_path(pg_stack: Stack, tmp_path: Path) -> None:
    scenario = {
        "name": "x",
        "nodes": [{"id": "a", "kind": "host"}, {"id": "b", "kind": "host"}],
        "links": [{"id": "l", "a": "a", "b": "b", "rate": "fast", "delay": "5ms"}],
        "flows": [{"id": "f", "kind": "tcp_bulk", "src": "a", "dst": "b", "bytes": "1MB"}],
    }
    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps(scenario))
    proc = tcpfr(pg_stack.base_url, "run", str(path), "--wait")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "422" in proc.stderr and "invalid rate 'fast'" in proc.stderr
    assert "/scenario/links/0/rate" in proc.stderr  # the JSON pointer into the body
    assert "body.scenario.links.0.rate" in proc.stderr  # and Pydantic's loc


def test_unknown_preset_and_unreadable_file_exit_2(pg_stack: Stack, tmp_path: Path) -> None:
    proc = tcpfr(pg_stack.base_url, "run", "no-such-preset")
    assert proc.returncode == 2 and "unknown preset" in proc.stderr, proc.stderr
    (tmp_path / "broken.yaml").write_text("nodes: [unclosed\n")
    proc = tcpfr(pg_stack.base_url, "run", str(tmp_path / "broken.yaml"))
    assert proc.returncode == 2 and "not YAML or JSON" in proc.stderr, proc.stderr
    proc = tcpfr(pg_stack.base_url, "status", "00000000-0000-0000-0000-000000000000")
    assert proc.returncode == 2 and "404" in proc.stderr, proc.stderr


def test_unreachable_server_exits_3() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    for args in (["run", "riverbed-t1-64k", "--wait"], ["presets"]):
        proc = tcpfr(url, *args, timeout=60)
        assert proc.returncode == 3, (proc.stdout, proc.stderr)
        assert "unreachable" in proc.stderr


def test_a_cancelled_run_exits_1(pg_stack: Stack, tmp_path: Path) -> None:
    """`--wait` on a run that is cancelled meanwhile: exit 1, and it says why."""
    with pg_stack.client as http:
        scenario = http.get("/v1/presets/riverbed-t1-8k").json()["body"]
    scenario["flows"][0]["bytes"] = 2_000_000_000  # minutes of simulation: it will not finish
    scenario["duration"] = 1_000_000
    path = tmp_path / "long.json"
    path.write_text(json.dumps(scenario))
    proc = subprocess.Popen(
        [str(TCPFR), "run", str(path), "--wait"],
        env=_env(pg_stack.base_url),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()  # "run <id>: queued 0%": piped, so plain lines
        assert first.startswith("run "), first
        run_id = first.split()[1].rstrip(":")
        with pg_stack.client as http:
            assert http.post(f"/v1/runs/{run_id}/cancel").status_code == 202
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 1, (out, err)
    assert "cancelled" in out
    assert tcpfr(pg_stack.base_url, "status", run_id).returncode == 1


def test_api_key_from_the_environment(pg_auth_stack: Stack) -> None:
    """With auth on: no key is a 401 (bad input, exit 2); TCPFR_API_KEY or --key works."""
    issued = subprocess.run(
        [sys.executable, "-m", "api.keys", "create", "--tenant", "cli-test", "--name", "cli"],
        cwd=ROOT,
        env=pg_auth_stack.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.strip()
    url = pg_auth_stack.base_url
    assert tcpfr(url, "presets").returncode == 0  # a public catalogue
    denied = tcpfr(url, "run", "riverbed-t1-64k")
    assert denied.returncode == 2 and "401" in denied.stderr, denied.stderr
    ok = tcpfr(url, "run", "riverbed-t1-64k", "--wait", "--json", key=issued)
    assert ok.returncode == 0, ok.stderr
    run_id = json.loads(ok.stdout)["id"]
    assert tcpfr(url, "--key", issued, "status", run_id).returncode == 0
    # Another tenant's run is unknown to a request without this tenant's key.
    assert tcpfr(url, "status", run_id).returncode == 2


def test_status_series_presets_compare(pg_stack: Stack, t1_64k: dict[str, Any]) -> None:
    run_id = t1_64k["id"]
    proc = tcpfr(pg_stack.base_url, "status", run_id)
    assert proc.returncode == 0 and f"run {run_id}: succeeded 100%" in proc.stdout

    proc = tcpfr(
        pg_stack.base_url, "series", run_id, "flow.backup.cwnd", "--csv", "--max-points", "50"
    )
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.reader(io.StringIO(proc.stdout)))
    assert rows[0] == ["t", "v"] and 3 <= len(rows) - 1 <= 50

    proc = tcpfr(pg_stack.base_url, "series", run_id, "flow.backup.cwnd", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["unit"]

    proc = tcpfr(pg_stack.base_url, "series", run_id, "no.such.key")
    assert proc.returncode == 2 and "no.such.key" in proc.stderr

    proc = tcpfr(pg_stack.base_url, "presets", "--json")
    assert proc.returncode == 0
    assert "riverbed-t1-64k" in {p["name"] for p in json.loads(proc.stdout)}

    other = tcpfr(pg_stack.base_url, "run", "riverbed-t1-8k", "--wait", "--json", "-q")
    assert other.returncode == 0, other.stderr
    other_id = json.loads(other.stdout)["id"]
    proc = tcpfr(pg_stack.base_url, "compare", run_id, other_id, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["baseline"] == run_id and len(doc["points"]) == 2
    proc = tcpfr(pg_stack.base_url, "compare", run_id, other_id)
    assert proc.returncode == 0 and "backup.completion_time" in proc.stdout


def test_export_request_reproduces_the_result(
    pg_stack: Stack, t1_64k: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "run.zip"
    proc = tcpfr(pg_stack.base_url, "export", t1_64k["id"], "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    manifest, files = read_bundle(out.read_bytes())
    tables = {f"{name}.{ext}" for name in ("series", "time", "rtt") for ext in ("csv", "parquet")}
    assert set(files) == {"request.json", "result.json", *tables}
    assert manifest["run_id"] == t1_64k["id"]
    for field in ("engine_version", "scenario_hash", "seed", "created_at", "finished_at"):
        assert manifest[field] == t1_64k[field], field
    result = json.loads(files["result.json"])
    assert result["flows"] == t1_64k["summary"]["flows"]

    # Long-form series: CSV and Parquet hold the same samples, all of them.
    table = pq.read_table(io.BytesIO(files["series.parquet"])).to_pydict()
    rows = list(csv.DictReader(io.StringIO(files["series.csv"].decode())))
    assert list(rows[0]) == ["key", "unit", "t", "v"] == list(table)
    assert len(rows) == len(table["t"])
    assert [r["key"] for r in rows] == table["key"]
    assert [float(r["t"]) for r in rows] == table["t"]
    assert [float(r["v"]) if r["v"] else None for r in rows] == table["v"]
    with pg_stack.client as http:
        index = http.get(f"/v1/runs/{t1_64k['id']}/series").json()["series"]
    assert {s["key"] for s in index} == set(table["key"])
    assert len(rows) == sum(s["length"] for s in index)

    # Where the flow's time went, a row per flow; its round trip, a row per hop.
    (time_row,) = pq.read_table(io.BytesIO(files["time.parquet"])).to_pylist()
    assert time_row == {"flow": "backup", **result["flows"]["backup"]["time"]}
    hops = list(csv.DictReader(io.StringIO(files["rtt.csv"].decode())))
    split = result["flows"]["backup"]["rtt_split"]["hops"]
    assert [(h["hop"], h["direction"]) for h in hops] == [(h["hop"], h["direction"]) for h in split]
    assert [float(h["queueing"]) for h in hops] == [h["queueing"] for h in split]

    # request.json posted back, simulated afresh: the same result but for wall time.
    request = json.loads(files["request.json"])
    with pg_stack.client as http:
        resp = http.post("/v1/runs", json={**request, "cache": "refresh"})
        assert resp.status_code == 202, resp.text
        again = resp.json()
    assert not again["cache_hit"]
    assert again["scenario_hash"] == manifest["scenario_hash"]
    assert pg_stack.wait_run(again["id"])["status"] == "succeeded"
    out2 = tmp_path / "again.zip"
    assert tcpfr(pg_stack.base_url, "export", again["id"], "-o", str(out2)).returncode == 0
    _, files2 = read_bundle(out2.read_bytes())
    assert without_wall_time(json.loads(files2["result.json"])) == without_wall_time(result)
    assert files2["series.csv"] == files["series.csv"]

    # The same from the shell: the bundle's request.json is a file `tcpfr run` takes.
    (tmp_path / "request.json").write_bytes(files["request.json"])
    proc = tcpfr(
        pg_stack.base_url, "run", str(tmp_path / "request.json"), "--refresh", "--wait", "--json"
    )
    assert proc.returncode == 0, proc.stderr
    third = json.loads(proc.stdout)
    assert not third["cache_hit"] and third["summary"]["flows"] == result["flows"]


def test_export_is_conditional_and_refuses_unfinished(
    pg_stack: Stack, t1_64k: dict[str, Any]
) -> None:
    with pg_stack.client as http:
        first = http.get(f"/v1/runs/{t1_64k['id']}/export")
        assert first.status_code == 200
        assert first.headers["content-type"] == "application/zip"
        assert "attachment" in first.headers["content-disposition"]
        # The same run exports to the same bytes, so a strong ETag holds.
        second = http.get(f"/v1/runs/{t1_64k['id']}/export")
        assert second.content == first.content
        not_modified = http.get(
            f"/v1/runs/{t1_64k['id']}/export", headers={"If-None-Match": first.headers["etag"]}
        )
        assert not_modified.status_code == 304
        assert_problem(http.get("/v1/runs/00000000-0000-0000-0000-000000000000/export"), 404)
        # A run not yet finished (a big transfer just submitted) is a 409.
        queued = http.post(
            "/v1/runs", json={"preset": "riverbed-t1-8k", "cache": "refresh", "seed": 99}
        ).json()
        resp = http.get(f"/v1/runs/{queued['id']}/export")
        if resp.status_code != 200:  # it may have finished already on a fast machine
            assert_problem(resp, 409)


def test_sweep_export(pg_stack: Stack, tmp_path: Path) -> None:
    # Two parameters given in neither alphabetical nor PostgreSQL's JSONB key order (both
    # put flows.* first): the exported request must keep the client's order, which sets
    # the points' order.
    rate, size = "links.access1.rate", "flows.backup.bytes"
    sweep = {
        "name": "rate x size",
        "base": {"preset": "riverbed-t1-64k"},
        "parameters": {rate: ["T1", "T3"], size: [500_000, 1_000_000]},
        "replications": 2,
    }
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(sweep))
    proc = tcpfr(pg_stack.base_url, "sweep", str(path), "--wait", "--json", timeout=300)
    assert proc.returncode == 0, (proc.stdout, proc.stderr, pg_stack.logs())
    doc = json.loads(proc.stdout)
    assert doc["status"] == "succeeded" and doc["run_count"] == 8

    out = tmp_path / "sweep.zip"
    assert tcpfr(pg_stack.base_url, "export", doc["id"], "-o", str(out)).returncode == 0
    manifest, files = read_bundle(out.read_bytes())
    assert manifest["sweep_id"] == doc["id"] and manifest["parameters"] == [rate, size]
    runs = sorted(n for n in files if n.startswith("runs/"))
    assert runs == [f"runs/{p:04d}-{r:03d}.json" for p in range(4) for r in range(2)]
    table = pq.read_table(io.BytesIO(files["table.parquet"])).to_pydict()
    rows = list(csv.DictReader(io.StringIO(files["table.csv"].decode())))
    # Long by flow, as the summary table: its key columns, then the parameters (in base
    # units), the flow, then a column per metric, its unit in the CSV's header.
    assert list(table)[:12] == [
        "point",
        "replication",
        "seed",
        "run_id",
        "status",
        "is_baseline",
        rate,
        size,
        "flow",
        "kind",
        "limit",
        "completion_time",
    ]
    header = [*list(table)[:6], f"{rate}[bit/s]", f"{size}[bytes]", "flow", "kind", "limit"]
    assert list(rows[0])[:12] == [*header, "completion_time[s]"]
    assert len(rows) == len(table["run_id"]) == 8  # one flow: a row per run
    assert [float(r[f"{rate}[bit/s]"]) for r in rows] == table[rate]
    assert table[rate] == [1_544_000.0] * 4 + [44_736_000.0] * 4
    # Integers stay integers, in the CSV and in Parquet.
    sizes = [int(r[f"{size}[bytes]"]) for r in rows]
    assert sizes == table[size] == [500_000, 500_000, 1_000_000, 1_000_000] * 2
    assert all(isinstance(x, int) for x in table["retransmissions"])
    for row, name in zip(rows, runs, strict=True):
        run = json.loads(files[name])
        assert row["run_id"] == run["run_id"] and run["status"] == "succeeded"
        assert row["flow"] == "backup"
        completion = run["result"]["flows"]["backup"]["completion_time"]
        assert float(row["completion_time[s]"]) == completion
        assert row["limit"] == run["result"]["diagnosis"]["backup"]["limit"]
    assert len(json.loads(files["summary.json"])["points"]) == 4

    # The request is the sweep as submitted: posted back, it has the same points in the
    # same order, and the cache serves every run.
    request = json.loads(files["request.json"])
    assert list(request["parameters"]) == [rate, size]
    with pg_stack.client as http:
        again = http.post("/v1/sweeps", json=request)
    assert again.status_code == 201, again.text
    assert again.json()["cache_hits"] == 8
    assert [p["parameters"] for p in again.json()["points"]] == [
        p["parameters"] for p in doc["points"]
    ]


def test_notebook_use(pg_stack: Stack) -> None:
    with Client(pg_stack.base_url) as client:
        run = client.run(preset="riverbed-t1-64k").wait()
        assert run.summary.flows["backup"]["completion_time"] == pytest.approx(135.3, abs=0.05)
        series = run.series("flow.backup.cwnd", frame=False)
        assert isinstance(series["t"], list) and isinstance(series["v"], list)
        assert len(series["t"]) == len(series["v"]) > 0
        assert "flow.backup.cwnd" in run.series_keys()
        try:
            import pandas  # noqa: F401
        except ImportError:
            # pandas is optional: without it, plain lists by default too.
            assert run.series("flow.backup.cwnd") == series
        else:
            df = run.series("flow.backup.cwnd")
            assert list(df.columns) == ["t", "v"] and len(df) == len(series["t"])


def test_export_in_the_embedded_mode(embedded_stack: Stack, tmp_path: Path) -> None:
    """SQLite and the file-system broker: the same bundle, and its request runs again."""
    with Client(embedded_stack.base_url) as client:
        run = client.run(preset="riverbed-t1-64k").wait()
        manifest, files = read_bundle(run.export(tmp_path / "run.zip").read_bytes())
        assert manifest["run_id"] == str(run.id) and manifest["seed"] == run.doc.seed
        again = client.submit_run({**json.loads(files["request.json"]), "cache": "refresh"})
        again.wait()
        _, files2 = read_bundle(again.export(tmp_path / "again.zip").read_bytes())
    assert without_wall_time(json.loads(files2["result.json"])) == without_wall_time(
        json.loads(files["result.json"])
    )
    assert files2["series.parquet"] == files["series.parquet"]


def test_tcpfr_advise_and_remedies(pg_stack: Stack, tmp_path: Path) -> None:
    """`tcpfr advise` on a scenario file (seed 003's path, 2.5 MB): the cheapest fix is a
    larger window, as W/RTT says (8,760 B per 186 ms round trip takes 53 s; 30 s needs at
    least 2.5 MB x 0.186 s / 30 s = 15.5 kB); `tcpfr remedies RUN --check` measures the
    run's remedies; a bad target is bad input (exit 2) naming the field."""
    with pg_stack.client as client:
        scenario = client.get("/v1/presets/riverbed-t1-8k").json()["body"]
    scenario["flows"][0]["bytes"] = 2_500_000
    path = tmp_path / "short.json"
    path.write_text(json.dumps(scenario))
    curves = tmp_path / "curves.csv"
    proc = tcpfr(
        pg_stack.base_url,
        "advise",
        str(path),
        "--target",
        "backup.completion_time<=30s",
        "--lever",
        "flows.backup.tcp.rcv_buf",
        "--budget",
        "10",
        "--curves",
        str(curves),
        "--json",
        "-q",
    )
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    doc = json.loads(proc.stdout)
    fix = doc["report"]["fixes"][0]
    assert fix["changes"][0]["path"] == "flows.backup.tcp.rcv_buf"
    assert 15_500 <= fix["changes"][0]["value"] <= 31_000 and fix["measured"]["mean"] <= 30
    assert curves.read_text().startswith("lever,paths,value,label,metric,measured[s]")

    text = tcpfr(
        pg_stack.base_url,
        "advise",
        str(path),
        "--target",
        "backup.completion_time<=30s",
        "--lever",
        "flows.backup.tcp.rcv_buf",
        "--budget",
        "10",
    )
    assert text.returncode == 0 and "Cheapest fix: rcv_buf" in text.stdout, text.stdout

    base_run = doc["base"]["run_id"] or next(
        r["id"]
        for r in Client(pg_stack.base_url)
        .request("GET", f"/v1/advice/{doc['id']}/runs")
        .json()["items"]
        if r["changes"] == {}
    )
    checked = tcpfr(pg_stack.base_url, "remedies", base_run, "--check", "-q")
    assert checked.returncode == 0, (checked.stdout, checked.stderr)
    assert "rcv_buf" in checked.stdout and "→" in checked.stdout, checked.stdout

    bad = tcpfr(pg_stack.base_url, "advise", "riverbed-t1-8k", "--target", "backup.speed>=1")
    assert bad.returncode == 2 and "target" in bad.stderr, bad.stderr


def test_a_sweep_cancelled_halfway_from_the_client(pg_stack: Stack) -> None:
    """Issue 31: a sweep cancelled after some runs succeeded ends `cancelled` (not
    `partial`), `wait()` returns it rather than raising, and its runs and summary table
    are there to read."""
    with Client(pg_stack.base_url) as client:
        preset = client._json("GET", "/v1/presets/riverbed-t1-8k")["body"]
        preset["duration"] = 10**6
        sweep = client.sweep(
            {
                "base": {"scenario": preset},
                # A quick point and one far beyond the test: cancelled while it runs.
                "parameters": {"flows.backup.bytes": [200_000, 10**12]},
                "replications": 2,
                "cache": "refresh",
            }
        )
        deadline = time.monotonic() + 60
        while client.sweep_state(sweep.id).progress.counts.succeeded < 1:
            assert time.monotonic() < deadline, pg_stack.logs()
            time.sleep(0.1)
        assert sweep.cancel().doc.cancel_requested
        done = sweep.wait(timeout=60)  # no Failed: it ended as asked
        assert done.status == "cancelled", done.doc.progress
        counts = done.doc.progress.counts
        assert counts.succeeded >= 1 and counts.cancelled >= 1
        assert counts.succeeded + counts.cancelled == 4 and done.doc.points  # the whole doc

        runs = sweep.runs()
        assert [(r.point_index, r.replication) for r in runs] == [(0, 0), (0, 1), (1, 0), (1, 1)]
        assert {r.status.value for r in runs if r.point_index == 1} == {"cancelled"}
        assert len(sweep.runs(status="succeeded")) == counts.succeeded

        table = sweep.table(frame=False)
        names = [c["name"] for c in table["columns"]]
        assert names[0] == "point" and "completion_time.delta_ci95_low" in names
        quick = [r for r in table["records"] if r["point"] == 0]
        assert quick and quick[0]["completion_time.n"] == counts.succeeded
