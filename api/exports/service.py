"""Export bundles: a finished run or sweep as one zip to take away (a report, a notebook, a
colleague's machine).

A bundle is streamed: its zip (api.exports.zipstream) is written as its data is read from
the store, a batch at a time, and each batch goes out before the next is read, so the API
holds one batch whatever the bundle's size. What is known before any bulk data is read
(`run_export`, `sweep_export`: the checks that make a 404 or a 409) comes first; the bundle
(`run_bundle`, `sweep_bundle`) then reads in short sessions, one per batch, and does its
CPU work (decoding series, writing CSV, Parquet and the zip) in a worker thread.

The bytes depend only on the stored data: fixed member timestamps, a fixed batching, no
export time; the same run exports to the same zip and can carry a strong ETag."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import orjson
from sqlalchemy.orm import Session

from api.deps import Db
from api.exceptions import Conflict
from api.exports.tables import (
    FORMATS,
    SERIES_SCHEMA,
    SweepTable,
    TableWriter,
    accounting,
    csv_header,
    series_rows,
)
from api.exports.zipstream import ZipStream
from api.runs import present as run_present
from api.runs import service as runs
from api.sweeps import present, state
from api.sweeps import service as sweeps
from api.sweeps import summary as sweep_summary
from store import results as stored
from store.models import Run, RunCapture, RunSeries, RunStatus
from store.results import ResultRepository
from store.sweeps import SweepRepository

# /2: streamed, manifest.json last. Sweeps /3: the table long by flow, in base units.
RUN_FORMAT = "tcpfr-run-export/2"
SWEEP_FORMAT = "tcpfr-sweep-export/3"
_JSON = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS
#: Samples read, decoded and written at once: under a MiB of arrays, 3 MiB of CSV text;
#: a 90 MB bundle then adds 65 MiB to the API at its peak (bench/export_bench.py).
BATCH_POINTS = 50_000
#: A sweep's runs read at once (each result a few kB, a thousand-flow run's a MiB or two).
RUN_BATCH = 50


def _json(doc: Any, *, sort_keys: bool = True) -> bytes:
    option = _JSON if sort_keys else _JSON & ~orjson.OPT_SORT_KEYS
    return orjson.dumps(doc, option=option) + b"\n"


#: What a bundle shows of a run: the run document's fields (api.runs.present renders
#: them), its `id` as `run_id`, less what a finished run's bundle has no use for (progress,
#: attempts, heartbeat, links).
_RUN_FIELDS = (
    "status",
    "preset",
    "scenario_id",
    "scenario_name",
    "scenario_hash",
    "seed",
    "engine_version",
    "cache_hit",
    "source_run_id",
    "created_at",
    "started_at",
    "finished_at",
)


def _run_meta(run: Run) -> dict[str, Any]:
    doc = run_present.run_fields(run)
    return {"run_id": doc["id"], **{name: doc[name] for name in _RUN_FIELDS}}


# --- a run ------------------------------------------------------------------------------


@dataclass
class RunExport:
    run: dict[str, Any]
    request: dict[str, Any]
    result: dict[str, Any]
    result_run_id: uuid.UUID
    series: list[tuple[str, str, int]]  # key, unit, stored length; by key
    captures: list[tuple[str, str]]  # link, direction


def run_export(session: Session, run_id: uuid.UUID, *, tenant_id: uuid.UUID) -> RunExport:
    """What a run's bundle will hold, less its bulk data. 409 unless it succeeded."""
    run = runs.get(session, run_id, tenant_id=tenant_id)
    if run.status is not RunStatus.succeeded:
        raise Conflict(
            f"run {run_id} is {run.status.value}; it can be exported once it has succeeded",
            status_value=run.status.value,
        )
    result = runs.result_of(session, run)
    assert result is not None
    repo = ResultRepository(session)
    return RunExport(
        run=_run_meta(run),
        # The canonical scenario (SI numbers) and the seed: POST /v1/runs accepts it as it is.
        request={"scenario": run.scenario, "seed": run.seed},
        result=stored.document(result),
        result_run_id=run.result_run_id,
        series=[(key, unit, n) for key, unit, n, *_ in repo.series_index(run.result_run_id)],
        captures=[(link, way) for link, way, *_ in repo.captures(run.result_run_id)],
    )


