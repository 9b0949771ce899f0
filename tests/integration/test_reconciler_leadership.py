"""One reconciler per database (issue 31's "one home" for the API's background work): every
API process runs the reconciler's loop, and on PostgreSQL the one holding an advisory lock
reconciles while the others pass their turns. When the holder goes, the next to try takes
over; a holder that lost its connection passes instead of reconciling beside the new one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import Engine

from api.reconciler import LEADER_LOCK, Leadership
from settings import Settings
from store.db import make_engine

pytestmark = pytest.mark.integration


@pytest.fixture
def engines(pg_database: str) -> Iterator[tuple[Engine, Engine, str]]:
    settings = Settings(_env_file=None, database_url=pg_database)
    a = make_engine(settings, pool_size=1, max_overflow=1)
    b = make_engine(settings, pool_size=1, max_overflow=1)
    yield a, b, settings.sqlalchemy_url.replace("postgresql+psycopg://", "postgresql://")
    a.dispose()
    b.dispose()


def _holders(url: str) -> list[int]:
    """The backends holding the reconciler's lock in this database, from pg_locks (other
    databases' API processes, the other tests' stacks, hold theirs)."""
    hi, lo = divmod(LEADER_LOCK % (1 << 64), 1 << 32)
    with psycopg.connect(url, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND classid::bigint = %s AND objid::bigint = %s AND objsubid = 1",
            (hi, lo),
        ).fetchall()
    return [r[0] for r in rows]


def test_one_process_reconciles_and_the_next_takes_over(
    engines: tuple[Engine, Engine, str],
) -> None:
    a_engine, b_engine, url = engines
    a, b = Leadership(a_engine), Leadership(b_engine)
    assert a.held() and not b.held()
    assert a.held() and not b.held()  # kept turn after turn, never taken twice
    holder = _holders(url)
    assert holder == [a._conn.connection.dbapi_connection.info.backend_pid]  # type: ignore[union-attr]
    assert b._conn is None  # the one that passes holds no connection between turns

    # The holder's connection ends (its host went, an administrator, a restart).
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (holder[0],))
    assert not a.held()  # lost: this turn passed, not a second reconciler
    assert b.held()  # the next to try takes over
    assert not a.held()
    assert _holders(url) == [b._conn.connection.dbapi_connection.info.backend_pid]  # type: ignore[union-attr]

    b.release()  # its process ends
    assert _holders(url) == []
    assert a.held()


def test_on_sqlite_the_one_process_reconciles(tmp_path: Path) -> None:
    engine = make_engine(Settings(_env_file=None, data_dir=tmp_path))
    try:
        assert Leadership(engine).held() and Leadership(engine).held()
    finally:
        engine.dispose()
