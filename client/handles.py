"""Handles on the server's resources: a run, a sweep, an advice. Each holds the latest
document, refreshes it, and waits for the resource to finish."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, Self, TypeVar

from client.errors import Failed
from client.models import (
    ADVICE_FINISHED,
    SWEEP_FINISHED,
    AdviceOut,
    RunOut,
    RunStatus,
    SweepOut,
    SweepRun,
)

if TYPE_CHECKING:
    from client.models import SeriesIndex, SweepState

Progress = Callable[[float, str], None]
Id = str | uuid.UUID


class ClientApi(Protocol):
    """What a handle asks of the client (client.api's `Client`, which returns handles and
    is therefore named by this protocol)."""

    def get_run(self, run_id: Id) -> Run: ...

    def get_sweep(self, sweep_id: Id) -> Sweep: ...

    def get_advice(self, advice_id: Id) -> Advice: ...

    def cancel_sweep(self, sweep_id: Id) -> Sweep: ...

    def cancel_advice(self, advice_id: Id) -> Advice: ...

    def export(self, what_id: Id, path: str | Path) -> Path: ...

    def series(
        self, run_id: Id, key: str, *, max_points: int | None = None, frame: bool | None = None
    ) -> Any: ...

    def series_index(self, run_id: Id) -> SeriesIndex: ...

    def pcap(
        self, run_id: Id, link: str, *, direction: str | None = None, path: str | Path | None = None
    ) -> bytes: ...

    def sweep_state(self, sweep_id: Id) -> SweepState: ...

    def sweep_runs(
        self, sweep_id: Id, *, status: str | None = None, point: int | None = None
    ) -> list[SweepRun]: ...

    def sweep_table(self, sweep_id: Id, *, frame: bool | None = None) -> Any: ...

    def sweep_summary(self, sweep_id: Id) -> dict[str, Any]: ...

    def advice_curves(self, advice_id: Id, *, csv: bool = False) -> Any: ...


Doc = TypeVar("Doc", RunOut, SweepOut, AdviceOut)


class _Handle(Generic[Doc]):
    """What runs and sweeps share: the client, the latest document, its id, waiting for
    it to finish, the export. A subclass says how to refresh, read and judge its document,
    and how long to wait between polls (`POLL`: first delay, longest delay)."""

    KIND: ClassVar[str]
    POLL: ClassVar[tuple[float, float]]

    def __init__(self, client: ClientApi, doc: Doc) -> None:
        self.client = client
        self.doc: Doc = doc

    @property
    def id(self) -> uuid.UUID:
        return self.doc.id

    def export(self, path: str | Path) -> Path:
        return self.client.export(self.id, path)

    def refresh(self) -> Self:
        raise NotImplementedError

    def _poll_once(self) -> None:
        """One poll of ``wait``'s: the whole document unless a subclass reads less."""
        self.refresh()

    def _reading(self) -> tuple[float, str]:
        """(fraction done, status), as ``progress`` callbacks are given them."""
        raise NotImplementedError

    def _finished(self) -> bool:
        raise NotImplementedError

    def _failure(self) -> Failed | None:
        """What ``wait`` raises for a finished document that did not succeed."""
        raise NotImplementedError

    def wait(
        self,
        *,
        timeout: float | None = None,
        progress: Progress | None = None,
        check: bool = True,
    ) -> Self:
        """Poll until it has finished (a sweep: every run); ``progress(fraction, status)``
        on each change. One that did not succeed (a run that failed or was cancelled, a
        sweep with any run so) raises ``Failed`` unless ``check=False``."""
        first, longest = self.POLL
        _poll(
            self._reading,
            self._finished,
            self._poll_once,
            f"{self.KIND} {self.id}",
            timeout=timeout,
            progress=progress,
            delay=first,
            cap=longest,
        )
        if check and (failure := self._failure()) is not None:
            raise failure
        return self


class Run(_Handle[RunOut]):
    """A run on the server; ``doc`` is its latest ``RunOut``."""

    KIND = "run"
    POLL = (0.1, 1.0)

    def __repr__(self) -> str:
        return f"<Run {self.id} {self.status.value} {self.doc.progress:.0%}>"

    @property
    def status(self) -> RunStatus:
        return self.doc.status

    @property
    def summary(self) -> Any:
        return self.doc.summary

    @property
    def diagnosis(self) -> dict[str, Any] | None:
        return self.doc.diagnosis

    def refresh(self) -> Self:
        self.doc = self.client.get_run(self.id).doc
        return self

    def _reading(self) -> tuple[float, str]:
        return self.doc.progress, self.status.value

    def _finished(self) -> bool:
        return self.status.finished

    def _failure(self) -> Failed | None:
        if self.status is RunStatus.succeeded:
            return None
        err = self.doc.error
        return Failed(f"run {self.id}", self.status.value, err.message if err else "")

    def series(self, key: str, *, max_points: int | None = None, frame: bool | None = None) -> Any:
        return self.client.series(self.id, key, max_points=max_points, frame=frame)

    def series_keys(self) -> list[str]:
        return [s.key for s in self.client.series_index(self.id).series]

    def pcap(
        self, link: str, *, direction: str | None = None, path: str | Path | None = None
    ) -> bytes:
        return self.client.pcap(self.id, link, direction=direction, path=path)


