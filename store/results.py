"""A run's Result in the database and back: the one place that knows which Result fields
have columns of their own, how the series and packet captures are packed, and what a stored
result reads back as.

The worker saves through `pack` and `ResultRepository.save`; every reader asks `document`,
`summary` or `pcap` here, so a new Result field, a new codec or a new column changes this
module and nothing above it.
"""

from __future__ import annotations

import uuid
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from store.codec import CODEC, encode
from store.db import BINARY_RESULTS
from store.models import Run, RunCapture, RunResult, RunSeries, RunStatus

if TYPE_CHECKING:  # the engine is the worker's; readers of stored results never import it
    from engine.result import CaptureSummary, Result, Series

#: The result's figures a run document's `summary` shows, each a column of its own.
_SUMMARY_COLUMNS = ("sim_time", "wall_time", "events", "warnings", "flows", "links", "pvcs")

#: Result fields with columns of their own (`series` and the capture files: rows of their
#: own); any other field the engine adds is kept in `extra`.
COLUMNS = frozenset(
    {
        "engine_version",
        "scenario_hash",
        "seed",
        *_SUMMARY_COLUMNS,
        "diagnosis",
        "series",
        "cancelled",
    }
)

#: What a run document's `summary` shows of a stored result (the diagnosis has a field of
#: its own there). `engine_build`, kept in `extra` in the row, is lifted to a field of its own.
SUMMARY_FIELDS = (*_SUMMARY_COLUMNS, "extra", "engine_build")

#: A capture's `codec`: its libpcap file deflated (zero payloads and repeating headers
#: shrink it several times).
CAPTURE_CODEC = "zlib"


class UnknownCodec(ValueError):
    """A stored blob packed in a way this version cannot read."""


# --- saving ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PackedSeries:
    key: str
    unit: str
    length: int
    t_start: float | None
    t_end: float | None
    t: bytes
    v: bytes
    thinning: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class PackedCapture:
    summary: CaptureSummary
    data: bytes  # deflated, CAPTURE_CODEC


@dataclass(frozen=True, slots=True)
class PackedResult:
    """A Result packed for its rows: encoded and deflated once, so that a write tried again
    (the database away) stores the same bytes without packing them again."""

    fields: dict[str, Any]
    series: list[PackedSeries]
    captures: list[PackedCapture]

    def rows(self, run_id: uuid.UUID) -> tuple[RunResult, list[RunSeries], list[RunCapture]]:
        """Fresh rows for one try: a failed flush leaves its objects spent."""
        result = RunResult(run_id=run_id, **self.fields)
        series = series_rows(run_id, self.series)
        captures = [
            RunCapture(
                run_id=run_id,
                link=c.summary.link,
                direction=c.summary.direction,
                packets=c.summary.packets,
                size=c.summary.bytes,
                sha256=c.summary.sha256,
                codec=CAPTURE_CODEC,
                data=c.data,
            )
            for c in self.captures
        ]
        return result, series, captures


def series_rows(run_id: uuid.UUID, packed: Sequence[PackedSeries]) -> list[RunSeries]:
    return [
        RunSeries(
            run_id=run_id,
            key=s.key,
            unit=s.unit,
            length=s.length,
            t_start=s.t_start,
            t_end=s.t_end,
            codec=CODEC,
            t=s.t,
            v=s.v,
            thinning=s.thinning,
        )
        for s in packed
    ]


def pack_series(series: dict[str, Series]) -> list[PackedSeries]:
    """A running run's series so far (a snapshot, see `ResultRepository.save_partial`)."""
    return [_pack_series(key, s) for key, s in series.items()]


def pack(result: Result) -> PackedResult:
    """The rows' contents of `result`: its summary columns, its series, its captures."""
    data = result.model_dump(mode="python", exclude={"series"})
    fields = dict(
        engine_version=data["engine_version"],
        scenario_hash=data["scenario_hash"],
        seed=data["seed"],
        sim_time=data["sim_time"],
        wall_time=data["wall_time"],
        events=data["events"],
        warnings=list(data.get("warnings") or []),
        flows=data.get("flows") or {},
        links=data.get("links") or {},
        pvcs=data.get("pvcs") or {},
        diagnosis=data.get("diagnosis") or {},
        extra={k: v for k, v in data.items() if k not in COLUMNS},
    )
    captures = []
    for c in result.captures:
        pcap = result.pcap(c.link, c.direction)
        assert pcap is not None  # every listed capture has its file
        captures.append(PackedCapture(c, zlib.compress(pcap, 6)))
    series = [_pack_series(key, s) for key, s in result.series.items()]
    return PackedResult(fields, series, captures)


def _pack_series(key: str, series: Series) -> PackedSeries:
    t = series.t
    return PackedSeries(
        key=key,
        unit=series.unit,
        length=len(t),
        t_start=t[0] if t else None,
        t_end=t[-1] if t else None,
        t=encode(t),
        v=encode(series.v),
        thinning=None if series.thinning is None else series.thinning.model_dump(),
    )


# --- reading --------------------------------------------------------------------------


def document(row: RunResult) -> dict[str, Any]:
    """The engine's Result as stored, less its series (those are read one by one)."""
    return {
        "engine_version": row.engine_version,
        "scenario_hash": row.scenario_hash,
        "seed": row.seed,
        "sim_time": row.sim_time,
        "wall_time": row.wall_time,
        "events": row.events,
        "warnings": row.warnings,
        "flows": row.flows,
        "links": row.links,
        "pvcs": row.pvcs,
        "diagnosis": row.diagnosis,
        "extra": row.extra or {},
    }


