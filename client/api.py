"""The Python client: the public HTTP API with httpx, answers as typed models.

    from client import Client
    run = Client("http://127.0.0.1:8000").run(preset="riverbed-t1-64k").wait()
    run.summary.flows["backup"]["completion_time"]          # 135.3
    run.series("flow.backup.cwnd")                           # a DataFrame, or {t, v} lists

Errors: ``ApiError`` (the server answered a problem+json; ``.problem`` holds it),
``Unreachable`` (no answer: refused, timed out, or a 5xx gateway), ``Failed`` (a run or
sweep ended failed or cancelled, from ``wait``)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar, Generic, Self, TypeVar

import httpx

from client.models import (
    SWEEP_FINISHED,
    PresetOut,
    Problem,
    RunOut,
    RunStatus,
    SeriesData,
    SeriesIndex,
    SweepOut,
)

DEFAULT_URL = "http://127.0.0.1:8000"  # where `make run` serves the API

#: (method, path) of every operation the client calls; the drift test checks them.
ENDPOINTS = [
    ("get", "/v1/presets"),
    ("post", "/v1/runs"),
    ("get", "/v1/runs/{run_id}"),
    ("get", "/v1/runs/{run_id}/series"),
    ("get", "/v1/runs/{run_id}/series/{key}"),
    ("get", "/v1/runs/{run_id}/export"),
    ("post", "/v1/sweeps"),
    ("post", "/v1/presets/{name}/sweep"),
    ("get", "/v1/sweeps/{sweep_id}"),
    ("get", "/v1/sweeps/{sweep_id}/summary"),
    ("get", "/v1/sweeps/{sweep_id}/export"),
    ("get", "/v1/compare"),
]


class ClientError(Exception):
    """Base of the client's errors."""


class Unreachable(ClientError):
    """The server could not be reached, or did not answer in time."""


class ApiError(ClientError):
    """The server refused the request; ``problem`` is its RFC 9457 document."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(f"{problem.status} {problem.title}: {problem.detail or ''}".rstrip(": "))
        self.problem = problem

    @property
    def status(self) -> int:
        return self.problem.status


class Failed(ClientError):
    """A run or sweep ended without succeeding (failed, cancelled, or a partial sweep)."""

    def __init__(self, what: str, status: str, message: str = "") -> None:
        super().__init__(f"{what} {status}" + (f": {message}" if message else ""))
        self.status = status


Progress = Callable[[float, str], None]


class Client:
    """One API server. ``url`` and ``key`` default to ``TCPFR_URL`` and ``TCPFR_API_KEY``."""

    def __init__(
        self,
        url: str | None = None,
        *,
        key: str | None = None,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = (url or os.environ.get("TCPFR_URL") or DEFAULT_URL).rstrip("/")
        key = key if key is not None else os.environ.get("TCPFR_API_KEY")
        headers = {"User-Agent": "tcpfr-client/0.1"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._http = httpx.Client(
            base_url=self.url, headers=headers, timeout=timeout, transport=transport
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- transport ----------------------------------------------------------------------

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One request; a problem+json answer raises ``ApiError``, no answer ``Unreachable``."""
        try:
            resp = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise Unreachable(f"{self.url}: {type(exc).__name__}: {exc}") from exc
        if resp.status_code >= 400:
            raise ApiError(_problem(resp))
        return resp

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.request(method, path, **kwargs).json()

    # --- catalogue ----------------------------------------------------------------------

    def presets(self) -> list[PresetOut]:
        return [PresetOut.model_validate(p) for p in self._json("GET", "/v1/presets")]

    # --- runs ---------------------------------------------------------------------------

    def run(
        self,
        *,
        preset: str | None = None,
        scenario: dict[str, Any] | None = None,
        scenario_id: str | uuid.UUID | None = None,
        seed: int | None = None,
        cache: str | None = None,
    ) -> Run:
        """Submit a run (one of ``preset``, ``scenario``, ``scenario_id``); returns at once."""
        body: dict[str, Any] = {}
        for name, value in (
            ("preset", preset),
            ("scenario", scenario),
            ("seed", seed),
            ("cache", cache),
        ):
            if value is not None:
                body[name] = value
        if scenario_id is not None:
            body["scenario_id"] = str(scenario_id)
        return self.submit_run(body)

    def submit_run(self, body: dict[str, Any]) -> Run:
        """Submit a `POST /v1/runs` body as it is (an export's request.json, say)."""
        return Run(self, RunOut.model_validate(self._json("POST", "/v1/runs", json=body)))

    def get_run(self, run_id: str | uuid.UUID) -> Run:
        return Run(self, RunOut.model_validate(self._json("GET", f"/v1/runs/{run_id}")))

    def series_index(self, run_id: str | uuid.UUID) -> SeriesIndex:
        return SeriesIndex.model_validate(self._json("GET", f"/v1/runs/{run_id}/series"))

    def series_data(
        self,
        run_id: str | uuid.UUID,
        key: str,
        *,
        max_points: int | None = None,
        start: float | None = None,
        end: float | None = None,
    ) -> SeriesData:
        params = _params(max_points=max_points, start=start, end=end)
        return SeriesData.model_validate(
            self._json("GET", f"/v1/runs/{run_id}/series/{key}", params=params)
        )

    def series_csv(
        self, run_id: str | uuid.UUID, key: str, *, max_points: int | None = None
    ) -> str:
        params = _params(max_points=max_points, format="csv")
        return self.request("GET", f"/v1/runs/{run_id}/series/{key}", params=params).text

    def series(
        self,
        run_id: str | uuid.UUID,
        key: str,
        *,
        max_points: int | None = None,
        frame: bool | None = None,
    ) -> Any:
        """One series: a pandas DataFrame (columns t, v) when pandas is installed (or
        ``frame=True``), else ``{"t": [...], "v": [...]}`` plain lists (``frame=False``)."""
        data = self.series_data(run_id, key, max_points=max_points)
        return _as_frame(data, frame)

    def export(self, what_id: str | uuid.UUID, path: str | Path) -> Path:
        """A run's or a sweep's export bundle (zip) written to ``path``."""
        try:
            resp = self.request("GET", f"/v1/runs/{what_id}/export")
        except ApiError as exc:
            if exc.status != 404:
                raise
            resp = self.request("GET", f"/v1/sweeps/{what_id}/export")
        out = Path(path)
        out.write_bytes(resp.content)
        return out

    def pcap(
        self,
        run_id: str | uuid.UUID,
        link: str,
        *,
        direction: str | None = None,
        path: str | Path | None = None,
    ) -> bytes:
        """A run's packet capture of ``link`` (libpcap bytes; Wireshark opens them), written
        to ``path`` too when given. ``direction`` may be left out when the link was
        captured once."""
        data = self.request(
            "GET", f"/v1/runs/{run_id}/pcap", params=_params(link=link, direction=direction)
        ).content
        if path is not None:
            Path(path).write_bytes(data)
        return data

    # --- sweeps -------------------------------------------------------------------------

    def sweep(
        self,
        body: dict[str, Any] | None = None,
        *,
        preset: str | None = None,
        **options: Any,
    ) -> Sweep:
        """Submit a sweep: a `POST /v1/sweeps` body, or a study ``preset`` with optional
        ``replications``, ``seed``, ``cache``, ``name``."""
        if (body is None) == (preset is None):
            raise ValueError("give a sweep body or a study preset, not both")
        if preset is not None:
            doc = self._json("POST", f"/v1/presets/{preset}/sweep", json=options or None)
        else:
            doc = self._json("POST", "/v1/sweeps", json={**(body or {}), **options})
        return Sweep(self, SweepOut.model_validate(doc))

    def get_sweep(self, sweep_id: str | uuid.UUID) -> Sweep:
        return Sweep(self, SweepOut.model_validate(self._json("GET", f"/v1/sweeps/{sweep_id}")))

    def sweep_summary(self, sweep_id: str | uuid.UUID) -> dict[str, Any]:
        """The sweep's comparison (schema ``SweepSummary``), as a dict."""
        return self._json("GET", f"/v1/sweeps/{sweep_id}/summary")

    # --- comparisons --------------------------------------------------------------------

    def compare(
        self, run_ids: Iterable[str | uuid.UUID], *, baseline: str | uuid.UUID | None = None
    ) -> dict[str, Any]:
        """The comparison of succeeded runs (schema ``RunComparison``), as a dict."""
        params = _params(runs=",".join(map(str, run_ids)), baseline=baseline)
        return self._json("GET", "/v1/compare", params=params)


