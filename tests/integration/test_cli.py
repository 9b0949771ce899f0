"""The `tcpfr` command and the Python client against the real server (API, workers,
Postgres, Redis). The export bundles they download: test_exports.py."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from clikit import TCPFR, cli_env, tcpfr
from servicekit import ROOT, Stack, free_port

from client import Client


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
        env=cli_env(pg_stack.base_url),
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
