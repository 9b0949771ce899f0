"""Settings: one pydantic-settings object read from the environment.

Defaults are the embedded mode (a SQLite file and a file-system broker under
``TCPFR_DATA_DIR``); ``DATABASE_URL`` and ``BROKER_URL`` switch to Postgres and Redis.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import AliasChoices, Field, field_validator, model_validator
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
    task_soft_time_limit: float = 1800.0
    task_time_limit: float | None = None  # default: soft limit + 60 s
    heartbeat_interval: float = 2.0
    run_lease: float = 60.0  # a running run whose heartbeat is older is taken back
    queued_lease: float = 600.0  # a queued run not picked up by then is sent again
    max_attempts: int = 3
    reconcile_interval: float = 15.0  # 0 disables the reconciler in the API process

    series_max_points: int = 1000
    series_max_points_limit: int = 100_000
    page_size: int = 50
    log_level: str = "INFO"

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
        return self.broker_url or "filesystem://"

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
            }
        # A message must stay invisible for longer than a task may run, or Redis hands it
        # to a second worker while the first is still on it.
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