def _batches(series: list[tuple[str, str, int]]) -> Iterator[list[str]]:
    """Keys in order, a batch of about BATCH_POINTS samples at a time."""
    batch: list[str] = []
    points = 0
    for key, _unit, n in series:
        if batch and points + n > BATCH_POINTS:
            yield batch
            batch, points = [], 0
        batch.append(key)
        points += n
    if batch:
        yield batch


def _series(session: Session, run_id: uuid.UUID, keys: list[str]) -> list[RunSeries]:
    rows = ResultRepository(session).series(run_id, keys)
    return [rows[k] for k in keys]


def _capture(session: Session, run_id: uuid.UUID, link: str, way: str) -> RunCapture:
    row = ResultRepository(session).capture(run_id, link, way)
    assert row is not None  # listed by run_export; a finished run's captures stay
    return row


async def run_bundle(db: Db, export: RunExport) -> AsyncIterator[bytes]:
    """manifest.json, request.json, result.json, series.csv and series.parquet (long form:
    key, unit, t, v; every stored sample, not downsampled), time.csv/.parquet and
    rtt.csv/.parquet (where each TCP flow's time went, its round trip by hop), and each
    packet capture as captures/<link>-<direction>.pcap; as the zip is written."""
    zs = ZipStream()
    zs.add("request.json", _json(export.request))
    zs.add("result.json", _json(export.result))
    yield zs.take()
    for fmt in FORMATS:
        with zs.member(f"series.{fmt}", compress=fmt == "csv", large=True) as out:
            writer = TableWriter(fmt, out, SERIES_SCHEMA)
            for keys in _batches(export.series):
                rows = await db.read(_series, export.result_run_id, keys)
                await anyio.to_thread.run_sync(writer.write, series_rows(rows))
                del rows
                yield zs.take()
            await anyio.to_thread.run_sync(writer.close)
        yield zs.take()
    for name, table in accounting(export.result).items():  # a row per flow: small
        for fmt in FORMATS:
            with zs.member(f"{name}.{fmt}", compress=fmt == "csv") as out:
                writer = TableWriter(fmt, out, table.schema)
                writer.write(table)
                writer.close()
        yield zs.take()
    for link, way in export.captures:
        row = await db.read(_capture, export.result_run_id, link, way)
        with zs.member(f"captures/{link}-{way}.pcap") as out:
            await anyio.to_thread.run_sync(_inflate, row, out)
        del row
        yield zs.take()
    manifest = {
        "format": RUN_FORMAT,
        **export.run,
        "series": [{"key": key, "unit": unit} for key, unit, _ in export.series],
        "files": zs.files,
    }
    yield zs.finish(_json(manifest))


def _inflate(row: RunCapture, out: Any) -> None:
    for piece in stored.pcap_pieces(row.codec, row.data):
        out.write(piece)


# --- a sweep ----------------------------------------------------------------------------


@dataclass
class SweepExport:
    sweep: dict[str, Any]
    request: dict[str, Any]
    parameters: list[str]
    runs: list[dict[str, Any]]  # each: run fields and its point's parameters, not its result
    result_run_ids: list[uuid.UUID | None]  # each run's result's owner; None: not succeeded
    summary: dict[str, Any]