class Sweep(_Handle[SweepOut]):
    """A sweep on the server; ``doc`` is its latest ``SweepOut``."""

    KIND = "sweep"
    POLL = (0.2, 2.0)

    def __repr__(self) -> str:
        return f"<Sweep {self.id} {self.status} {self.doc.progress.fraction:.0%}>"

    @property
    def status(self) -> str:
        return self.doc.status

    def refresh(self) -> Self:
        self.doc = self.client.get_sweep(self.id).doc
        return self

    def _poll_once(self) -> None:
        """Refresh the state alone (a few hundred bytes, not the sweep's points and
        spec); the whole document once it has finished."""
        state = self.client.sweep_state(self.id)
        fields = ("status", "cancel_requested", "cache_hits", "progress")
        self.doc = self.doc.model_copy(update={f: getattr(state, f) for f in fields})
        if self._finished():
            self.refresh()

    def wait(
        self,
        *,
        timeout: float | None = None,
        progress: Progress | None = None,
        check: bool = True,
    ) -> Self:
        """Poll the sweep's state until every run has finished, and return the sweep: its
        ``status`` says what happened (succeeded, partial, failed, or cancelled: the runs
        that finished first keep their results, see ``runs()`` and ``summary()``). With
        ``check`` (the default) a sweep some of whose runs failed (``failed``, ``partial``)
        raises ``Failed``; a cancelled one does not: it ended as it was asked to."""
        return super().wait(timeout=timeout, progress=progress, check=check)

    def cancel(self) -> Self:
        """Cancel the queued runs at once and stop the running ones (idempotent); ``wait``
        then returns once they have stopped, with status ``cancelled``."""
        self.doc = self.client.cancel_sweep(self.id).doc
        return self

    def runs(self, *, status: str | None = None, point: int | None = None) -> list[SweepRun]:
        """The sweep's runs in point order, then replication."""
        return self.client.sweep_runs(self.id, status=status, point=point)

    def table(self, *, frame: bool | None = None) -> Any:
        """The summary as a table, a row per point and flow, in base units: a DataFrame when
        pandas is installed (units in ``df.attrs["units"]``), else ``{columns, records}``."""
        return self.client.sweep_table(self.id, frame=frame)

    def _reading(self) -> tuple[float, str]:
        return self.doc.progress.fraction, self.status

    def _finished(self) -> bool:
        return self.status in SWEEP_FINISHED

    def _failure(self) -> Failed | None:
        if self.status in ("succeeded", "cancelled"):
            return None
        c = self.doc.progress.counts
        return Failed(
            f"sweep {self.id}",
            self.status,
            f"{c.succeeded} succeeded, {c.failed} failed, {c.cancelled} cancelled",
        )

    def summary(self) -> dict[str, Any]:
        return self.client.sweep_summary(self.id)


class Advice(_Handle[AdviceOut]):
    """An advice (or a run's remedy check) on the server; ``doc`` is its latest ``AdviceOut``."""

    KIND = "advice"
    POLL = (0.2, 2.0)

    def __repr__(self) -> str:
        return f"<Advice {self.id} {self.status} {self.doc.progress.fraction:.0%}>"

    @property
    def status(self) -> str:
        return self.doc.status

    @property
    def report(self) -> dict[str, Any]:
        """The report so far ({} before the first step): ``fixes`` cheapest first,
        ``rejected`` levers with their reason, ``best``, ``text`` (the sentences)..."""
        return self.doc.report or {}

    def refresh(self) -> Self:
        self.doc = self.client.get_advice(self.id).doc
        return self

    def cancel(self) -> Self:
        self.doc = self.client.cancel_advice(self.id).doc
        return self

    def curves(self, *, csv: bool = False) -> Any:
        return self.client.advice_curves(self.id, csv=csv)

    def _reading(self) -> tuple[float, str]:
        return self.doc.progress.fraction, self.status

    def _finished(self) -> bool:
        return self.status in ADVICE_FINISHED

    def _failure(self) -> Failed | None:
        if self.status == "succeeded":
            return None
        err = self.doc.error
        return Failed(f"advice {self.id}", self.status, err.message if err else "")

    def export(self, path: str | Path) -> Path:
        raise NotImplementedError("an advice has no bundle: export its runs")


def _poll(
    reading: Callable[[], tuple[float, str]],
    finished: Callable[[], bool],
    refresh: Callable[[], object],
    what: str,
    *,
    timeout: float | None,
    progress: Progress | None,
    delay: float,
    cap: float,
) -> None:
    """Refresh until `finished()`, backing off from `delay` to `cap` seconds; `progress`
    is called with each new `reading()` (fraction, status); `TimeoutError` past `timeout`."""
    deadline = None if timeout is None else time.monotonic() + timeout
    seen = None
    while True:
        now = reading()
        if progress is not None and now != seen:
            progress(*now)
            seen = now
        if finished():
            return
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"{what} still {now[1]} after {timeout}s")
        time.sleep(delay)
        delay = min(delay * 1.5, cap)
        refresh()