Doc = TypeVar("Doc", RunOut, SweepOut)


class _Handle(Generic[Doc]):
    """What runs and sweeps share: the client, the latest document, its id, waiting for
    it to finish, the export. A subclass says how to refresh, read and judge its document,
    and how long to wait between polls (`POLL`: first delay, longest delay)."""

    KIND: ClassVar[str]
    POLL: ClassVar[tuple[float, float]]

    def __init__(self, client: Client, doc: Doc) -> None:
        self.client = client
        self.doc: Doc = doc

    @property
    def id(self) -> uuid.UUID:
        return self.doc.id

    def export(self, path: str | Path) -> Path:
        return self.client.export(self.id, path)

    def refresh(self) -> Self:
        raise NotImplementedError

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
            self.refresh,
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

    def _reading(self) -> tuple[float, str]:
        return self.doc.progress.fraction, self.status

    def _finished(self) -> bool:
        return self.status in SWEEP_FINISHED

    def _failure(self) -> Failed | None:
        if self.status == "succeeded":
            return None
        c = self.doc.progress.counts
        return Failed(
            f"sweep {self.id}",
            self.status,
            f"{c.succeeded} succeeded, {c.failed} failed, {c.cancelled} cancelled",
        )

    def summary(self) -> dict[str, Any]:
        return self.client.sweep_summary(self.id)


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


def _params(**values: Any) -> dict[str, Any]:
    return {k: str(v) for k, v in values.items() if v is not None}


def _problem(resp: httpx.Response) -> Problem:
    try:
        return Problem.model_validate(resp.json())
    except ValueError:
        # Not problem+json (a proxy's page, say): keep what can be said.
        return Problem(
            type="about:blank",
            title=resp.reason_phrase or "Error",
            status=resp.status_code,
            detail=resp.text[:500] or None,
        )


def _as_frame(data: SeriesData, frame: bool | None) -> Any:
    if frame is not False:
        try:
            import pandas as pd
        except ImportError:
            if frame:
                raise
        else:
            df = pd.DataFrame({"t": data.t, "v": data.v})
            df.attrs.update(key=data.key, unit=data.unit)
            return df
    return {"t": data.t, "v": data.v}
