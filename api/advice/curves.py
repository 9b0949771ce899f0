"""An advice's curves, as QuickPredict draws them: per lever, the target's metric against
the lever's value, measured (mean and 95% interval over the seeds) beside the analytic
bound (``engine.advice.curves``, stored by the worker with each step). The document, or one
table in the shape the comparison tables have (``api.compare.table``: `{columns: [{name,
unit}], records}`, or that as CSV with each column's unit in its header)."""

from __future__ import annotations

from typing import Any

from fastapi import Response

from api.advice.schemas import AdviceCurves
from api.compare import table
from api.responses import OrjsonResponse
from store.models import StoredWorkflow

UNITS = {"completion_time": "s", "goodput_bps": "bit/s"}
#: (column, whether it is in the metric's unit), in table order.
COLUMNS = [
    ("lever", False),
    ("paths", False),
    ("value", False),
    ("label", False),
    ("metric", False),
    ("measured", True),
    ("ci_low", True),
    ("ci_high", True),
    ("bound", True),
]


def responses() -> dict[str, Any]:
    """The OpenAPI entry of the curves' 200."""
    return {
        "model": AdviceCurves | table.SummaryTable,
        "description": "The curves; with `format=records` the same as a table (a row per "
        "lever and value); with `format=csv` or `Accept: text/csv` that table as CSV",
        "content": {"text/csv": {"schema": {"type": "string"}}},
    }


def document(wf: StoredWorkflow) -> dict[str, Any]:
    target = (wf.report or {}).get("target") or {}
    metric = target.get("metric")
    return {
        "advice_id": wf.id,
        "target": target or None,
        "unit": UNITS.get(metric or ""),
        "points": wf.curves or [],
    }


def as_table(doc: dict[str, Any]) -> dict[str, Any]:
    unit = doc["unit"]
    columns = [{"name": name, "unit": unit if metric else None} for name, metric in COLUMNS]
    records = [
        {**{name: p.get(name) for name, _ in COLUMNS}, "paths": "+".join(p.get("paths") or [])}
        for p in doc["points"]
    ]
    return {"columns": columns, "records": records}


def respond(wf: StoredWorkflow, shape: str, headers: dict[str, str] | None) -> Response:
    """The curves as the client wants them (``table.wants``)."""
    doc = document(wf)
    if shape == "json":
        return OrjsonResponse(doc, headers=headers)
    found = as_table(doc)
    if shape == "csv":
        return Response(
            table.to_csv(found),
            media_type="text/csv; charset=utf-8",
            headers={**(headers or {}), "Vary": "Accept"},
        )
    return OrjsonResponse(found, headers=headers)
