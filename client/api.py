"""The Python client: the public HTTP API with httpx, answers as typed models.

    from client import Client
    run = Client("http://127.0.0.1:8000").run(preset="riverbed-t1-64k").wait()
    run.summary.flows["backup"]["completion_time"]          # 135.3
    run.series("flow.backup.cwnd")                           # a DataFrame, or {t, v} lists
    advice = Client().advise("backup.completion_time<=200s", preset="riverbed-t1-8k").wait()
    advice.report["fixes"][0]["text"]                        # the cheapest fix, measured

Errors: ``ApiError`` (the server answered a problem+json; ``.problem`` holds it),
``Unreachable`` (no answer: refused, timed out, or a 5xx gateway), ``Failed`` (a run,
sweep or advice ended failed or cancelled, from ``wait``): ``client.errors``."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx

from client.errors import ApiError, Unreachable
from client.handles import Advice, Run, Sweep
from client.models import (
    AdviceOut,
    PresetOut,
    Problem,
    RunOut,
    SeriesData,
    SeriesIndex,
    SweepOut,
    SweepRun,
    SweepState,
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
    ("get", "/v1/sweeps/{sweep_id}/progress"),
    ("get", "/v1/sweeps/{sweep_id}/runs"),
    ("post", "/v1/sweeps/{sweep_id}/cancel"),
    ("get", "/v1/sweeps/{sweep_id}/export"),
    ("get", "/v1/compare"),
    ("post", "/v1/advice"),
    ("get", "/v1/advice/{advice_id}"),
    ("post", "/v1/advice/{advice_id}/cancel"),
    ("get", "/v1/advice/{advice_id}/curves"),
    ("post", "/v1/runs/{run_id}/remedies/check"),
    ("get", "/v1/runs/{run_id}/remedies"),
]


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

    def sweep_state(self, sweep_id: str | uuid.UUID) -> SweepState:
        """The sweep's state alone: status, counts, fraction done, time left."""
        return SweepState.model_validate(self._json("GET", f"/v1/sweeps/{sweep_id}/progress"))

    def cancel_sweep(self, sweep_id: str | uuid.UUID) -> Sweep:
        """Cancel the sweep's queued runs and stop its running ones; idempotent."""
        doc = self._json("POST", f"/v1/sweeps/{sweep_id}/cancel")
        return Sweep(self, SweepOut.model_validate(doc))

    def sweep_runs(
        self,
        sweep_id: str | uuid.UUID,
        *,
        status: str | None = None,
        point: int | None = None,
    ) -> list[SweepRun]:
        """The sweep's runs in point order, then replication (every page), optionally only
        those in one ``status`` or of one ``point``."""
        found: list[SweepRun] = []
        cursor = None
        while True:
            params = _params(status=status, point=point, cursor=cursor, limit=200)
            page = self._json("GET", f"/v1/sweeps/{sweep_id}/runs", params=params)
            found += [SweepRun.model_validate(r) for r in page["items"]]
            cursor = page.get("next_cursor")
            if not cursor:
                return found

    def sweep_table(self, sweep_id: str | uuid.UUID, *, frame: bool | None = None) -> Any:
        """The summary as one table, a row per point and flow (``format=records``): a pandas
        DataFrame (each column's unit in ``df.attrs["units"]``) when pandas is installed
        (``frame=True`` requires it), else ``{columns, records}``."""
        table = self._json("GET", f"/v1/sweeps/{sweep_id}/summary", params={"format": "records"})
        return _table_frame(table, frame)

    # --- comparisons --------------------------------------------------------------------

    def compare(
        self, run_ids: Iterable[str | uuid.UUID], *, baseline: str | uuid.UUID | None = None
    ) -> dict[str, Any]:
        """The comparison of succeeded runs (schema ``RunComparison``), as a dict."""
        params = _params(runs=",".join(map(str, run_ids)), baseline=baseline)
        return self._json("GET", "/v1/compare", params=params)

    # --- advice -------------------------------------------------------------------------

    def advise(
        self,
        target: str | dict[str, Any],
        *,
        preset: str | None = None,
        scenario: dict[str, Any] | None = None,
        scenario_id: str | uuid.UUID | None = None,
        run_id: str | uuid.UUID | None = None,
        levers: Iterable[str | dict[str, Any]] | None = None,
        budget: int | None = None,
        replications: int | None = None,
        seed: int | None = None,
        cache: str | None = None,
        **options: Any,
    ) -> Advice:
        """Ask what would make a scenario (one of ``preset``, ``scenario``, ``scenario_id``,
        ``run_id``) meet ``target``: ``"backup.completion_time<=200s"``,
        ``"*.goodput>=2Mbps"`` or ``{"flow", "metric", "value"}``. ``levers``: dotted paths (``"flows.backup.tcp.
        rcv_buf"``; moved together, priced, with values: ``"links.access1.rate+links.
        access2.rate=4500:T3"``) or ``{paths, cost, values, maximum}``; None: every lever
        that can matter. Returns at
        once; ``.wait()`` for the report."""
        body: dict[str, Any] = {"target": target, **options}
        for name, value in (
            ("preset", preset),
            ("scenario", scenario),
            ("scenario_id", scenario_id),
            ("run_id", run_id),
            ("budget", budget),
            ("replications", replications),
            ("seed", seed),
            ("cache", cache),
        ):
            if value is not None:
                body[name] = str(value) if isinstance(value, uuid.UUID) else value
        if levers is not None:
            body["levers"] = list(levers)
        return Advice(self, AdviceOut.model_validate(self._json("POST", "/v1/advice", json=body)))

    def get_advice(self, advice_id: str | uuid.UUID) -> Advice:
        return Advice(self, AdviceOut.model_validate(self._json("GET", f"/v1/advice/{advice_id}")))

    def cancel_advice(self, advice_id: str | uuid.UUID) -> Advice:
        """Cancel the advice's search and its runs; idempotent."""
        doc = self._json("POST", f"/v1/advice/{advice_id}/cancel")
        return Advice(self, AdviceOut.model_validate(doc))

    def advice_curves(self, advice_id: str | uuid.UUID, *, csv: bool = False) -> Any:
        """The advice's curves: the document (dict), or the table as CSV text."""
        if csv:
            return self.request("GET", f"/v1/advice/{advice_id}/curves?format=csv").text
        return self._json("GET", f"/v1/advice/{advice_id}/curves")

    def check_remedies(self, run_id: str | uuid.UUID, *, replications: int | None = None) -> Advice:
        """Simulate a succeeded run's remedies (the check already made, if there is one)."""
        body = {"replications": replications} if replications is not None else None
        doc = self._json("POST", f"/v1/runs/{run_id}/remedies/check", json=body)
        return Advice(self, AdviceOut.model_validate(doc))

    def remedies(self, run_id: str | uuid.UUID) -> dict[str, Any]:
        """A run's remedies, predicted and (once checked) measured (schema ``RunRemedies``)."""
        return self._json("GET", f"/v1/runs/{run_id}/remedies")


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


def _pandas(frame: bool | None) -> Any:
    """pandas when a frame is wanted, else None: with ``frame=None`` when it is installed,
    with ``True`` always (ImportError without it), with ``False`` never."""
    if frame is False:
        return None
    try:
        import pandas as pd
    except ImportError:
        if frame:
            raise
        return None
    return pd


def _table_frame(table: dict[str, Any], frame: bool | None) -> Any:
    if (pd := _pandas(frame)) is None:
        return table
    names = [c["name"] for c in table["columns"]]
    df = pd.DataFrame.from_records(table["records"], columns=names)
    df.attrs["units"] = {c["name"]: c["unit"] for c in table["columns"] if c["unit"]}
    return df


def _as_frame(data: SeriesData, frame: bool | None) -> Any:
    if (pd := _pandas(frame)) is None:
        return {"t": data.t, "v": data.v}
    df = pd.DataFrame({"t": data.t, "v": data.v})
    df.attrs.update(key=data.key, unit=data.unit)
    return df
