"""A comparison (a sweep's summary, /v1/compare) as one table: a row per point and flow,
a column per parameter and per metric statistic, every number in base units (seconds,
bytes, bit/s, fractions), for a spreadsheet or a data frame. CSV, or JSON records."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from fastapi import Query, Request, Response

from api import csv_text
from api.compare.schemas import SummaryTable
from api.compare.units import unit_of
from api.responses import OrjsonResponse

TableFormat = Annotated[
    Literal["json", "csv", "records"] | None,
    Query(
        description="`csv` (text/csv, as `Accept: text/csv` asks) or `records` (JSON): the "
        "comparison as a table, one row per point and flow; `json`: the document"
    ),
]
STATS = (
    "mean",
    "sd",
    "ci95_low",
    "ci95_high",
    "n",
    "delta",
    "delta_ci95_low",
    "delta_ci95_high",
    "delta_pct",
    "delta_pct_ci95_low",
    "delta_pct_ci95_high",
)
PERCENT = ("delta_pct", "delta_pct_ci95_low", "delta_pct_ci95_high")
STAT_UNITS = {"n": "count", **dict.fromkeys(PERCENT, "percent")}
POINT_COLUMNS: list[tuple[str, str | None]] = [
    ("point", None),
    ("is_baseline", None),
    ("runs", "count"),
    ("succeeded", "count"),
]


def responses(document: Any, what: str) -> dict[str, Any]:
    """The OpenAPI entry of a 200 that is `document`, or the table as records or CSV."""
    return {
        "model": document | SummaryTable,
        "description": f"{what}; with `format=records` the same figures as a table "
        "(`SummaryTable`); with `format=csv` or `Accept: text/csv` that table as CSV",
        "content": {"text/csv": {"schema": {"type": "string"}}},
    }


def respond(
    body: dict[str, Any],
    shape: str,
    headers: dict[str, str] | None,
    si_parameters: Mapping[int, Mapping[str, Any]] | None = None,
) -> Response:
    """The comparison `body` as the client wants it (`wants`): the document, or the table."""
    if shape == "json":
        return OrjsonResponse(body, headers=headers)
    found = build(body, si_parameters)
    if shape == "csv":
        return Response(
            to_csv(found),
            media_type="text/csv; charset=utf-8",
            headers={**(headers or {}), "Vary": "Accept"},
        )
    return OrjsonResponse(found, headers=headers)


def wants(request: Request, fmt: str | None) -> str:
    """`json` (the document), `csv` or `records`: `?format=` first, then the Accept header."""
    if fmt is not None:
        return fmt
    accept = request.headers.get("accept", "")
    if "text/csv" in accept and "application/json" not in accept.split("text/csv")[0]:
        return "csv"
    return "json"


def build(
    body: Mapping[str, Any], si_parameters: Mapping[int, Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """`{columns: [{name, unit}], records: [...]}` from a comparison body (report.build).
    `si_parameters` gives each point's parameter values in base units where the body has
    them as written (a sweep's "T1"); a comparison's are already."""
    points = body["points"]
    paths = list(dict.fromkeys(p for row in points for p in row["parameters"]))
    metrics = list(dict.fromkeys((m["metric"], m["unit"]) for m in body["metrics"]))
    kinds = {m["flow"]: m["kind"] for m in body["metrics"]}
    columns = [{"name": n, "unit": u} for n, u in POINT_COLUMNS]
    columns += [{"name": p, "unit": unit_of(p)} for p in paths]
    columns += [{"name": n, "unit": None} for n in ("flow", "kind", "limit")]
    for m, unit in metrics:
        columns += [{"name": f"{m}.{s}", "unit": STAT_UNITS.get(s, unit)} for s in STATS]
    records = []
    for row in points:
        si = (si_parameters or {}).get(row["index"], {})
        for fid, cells in row["metrics"].items():
            rec: dict[str, Any] = {
                "point": row["index"],
                "is_baseline": row["is_baseline"],
                "runs": row["runs"],
                "succeeded": row["succeeded"],
            }
            for p in paths:
                rec[p] = si.get(p, row["parameters"].get(p))
            rec["flow"] = fid
            rec["kind"] = kinds.get(fid)
            rec["limit"] = (row["limits"].get(fid) or {}).get("limit")
            for m, _ in metrics:
                cell = cells.get(m) or {}
                ci = cell.get("ci95") or {}
                delta = cell.get("delta") or {}
                delta_ci = delta.get("ci95") or {}
                pct_ci = delta.get("pct_ci95") or {}
                rec.update(
                    {
                        f"{m}.mean": cell.get("mean"),
                        f"{m}.sd": cell.get("sd"),
                        f"{m}.ci95_low": ci.get("low"),
                        f"{m}.ci95_high": ci.get("high"),
                        f"{m}.n": cell.get("n"),
                        # The paired change against the baseline, and its interval.
                        f"{m}.delta": delta.get("mean"),
                        f"{m}.delta_ci95_low": delta_ci.get("low"),
                        f"{m}.delta_ci95_high": delta_ci.get("high"),
                        f"{m}.delta_pct": delta.get("pct"),
                        f"{m}.delta_pct_ci95_low": pct_ci.get("low"),
                        f"{m}.delta_pct_ci95_high": pct_ci.get("high"),
                    }
                )
            records.append(rec)
    return {"columns": columns, "records": records}


def to_csv(table: Mapping[str, Any]) -> str:
    """A header line naming each column, with its unit where it has one
    (`goodput_bps.mean[bit/s]`), then a line per record; empty cells where there is no value."""
    names = [c["name"] for c in table["columns"]]
    header = [c["name"] + (f"[{c['unit']}]" if c["unit"] else "") for c in table["columns"]]
    return csv_text.write(header, ([rec.get(n) for n in names] for rec in table["records"]))
