"""A sweep's export table (Parquet) and its summary table (CSV) join as they are (issue 31):
the same key columns and units, read with pyarrow and with pandas, against Postgres, Redis
and two worker processes."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from servicekit import Stack
from sweepkit import RATE, small_base, wait_sweep


def test_the_export_table_and_the_summary_table_join_as_they_are(pg_stack: Stack) -> None:
    """Issue 31: the export's Parquet and the summary's CSV share their shape (a row per
    point and flow), their key columns and their units, so they join on (point, flow) with
    no renaming or unit conversion, and the joined figures agree."""
    import pyarrow.compute as pc

    body = {
        "base": {"scenario": small_base(pg_stack)},
        "parameters": {RATE: ["T1", "T3"]},
        "replications": 3,
        "seed": random.randrange(1, 2**40),
        "baseline": {RATE: "T1"},
    }
    with pg_stack.client as client:
        sweep = client.post("/v1/sweeps", json=body).json()
    assert wait_sweep(pg_stack, sweep["id"])["status"] == "succeeded"
    runs, summary, table_parquet, summary_csv = export_and_summary(pg_stack, sweep["id"])
    # Units travel with the columns: Parquet's field metadata, the CSV's header.
    assert runs.schema.field("goodput_bps").metadata == {b"unit": b"bit/s"}
    assert "goodput_bps.mean[bit/s]" in summary.column_names
    # Parameters in base units in both: T1 is 1,544,000 bit/s, T3 44,736,000.
    assert sorted(set(runs[RATE].to_pylist())) == [1_544_000.0, 44_736_000.0]
    assert summary[f"{RATE}[bit/s]"].to_pylist() == [1_544_000.0, 44_736_000.0]
    assert runs.schema.field(RATE).metadata == {b"unit": b"bit/s"}

    joined = runs.join(summary, keys=["point", "flow"], right_suffix=" (summary)")
    assert joined.num_rows == runs.num_rows == 6  # every run's row finds its point's
    assert joined[RATE].to_pylist() == joined[f"{RATE}[bit/s]"].to_pylist()
    by_point = joined.group_by(["point", "flow"]).aggregate([("completion_time", "mean")])
    for row in by_point.to_pylist():
        mask = pc.equal(summary["point"], row["point"])
        served = summary.filter(mask)["completion_time.mean[s]"][0].as_py()
        assert row["completion_time_mean"] == pytest.approx(served, rel=1e-12)

    # The paired change and its interval are in the table, as in the JSON.
    t3 = summary.filter(pc.equal(summary["point"], 1)).to_pylist()[0]
    ct = {
        (r["point"], r["seed"]): r["completion_time"]
        for r in runs.select(["point", "seed", "completion_time"]).to_pylist()
    }
    d = np.array([ct[(1, s)] - ct[(0, s)] for s in {s for _, s in ct}])
    assert t3["completion_time.delta[s]"] == pytest.approx(d.mean(), rel=1e-9)
    assert (
        t3["completion_time.delta_ci95_low[s]"]
        <= d.mean()
        <= t3["completion_time.delta_ci95_high[s]"]
    )
    assert t3["completion_time.delta_pct[percent]"] < 0  # T3 is faster than T1

    # As an analyst does it in pandas: read both as they are, merge on (point, flow).
    merge_in_pandas(table_parquet, summary_csv)


def export_and_summary(stack: Stack, sweep_id: str) -> tuple[Any, Any, bytes, bytes]:
    """The export's table.parquet and the summary as CSV: as Arrow tables, then as the
    bytes the API sent."""
    import io
    import zipfile

    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    with stack.client as client:
        export = client.get(f"/v1/sweeps/{sweep_id}/export")
        summary_csv = client.get(f"/v1/sweeps/{sweep_id}/summary", params={"format": "csv"})
    assert export.status_code == 200 and summary_csv.status_code == 200
    files = zipfile.ZipFile(io.BytesIO(export.content))
    runs = pq.read_table(io.BytesIO(files.read("table.parquet")))
    summary = pacsv.read_csv(io.BytesIO(summary_csv.content))
    # A column with no value (the change in % against a baseline of 0 timeouts) reads as
    # Arrow's null type, which its join refuses; pandas reads it as NaN floats: so do we.
    summary = summary.cast(
        pa.schema(
            [
                pa.field(f.name, pa.float64()) if pa.types.is_null(f.type) else f
                for f in summary.schema
            ]
        )
    )
    return runs, summary, files.read("table.parquet"), summary_csv.content


def merge_in_pandas(table: bytes, summary_csv: bytes) -> None:
    """As an analyst does it: read both as they are, merge on (point, flow), and the
    points' means of the runs are the summary's."""
    import io

    import pandas as pd

    frame = pd.read_parquet(io.BytesIO(table))
    points = pd.read_csv(io.BytesIO(summary_csv))
    merged = frame.merge(points, on=["point", "flow"], validate="many_to_one")
    assert len(merged) == len(frame) == 6
    assert (merged[RATE] == merged[f"{RATE}[bit/s]"]).all()
    means = merged.groupby("point")["completion_time"].mean()
    served = points.set_index("point")["completion_time.mean[s]"]
    assert np.allclose(means.sort_index(), served.sort_index(), rtol=1e-12, atol=0)