def sweep_export(session: Session, sweep_id: uuid.UUID, *, tenant_id: uuid.UUID) -> SweepExport:
    """What a sweep's bundle holds but its runs' results. 409 while any run is to finish."""
    sweep = sweeps.get(session, sweep_id, tenant_id=tenant_id)
    repo = SweepRepository(session)
    status = state.status_of(
        repo.progress(sweep.id), sweep.run_count, cancel_requested=sweep.cancel_requested
    )
    if status in ("queued", "running"):
        raise Conflict(
            f"sweep {sweep_id} is {status}; it can be exported once every run has finished",
            status_value=status,
        )
    run_rows = repo.runs(sweep.id)
    points = {p["index"]: p for p in sweep.points}
    si = sweep_summary.si_parameters(session, sweep)
    out = []
    for run in run_rows:
        point = points.get(run.point_index or 0, {})
        out.append(
            {
                **_run_meta(run),
                "point_index": run.point_index or 0,
                "replication": run.replication or 0,
                "is_baseline": bool(point.get("is_baseline")),
                "parameters": point.get("parameters", {}),
                "si_parameters": si.get(run.point_index or 0, {}),
                "error": run_present.run_error(run.error),
            }
        )
    paths = present.paths_of(sweep)
    return SweepExport(
        sweep={
            "sweep_id": sweep.id,
            "name": sweep.name,
            "preset": sweep.preset,
            "status": status,
            "run_count": sweep.run_count,
            "seeds": sweep.seeds,
            "baseline_index": sweep.baseline_index,
            "created_at": sweep.created_at,
        },
        request=_sweep_request(sweep.spec, paths),
        parameters=paths,
        runs=out,
        result_run_ids=[
            r.result_run_id if r.status is RunStatus.succeeded else None for r in run_rows
        ],
        summary=sweep_summary.build(session, sweep).model_dump(),
    )


def _sweep_request(spec: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    """The sweep as submitted (a study preset's already expanded): POST /v1/sweeps takes
    it. Its parameters in the client's order, which sets the points' order (PostgreSQL's
    JSONB does not keep it; the sweep's points do)."""
    request = {k: spec[k] for k in sorted(spec)}
    params = spec.get("parameters")
    if isinstance(params, dict):
        request["parameters"] = {p: params[p] for p in [*paths, *params] if p in params}
    return request


def _results(session: Session, ids: Sequence[uuid.UUID | None]) -> list[dict[str, Any] | None]:
    found = SweepRepository(session).results(i for i in ids if i is not None)
    return [None if i is None or i not in found else stored.document(found[i]) for i in ids]


async def sweep_bundle(db: Db, export: SweepExport) -> AsyncIterator[bytes]:
    """manifest.json, request.json (the sweep as submitted), summary.json, runs/<point>-
    <replication>.json per run (read RUN_BATCH at a time), then table.csv and table.parquet
    (runs x metrics); as the zip is written."""
    zs = ZipStream()
    zs.add("request.json", _json(export.request, sort_keys=False))
    zs.add("summary.json", _json(export.summary))
    yield zs.take()
    table = SweepTable(export.parameters)
    for i in range(0, len(export.runs), RUN_BATCH):
        batch = export.runs[i : i + RUN_BATCH]
        found = await db.read(_results, export.result_run_ids[i : i + RUN_BATCH])

        def write(batch: list[dict[str, Any]] = batch, found: list[Any] = found) -> None:
            for run, result in zip(batch, found, strict=True):
                doc = {**run, "result": result}
                name = f"runs/{run['point_index']:04d}-{run['replication']:03d}.json"
                zs.add(name, _json(doc))
                table.add(doc)

        await anyio.to_thread.run_sync(write)
        yield zs.take()
    rows = await anyio.to_thread.run_sync(table.table)
    for fmt in FORMATS:
        written = csv_header(rows) if fmt == "csv" else rows
        with zs.member(f"table.{fmt}", compress=fmt == "csv") as out:
            writer = TableWriter(fmt, out, written.schema)
            await anyio.to_thread.run_sync(writer.write, written)
            await anyio.to_thread.run_sync(writer.close)
        yield zs.take()
    manifest = {
        "format": SWEEP_FORMAT,
        **export.sweep,
        "parameters": export.parameters,
        "files": zs.files,
    }
    yield zs.finish(_json(manifest))
