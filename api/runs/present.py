"""How a run is rendered: the one place that writes a run document (``RunOut``), a list's
item (``RunListItem``) and the brief a sweep's or an advice's list shows of each run. Each
returns a JSON-ready dict rendered once by orjson; ``api.runs.schemas`` documents it."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from store import results as stored_results
from store.models import Run, RunEvent, RunResult


def run_error(stored: dict[str, Any] | None) -> dict[str, str] | None:
    """A run's stored error as `RunError` shows it, JSON-ready (None when it has none)."""
    if not stored:
        return None
    return {"type": str(stored.get("type", "Error")), "message": str(stored.get("message", ""))}


def run_brief(run: Any) -> dict[str, Any]:
    """What a list of a sweep's or an advice's runs shows of each run, JSON-ready (`run`: a
    ``store.models.Run``)."""
    return {
        "id": run.id,
        "seed": run.seed,
        "status": run.status,
        "progress": run.progress,
        "cache_hit": run.cache_hit,
        "source_run_id": run.source_run_id,
        "scenario_hash": run.scenario_hash,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "error": run_error(run.error),
        "links": {"self": f"/v1/runs/{run.id}"},
    }


def run_fields(run: Run) -> dict[str, Any]:
    """A run as `RunListItem` has it, JSON-ready: rendered once by orjson, with no second
    validation pass (the schema documents it; tests check documents against it)."""
    base = f"/v1/runs/{run.id}"
    return {
        "id": run.id,
        "status": run.status,
        "progress": run.progress,
        "cancel_requested": run.cancel_requested,
        "scenario_id": run.scenario_id,
        "preset": run.preset,
        "scenario_name": run.scenario_name,
        "scenario_hash": run.scenario_hash,
        "seed": run.seed,
        "engine_version": run.engine_version,
        "cache_hit": run.cache_hit,
        "source_run_id": run.source_run_id,
        "attempts": run.attempts,
        "created_at": run.created_at,
        "started_at": run.started_at,
        "heartbeat_at": run.heartbeat_at,
        "finished_at": run.finished_at,
        "error": run_error(run.error),
        "links": {
            "self": base,
            "series": f"{base}/series",
            "scenario": f"{base}/scenario",
            "cancel": f"{base}/cancel",
            "events": f"{base}/events",
        },
    }


def run_document(run: Run, result: RunResult | None) -> dict[str, Any]:
    """A run as `RunOut` has it: with its summary and diagnosis once it succeeded."""
    doc = run_fields(run)
    doc["summary"] = doc["diagnosis"] = doc["warnings"] = doc["captures"] = None
    if result is not None:
        doc["summary"] = stored_results.summary(result)
        doc["diagnosis"] = result.diagnosis
        doc["captures"] = captures_of(run.id, result)
    return doc


def captures_of(run_id: uuid.UUID, result: RunResult) -> list[dict[str, Any]]:
    """The packet captures a result holds, as the run document lists them."""
    base = f"/v1/runs/{run_id}/pcap"
    return [
        {**c, "href": f"{base}?link={c['link']}&direction={c['direction']}"}
        for c in stored_results.capture_summaries(result)
    ]


def run_history(run: Run, events: Sequence[RunEvent]) -> dict[str, Any]:
    """A run's history as `RunHistory` has it, JSON-ready, oldest event first."""
    return {
        "run_id": run.id,
        "status": run.status,
        "attempts": run.attempts,
        "events": [
            {
                "at": e.at,
                "event": e.event,
                "attempt": e.attempt,
                "worker": e.worker,
                "detail": e.detail,
            }
            for e in events
        ],
    }
