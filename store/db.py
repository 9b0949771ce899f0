"""Engines and sessions. One engine per process, built from the settings."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import Session, sessionmaker

from settings import Settings


def _json_dumps(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS).decode()


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    # WAL lets the API read while a worker writes; several workers queue on the lock.
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def _engine_options(settings: Settings, kwargs: dict[str, Any]) -> dict[str, Any]:
    options: dict[str, Any] = {"json_serializer": _json_dumps, "json_deserializer": orjson.loads}
    if settings.is_sqlite:
        settings.ensure_dirs()
        options["connect_args"] = {"timeout": 30, "check_same_thread": False}
    else:
        # A restarted server leaves dead connections in the pool: ping before use, reconnect.
        options["pool_pre_ping"] = True
        options["connect_args"] = postgres_connect_args(settings)
        options["pool_size"] = 5
        options["max_overflow"] = 10
    options.update(kwargs)
    return options


def postgres_connect_args(settings: Settings) -> dict[str, Any]:
    """What every connection to PostgreSQL is opened with (libpq's parameters).

    An unreachable host answers nothing at all: give up in seconds, not minutes, so a
    request gets its 503 and a worker its retry. A machine that vanishes after connecting
    answers nothing either: both ends probe a silent connection (libpq's keepalives here,
    the server's for its session) and drop it within ~2x db_keepalive."""
    idle, every = round(settings.db_keepalive), max(1, round(settings.db_keepalive) // 3)
    return {
        "connect_timeout": 5,
        "keepalives": 1,
        "keepalives_idle": idle,
        "keepalives_interval": every,
        "keepalives_count": 3,
        "options": f"-c tcp_keepalives_idle={idle} -c tcp_keepalives_interval={every} "
        "-c tcp_keepalives_count=3",
    }


def _instrument(engine: Engine) -> None:
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    elif engine.dialect.driver in ("psycopg", "psycopg_async"):
        event.listen(engine, "before_cursor_execute", _binary_results)


def make_engine(settings: Settings, **kwargs: Any) -> Engine:
    """A sync engine (workers, the reconciler, migrations, CLIs); SQLite gets WAL, a busy
    timeout and foreign keys; PostgreSQL ends its sessions that sit idle in a transaction
    (`db_idle_in_transaction_timeout`: their machine is gone, and so are their locks)."""
    options = _engine_options(settings, kwargs)
    if not settings.is_sqlite:
        ms = round(settings.db_idle_in_transaction_timeout * 1000)
        args = options["connect_args"]
        args["options"] += f" -c idle_in_transaction_session_timeout={ms}"
    engine = create_engine(settings.sqlalchemy_url, **options)
    _instrument(engine)
    return engine


def make_async_engine(settings: Settings, **kwargs: Any) -> AsyncEngine:
    """The API's engine on PostgreSQL: psycopg's asyncio mode (SQLAlchemy picks it for
    ``postgresql+psycopg`` in an async engine), so no request holds a thread while it waits
    for the database, and a bounded pool whose wait ends in a TimeoutError (a 503), never
    in a thread pool deadlocked against the connection pool. (SQLite: ``api.db.ThreadDb``.)"""
    options = _engine_options(settings, kwargs)
    options["pool_size"] = settings.db_pool_size
    options["max_overflow"] = 0
    options["pool_timeout"] = settings.db_pool_timeout
    # No ping before each use: it is a round trip on every request, to spare the first
    # request after a database restart its 503. That request's error invalidates the whole
    # pool (SQLAlchemy does so on a disconnect), so the next one reconnects.
    options["pool_pre_ping"] = False
    options.update(kwargs)
    engine = create_async_engine(settings.sqlalchemy_url, **options)
    _instrument(engine.sync_engine)
    return engine


#: Execution option: fetch this statement's results in Postgres' binary format. bytea in
#: the text format travels hex-encoded; for a series' arrays binary is several times faster.
BINARY_RESULTS = "tcpfr_binary_results"


def _binary_results(
    _conn: Any, cursor: Any, _stmt: str, _params: Any, context: Any, _many: bool
) -> None:
    if context is not None and context.execution_options.get(BINARY_RESULTS):
        from psycopg.pq import Format

        # Under the async engine the DBAPI cursor is SQLAlchemy's adapter around psycopg's.
        getattr(cursor, "_cursor", cursor).format = Format.BINARY


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def make_async_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session whose transaction commits on success and rolls back on error."""
    with factory() as session, session.begin():
        yield session


def wait_for_locks(session: Session, seconds: float) -> None:
    """Until the transaction ends, a statement waiting longer than `seconds` for a row lock
    fails (`lock_timed_out`) instead of waiting on. PostgreSQL only: SQLite has one writer
    at a time and its own busy timeout."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text(f"SET LOCAL lock_timeout = {round(seconds * 1000)}"))


def lock_timed_out(exc: BaseException) -> bool:
    """A statement gave up waiting for a row lock (`wait_for_locks`)."""
    return getattr(getattr(exc, "orig", None), "sqlstate", None) == "55P03"


def database_unavailable(exc: BaseException) -> bool:
    """The database is away or refusing work for now (restart, network, lock, full pool),
    as opposed to a statement that is wrong: worth a retry, a 503, not a 500."""
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return True
    # OperationalError: connection refused or dropped, admin shutdown, "database is locked";
    # InterfaceError: a connection already closed; TimeoutError: no pooled connection free.
    if lock_timed_out(exc):
        return False  # the database answered: a row is held, by whoever holds it
    return isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError | sa_exc.TimeoutError)
