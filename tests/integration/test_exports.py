"""Export bundles through the `tcpfr` command and the Python client: a run's bundle
reproduces its result when its request.json is posted back (Postgres and the embedded
mode), a sweep's table is long by flow in base units, and both are conditional."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from clikit import read_bundle, tcpfr, without_wall_time
from journeys import assert_problem
from servicekit import Stack

from client import Client


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
    check_sweep_table(files, runs, rate, size)
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


def check_sweep_table(files: dict[str, bytes], runs: list[str], rate: str, size: str) -> None:
    """table.csv and table.parquet: long by flow, as the summary table (its key columns,
    the parameters in base units, the flow, a column per metric with its unit in the CSV's
    header); each row as its run's own JSON in the bundle says."""
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