def summary(row: RunResult) -> dict[str, Any]:
    """A run document's `summary`: the stored result's figures, less its diagnosis."""
    stored = document(row)
    extra = dict(stored["extra"])
    lifted = {"extra": extra, "engine_build": extra.pop("engine_build", None)}
    out = {key: lifted[key] if key in lifted else stored[key] for key in SUMMARY_FIELDS}
    return out


def capture_summaries(row: RunResult) -> list[dict[str, Any]]:
    """The captures the run took, as its Result listed them (`CaptureSummary`)."""
    return list((row.extra or {}).get("captures", []))


def pcap(codec: str, data: bytes) -> bytes:
    """A stored capture's libpcap file (CPU work: call it off the event loop)."""
    return b"".join(pcap_pieces(codec, data))


#: How much of a capture's file `pcap_pieces` inflates at once.
PCAP_PIECE = 1 << 20


def pcap_pieces(codec: str, data: bytes) -> Iterator[bytes]:
    """A stored capture's libpcap file, a piece at a time (a file is up to 64 MiB)."""
    if codec != CAPTURE_CODEC:
        raise UnknownCodec(f"unknown capture codec {codec!r}")
    inflate = zlib.decompressobj()
    rest = memoryview(data)
    while rest or not inflate.eof:
        piece = inflate.decompress(rest, PCAP_PIECE)
        rest = memoryview(inflate.unconsumed_tail)
        if not piece and not rest:
            break
        yield piece
    if tail := inflate.flush():
        yield tail


class ResultRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def get(self, run_id: uuid.UUID) -> RunResult | None:
        return self.session.get(RunResult, run_id)

    def save(self, run_id: uuid.UUID, packed: PackedResult) -> None:
        """The run's result, series and captures, flushed in the caller's transaction: its
        final series replace those it had while running, in the same commit."""
        result, series, captures = packed.rows(run_id)
        self.drop_series(run_id)
        self.session.add(result)
        self.session.add_all(series)
        self.session.add_all(captures)
        self.session.flush()

    def save_partial(self, run_id: uuid.UUID, *, task_id: str, series: list[PackedSeries]) -> bool:
        """A running run's series so far replace its previous ones, in the caller's
        transaction; False (and nothing written) when the run is no longer running under
        `task_id`. Readers see the old set or the new one, never a mix."""
        owned = self.session.execute(
            select(Run.id)
            .where(Run.id == run_id, Run.status == RunStatus.running, Run.task_id == task_id)
            .with_for_update()
        ).first()
        if owned is None:
            return False
        self.drop_series(run_id)
        self.session.add_all(series_rows(run_id, series))
        self.session.flush()
        return True

    def drop_series(self, run_id: uuid.UUID) -> None:
        """Forget the run's series (a running run's partial ones, when it fails or is
        cancelled: series are shown only while it runs and once it has succeeded)."""
        self.session.execute(delete(RunSeries).where(RunSeries.run_id == run_id))

    def series_version(self, run_id: uuid.UUID) -> tuple[int, float]:
        """How far a running run's stored series go: their points and their latest time,
        which grow with every snapshot (a cheap read for an ETag)."""
        stmt = select(
            func.coalesce(func.sum(RunSeries.length), 0),
            func.max(RunSeries.t_end),
        ).where(RunSeries.run_id == run_id)
        points, latest = self.session.execute(stmt).one()
        return int(points), -1.0 if latest is None else float(latest)

    def captures(self, run_id: uuid.UUID) -> Sequence[tuple[str, str, int, int, str]]:
        """(link, direction, packets, size, sha256) of the run's captures, by link."""
        stmt = (
            select(
                RunCapture.link,
                RunCapture.direction,
                RunCapture.packets,
                RunCapture.size,
                RunCapture.sha256,
            )
            .where(RunCapture.run_id == run_id)
            .order_by(RunCapture.link, RunCapture.direction)
        )
        return [tuple(row) for row in self.session.execute(stmt).all()]  # type: ignore[misc]

    def capture(self, run_id: uuid.UUID, link: str, direction: str) -> RunCapture | None:
        stmt = select(RunCapture).where(
            RunCapture.run_id == run_id,
            RunCapture.link == link,
            RunCapture.direction == direction,
        )
        return self.session.scalars(stmt, execution_options={BINARY_RESULTS: True}).first()

    def series_index(
        self, run_id: uuid.UUID
    ) -> Sequence[tuple[str, str, int, float | None, float | None, dict[str, Any] | None]]:
        stmt = (
            select(
                RunSeries.key,
                RunSeries.unit,
                RunSeries.length,
                RunSeries.t_start,
                RunSeries.t_end,
                RunSeries.thinning,
            )
            .where(RunSeries.run_id == run_id)
            .order_by(RunSeries.key)
        )
        return [tuple(row) for row in self.session.execute(stmt).all()]

    def series(self, run_id: uuid.UUID, keys: Sequence[str]) -> dict[str, RunSeries]:
        stmt = select(RunSeries).where(RunSeries.run_id == run_id, RunSeries.key.in_(keys))
        rows = self.session.scalars(stmt, execution_options={BINARY_RESULTS: True})
        return {row.key: row for row in rows}
