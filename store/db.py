"""Engines and sessions. One engine per process, built from the settings."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
from sqlalchemy import Engine, create_engine, event
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session, sessionmaker

from store.config import Settings


def _json_dumps(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS).decode()


def make_engine(settings: Settings, **kwargs: Any) -> Engine:
    """An engine for the configured database; SQLite gets WAL, a busy timeout and foreign keys."""
    url = settings.sqlalchemy_url
    if settings.is_sqlite:
        settings.ensure_dirs()
        engine = create_engine(
            url,
            json_serializer=_json_dumps,
            json_deserializer=orjson.loads,
            connect_args={"timeout": 30, "check_same_thread": False},
            **kwargs,
        )

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            # WAL lets the API read while a worker writes; several workers queue on the lock.
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        return engine
    # A restarted server leaves dead connections in the pool: ping before use, reconnect.
    kwargs.setdefault("pool_pre_ping", True)
    # An unreachable host answers nothing at all: give up in seconds, not minutes, so a
    # request gets its 503 and a worker its retry.
    kwargs.setdefault("connect_args", {"connect_timeout": 5})
    kwargs.setdefault("pool_size", 5)
    kwargs.setdefault("max_overflow", 10)
    engine = create_engine(
        url, json_serializer=_json_dumps, json_deserializer=orjson.loads, **kwargs
    )
    if engine.dialect.driver == "psycopg":
        event.listen(engine, "before_cursor_execute", _binary_results)
    return engine


#: Execution option: fetch this statement's results in Postgres' binary format. bytea in
#: the text format travels hex-encoded; for a series' arrays binary is several times faster.
BINARY_RESULTS = "tcpfr_binary_results"


def _binary_results(
    _conn: Any, cursor: Any, _stmt: str, _params: Any, context: Any, _many: bool
) -> None:
    if context is not None and context.execution_options.get(BINARY_RESULTS):
        from psycopg.pq import Format

        cursor.format = Format.BINARY


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session whose transaction commits on success and rolls back on error."""
    with factory() as session, session.begin():
        yield session


def database_unavailable(exc: BaseException) -> bool:
    """The database is away or refusing work for now (restart, network, lock, full pool),
    as opposed to a statement that is wrong: worth a retry, a 503, not a 500."""
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return True
    # OperationalError: connection refused or dropped, admin shutdown, "database is locked";
    # InterfaceError: a connection already closed; TimeoutError: no pooled connection free.
    return isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError | sa_exc.TimeoutError)
