"""Settings: one pydantic-settings object read from the environment.

Defaults are the embedded mode (a SQLite file and a file-system broker under
``TCPFR_DATA_DIR``); ``DATABASE_URL`` and ``BROKER_URL`` switch to Postgres and Redis.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import AliasChoices, ByteSize, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def _env(name: str) -> Any:
    """Accept both ``NAME`` and ``TCPFR_NAME`` for the few settings people type by hand."""
    return Field(validation_alias=AliasChoices(name, f"TCPFR_{name}"))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TCPFR_", extra="ignore", populate_by_name=True)

    data_dir: Path = Path(".tcpfr")
    database_url: Annotated[str | None, _env("DATABASE_URL")] = None
    broker_url: Annotated[str | None, _env("BROKER_URL")] = None
    host: Annotated[str, _env("HOST")] = "127.0.0.1"
    port: Annotated[int, _env("PORT")] = 8000

    queue: str = "runs"
    worker_concurrency: int = Field(default_factory=lambda: max(1, os.cpu_count() or 1))
    # Simulations are batch work beside an interactive API on the same cores: a worker's
    # processes run this much nicer (os.nice), so a request never waits behind a run's
    # time slice; 0 leaves them as they start.
    worker_nice: int = Field(default=10, ge=0, le=19)
    task_soft_time_limit: float = 1800.0
    task_time_limit: float | None = None  # default: soft limit + 60 s
    heartbeat_interval: float = 2.0
    # A running run's series so far are stored at most this often (and never more than a
    # tenth of the run's time goes to it), so they can be charted while it runs; 0: never.
    series_snapshot_interval: float = Field(default=2.0, ge=0)
    run_lease: float = 60.0  # a running run whose heartbeat is older is taken back
    # A queued run sent this long ago and not taken while the broker's queue is empty lost
    # its message (broker restarted or flushed): it is sent again.
    queued_lease: float = 120.0
    max_attempts: int = 3  # the retry budget: starts of a run, and re-sends of a lost message
    # A workflow (advice, remedy check) unfinished, untouched this long and with no run
    # queued or running lost the message for its next step: the reconciler sends another.
    workflow_lease: float = Field(default=20.0, gt=0)
    reconcile_interval: float = 15.0  # 0 disables the reconciler in the API process
    persist_retry_for: float = 300.0  # a worker retries storing a result this long (DB away)

    # The API's database pool (async; the workers and the reconciler keep their own sync
    # engines). A request holds a connection only while it runs a query; one that waits
    # longer than db_pool_timeout for a free connection is a 503 with Retry-After.
    db_pool_size: int = Field(default=10, ge=1)
    db_pool_timeout: float = Field(default=10.0, gt=0)
    # Workers and the reconciler on PostgreSQL. A machine lost mid-transaction (power, a
    # pulled cable) sends nothing: its session would sit idle in its transaction, holding
    # its row locks, for the hours TCP takes to give up; the server ends such a session
    # after this many seconds. (None of our transactions waits on its client that long.)
    db_idle_in_transaction_timeout: float = Field(default=60.0, gt=0)
    # Seconds of silence before a connection probes its peer (then 3 probes, a third of it
    # apart): a database host gone without a word is noticed within twice this.
    db_keepalive: float = Field(default=30.0, ge=1)

    # Per-tenant limits (README, "Limits"). Requests, in the notation of the `limits`
    # library: "100/second;3000/minute" (every window must hold); empty: none, the embedded
    # default, where the one tenant is whoever sits at the laptop; compose sets one. Runs
    # queued or running at once, a sweep counting by its runs (0: no limit). Over: 429.
    rate_limit: str | None = None
    max_active_runs: int = Field(default=2000, ge=0)

    # The embedded broker polls its folder this often (seconds) for new messages.
    broker_polling_interval: float = Field(default=0.02, gt=0)

    # The API's server (api.serve, granian). Processes serving the port (each a Python event
    # loop; the default fills a 2-core machine beside its workers); a request's headers must
    # arrive within `header_timeout` s of the connection opening or the previous response
    # (so an idle keep-alive connection closes then too), its whole body within
    # `body_timeout` s (else a 408); at most `max_connections` connections per process
    # (more wait in the listen backlog, never past the process's file descriptors); a
    # request that finds its process's loop `max_queue_wait` s behind is refused with a 503
    # and Retry-After at once rather than queued (0: never).
    api_processes: int = Field(default_factory=lambda: min(2, os.cpu_count() or 1), ge=1)
    header_timeout: float = Field(default=10.0, gt=0, le=60)
    body_timeout: float = Field(default=30.0, gt=0)
    max_connections: int = Field(default=8192, ge=16)
    listen_backlog: int = Field(default=2048, ge=128)
    max_queue_wait: float = Field(default=1.0, ge=0)

    # Finished runs' documents kept in memory by each API process (api.cache), and an eighth
    # of it again for pages of the runs list; 0: none.
    response_cache_bytes: int = Field(default=64 * 1024 * 1024, ge=0)

    series_max_points: int = 1000
    series_max_points_limit: int = 100_000
    page_size: int = 50
    max_page_size: int = Field(default=500, ge=1)  # the largest `limit` a list may be asked for

    # What one request may cost (README, "Limits"). A run whose estimated simulated events
    # (engine.analysis, within a factor of 2 of real runs) exceed the budget is refused with
    # a 422 before anything is stored: 500M is ~20 min of one worker at ~400k events/s,
    # inside the default soft time limit, which stops whatever the estimate missed.
    max_events_per_run: int = Field(default=500_000_000, ge=1)
    # A worker's memory for one run: a run estimated over it is refused with a 422 (its
    # estimate, engine.analysis.memory, errs high), and a worker stops a run that grows past
    # it (an rlimit on the pool process: the run fails saying so). Bytes, or "1GiB".
    max_run_memory: ByteSize = Field(default=ByteSize(1 << 30), ge=128 << 20)
    max_body_bytes: int = Field(default=1_048_576, ge=1024)  # a larger request body is a 413

    # Server-Sent Events (/v1/runs/{id}/stream, /v1/sweeps/{id}/stream): one API process
    # holds at most `max_streams` (past it a 503 with Retry-After); a comment every
    # `stream_heartbeat` s keeps proxies from closing a quiet stream; every
    # `stream_poll_interval` s the process's change feed (api.streams.feed) looks at what
    # its open streams watch, in one session on a connection of its own.
    max_streams: int = Field(default=100, ge=0)
    stream_heartbeat: float = Field(default=15.0, gt=0)
    stream_poll_interval: float = Field(default=0.5, gt=0)
    log_level: str = "INFO"

    # Sweeps: the most runs (points x replications) one sweep may ask for, and the engine's
    # speed used to turn a dry run's estimated events into seconds (bench/engine_bench.py
    # measures ~400k events/s per process on the 2-core development machine).
    sweep_max_runs: int = Field(default=1000, ge=1)
    engine_events_per_second: float = Field(default=400_000.0, gt=0)
    # A run's cost beyond its events (engine setup, claim, load, store, hand-over), in
    # events, so it scales with the machine's measured speed (api/sweeps/speed.py;
    # bench/estimate_bench.py: about 25,000 events' worth at 70k-184k events/s).
    sweep_run_overhead_events: int = Field(default=25_000, ge=0)
    # Advice: the most runs one advice (or remedy check) may make (its request's `budget`,
    # 30 unless it says, may not exceed this).
    advice_max_runs: int = Field(default=200, ge=1)

    # API keys (``python -m api.keys``). Off by default so `make run` on a laptop needs no
    # key; the API says so loudly at start-up, and docker-compose.yml turns it on.
    auth: bool = False

    @field_validator("database_url")
    @classmethod
    def _psycopg_driver(cls, url: str | None) -> str | None:
        """``postgres://`` and ``postgresql://`` (as Heroku and compose write them) mean psycopg 3."""
        if url is None or not url.strip():
            return None
        for prefix in ("postgres://", "postgresql://"):
            if url.startswith(prefix):
                return "postgresql+psycopg://" + url[len(prefix) :]
        return url

    @field_validator("rate_limit")
    @classmethod
    def _rate_limit(cls, value: str | None) -> str | None:
        if value is None or not value.strip() or value.strip().lower() in ("none", "off"):
            return None
        from limits import parse_many

        try:
            parse_many(value)
        except ValueError as exc:
            raise ValueError(f"not a rate limit such as '100/second;3000/minute': {exc}") from exc
        return value.strip()

    @field_validator("broker_url")
    @classmethod
    def _blank_is_none(cls, url: str | None) -> str | None:
        return url if url and url.strip() else None

    @model_validator(mode="after")
    def _limits(self) -> Settings:
        if self.task_time_limit is None:
            self.task_time_limit = self.task_soft_time_limit + 60.0
        if self.task_time_limit <= self.task_soft_time_limit:
            raise ValueError("task_time_limit must exceed task_soft_time_limit")
        if self.run_lease <= 3 * self.heartbeat_interval:
            raise ValueError("run_lease must be more than three heartbeat intervals")
        if not 1 <= self.page_size <= self.max_page_size:
            raise ValueError("page_size must be between 1 and max_page_size")
        return self

    @property
    def sqlalchemy_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'tcpfr.sqlite3').resolve()}"

    @property
    def is_sqlite(self) -> bool:
        return self.sqlalchemy_url.startswith("sqlite")

    @property
    def broker_folder(self) -> Path:
        return (self.data_dir / "broker").resolve()

    @property
    def celery_broker_url(self) -> str:
        return self.broker_url or "tcpfr-filesystem://"  # messaging.filesystem

    @property
    def celery_transport_options(self) -> dict[str, Any]:
        if self.broker_url is None:
            folder = self.broker_folder
            return {
                "data_folder_in": str(folder / "queue"),
                "data_folder_out": str(folder / "queue"),
                "control_folder": str(folder / "control"),
                # Keep processed messages on the same file system so taking one is an
                # atomic rename: two workers can never both read it.
                "store_processed": True,
                "processed_folder": str(folder / "processed"),
                # kombu's default is a poll a second: half a second of latency on average
                # between a POST and a worker taking the run. A poll is one listdir.
                "polling_interval": self.broker_polling_interval,
            }
        # A message must stay invisible for longer than a task may run (the hard time
        # limit), plus time to store its result, or Redis hands it to a second worker while
        # the first is still on it. A dead worker's run does not wait for this: the
        # reconciler takes it back when its heartbeat is older than run_lease.
        assert self.task_time_limit is not None
        return {"visibility_timeout": int(self.task_time_limit + 300)}

    def ensure_dirs(self) -> None:
        """Create the embedded mode's folders (no-op for what a server holds)."""
        if self.is_sqlite or self.broker_url is None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.broker_url is None:
            for key in ("data_folder_in", "control_folder", "processed_folder"):
                Path(self.celery_transport_options[key]).mkdir(parents=True, exist_ok=True)


@lru_cache
def get_settings() -> Settings:
    return Settings()
