"""The migrations are the schema, on SQLite and on Postgres: upgrade, check, downgrade."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from servicekit import PG_URL, ROOT, _pg_admin, _with_db, unavailable


def _alembic(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "alembic", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "BROKER_URL")}
    env.update(extra)
    return env


def _round_trip(env: dict[str, str]) -> None:
    _alembic(env, "upgrade", "head")
    assert "No new upgrade operations detected" in _alembic(env, "check")
    _alembic(env, "downgrade", "base")
    _alembic(env, "upgrade", "head")


def test_migrations_on_sqlite(tmp_path: Path) -> None:
    _round_trip(_env(TCPFR_DATA_DIR=str(tmp_path)))


def test_migrations_on_postgres() -> None:
    try:
        admin = _pg_admin()
    except Exception as exc:
        unavailable(f"Postgres ({type(exc).__name__})")
    name = f"tcpfr_test_{secrets.token_hex(4)}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        _round_trip(_env(DATABASE_URL=_with_db(PG_URL, name)))
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def test_revision_files_are_date_prefixed() -> None:
    files = sorted(p.name for p in (ROOT / "migrations" / "versions").glob("*.py"))
    assert files and all(f[:10].count("-") == 2 and f[:4].isdigit() for f in files), files


pytestmark = pytest.mark.integration
