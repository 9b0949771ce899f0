"""The request's way to the database: ``Db`` (asyncio sessions, PostgreSQL) and ``ThreadDb``
(SQLite, one thread hop per call), and which of the two a deployment gets (``open_db``).

A request path must never need a free thread to finish: FastAPI runs a plain ``def``
dependency in its thread pool, and a path that waits on that pool while holding a
connection can deadlock the pool against the connections under load. ``Db`` takes no
thread; ``ThreadDb`` takes one only while it holds a token of its own limiter, sized to its
connection pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

import anyio
import psycopg
from sqlalchemy import Dialect, TextualSelect, make_url
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session, sessionmaker

from settings import Settings
from store.db import (
    make_async_engine,
    make_async_sessionmaker,
    make_engine,
    make_sessionmaker,
    postgres_connect_args,
)

P = ParamSpec("P")
R = TypeVar("R")


class Db:
    """``await db(fn, *args, **kwargs)`` opens a session, runs ``fn(session, *args, **kwargs)``
    (the same repository and service code the workers run with sync sessions) and closes the
    session: a connection is held only while that code runs, never while the request waits
    for anything else.

    On PostgreSQL the code runs on psycopg's asyncio connection through SQLAlchemy's
    ``run_sync`` (a greenlet on the event loop, not a thread)."""

    __slots__ = ("_sessions", "_own")

    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], own: OwnConnection | None = None
    ) -> None:
        self._sessions = sessions
        self._own = own

    async def __call__(
        self, fn: Callable[Concatenate[Session, P], R], /, *args: P.args, **kwargs: P.kwargs
    ) -> R:
        async with self._sessions() as session:
            return await session.run_sync(fn, *args, **kwargs)

    async def read(
        self, fn: Callable[Concatenate[Session, P], R], /, *args: P.args, **kwargs: P.kwargs
    ) -> R:
        """As a call, for code that only reads: on an autocommit connection, so a read is
        its statements' round trips alone, without a BEGIN before and a ROLLBACK after."""
        async with self._sessions() as session:
            await session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})
            return await session.run_sync(fn, *args, **kwargs)

    async def first(
        self, statement: TextualSelect, params: dict[str, Any]
    ) -> tuple[Any, ...] | None:
        """The first row of one short statement that only reads, on the process's own
        connection when it has one (a polled page's state: OwnConnection); None when there
        is no row, or the statement could not run now: the caller then reads the usual
        way, and meets the database's errors there."""
        if self._own is not None:
            return await self._own.first(statement, params)
        try:
            row = await self.read(lambda session: session.execute(statement, params).first())
        except sa_exc.SQLAlchemyError:
            return None
        return None if row is None else tuple(row)

    async def close(self) -> None:
        if self._own is not None:
            await self._own.close()


class OwnConnection:
    """A PostgreSQL connection of the API process's own, for the one-row reads of its hot
    path (whether a polled sweep is still running, each poll of every dashboard panel):
    psycopg's asyncio connection used directly, autocommit, its statements prepared. Through
    a pooled session such a read cost the API 0.46 ms of CPU; here 0.08 ms (in-process,
    2,000 reads each).

    One statement at a time (a lock): each is a few tens of microseconds of the server's.
    A failure or a read slower than `timeout` closes it and answers None (the caller then
    reads through the pool, with its errors and its 503); it is opened again at the next
    read, but not within a second of a failure, so a database that is down costs a poll
    one attempt a second, not one each. A read that waits longer than `timeout` for the
    ones before it answers None too, and closes nothing. Not for a transaction-pooling
    PgBouncer (its statements are prepared on the connection)."""

    RETRY_AFTER = 1.0

    def __init__(
        self, conninfo: str, connect_args: dict[str, Any], dialect: Dialect, *, timeout: float
    ) -> None:
        self._conninfo = conninfo
        self._args = connect_args
        self._dialect = dialect
        self._timeout = timeout
        self._lock = asyncio.Lock()
        self._conn: psycopg.AsyncConnection[tuple[Any, ...]] | None = None
        self._sql: dict[TextualSelect, str] = {}
        self._retry_at = 0.0
        self._closed = False

    async def first(
        self, statement: TextualSelect, params: dict[str, Any]
    ) -> tuple[Any, ...] | None:
        if self._closed or time.monotonic() < self._retry_at:
            return None
        sql = self._sql.get(statement)
        if sql is None:
            sql = self._sql[statement] = str(statement.compile(dialect=self._dialect))
        try:
            async with asyncio.timeout(self._timeout):
                await self._lock.acquire()
        except TimeoutError:
            return None  # the reads before it are slow: this one goes through the pool
        try:
            if self._closed:
                return None
            async with asyncio.timeout(self._timeout):
                if self._conn is None or self._conn.closed:
                    self._conn = await psycopg.AsyncConnection.connect(
                        self._conninfo, autocommit=True, **self._args
                    )
                cursor = await self._conn.execute(sql, params, prepare=True)
                return await cursor.fetchone()
        except (psycopg.Error, OSError, TimeoutError):
            self._retry_at = time.monotonic() + self.RETRY_AFTER
            await self._drop()
            return None
        finally:
            self._lock.release()

    async def close(self) -> None:
        """At the process's end: closed once the read under way is done, never reopened."""
        self._closed = True
        async with self._lock:
            await self._drop()

    async def _drop(self) -> None:
        """Close the connection (the lock held): the next read opens another."""
        conn, self._conn = self._conn, None
        if conn is not None and not conn.closed:
            with contextlib.suppress(psycopg.Error, OSError):
                await conn.close()


class ThreadDb(Db):
    """``Db`` for SQLite: the whole call, session opened and closed, in one thread of a
    limiter holding as many tokens as the pool holds connections, so a thread never waits
    for a connection and a request waits for a token without holding anything (a wait
    longer than the pool timeout is a 503). One thread hop per call: aiosqlite hops to its
    connection's thread and back for every step of a statement (checkout, begin, execute,
    fetch, commit); per request that measured 1.3-3x slower than this (in-process medians
    of alternating rounds, list, history, series index, scenario)."""

    __slots__ = ("_sync", "_limiter", "_timeout")

    def __init__(self, sessions: sessionmaker[Session], *, connections: int, timeout: float):
        self._sync = sessions
        self._own = None
        self._limiter = anyio.CapacityLimiter(connections)
        self._timeout = timeout

    async def __call__(
        self, fn: Callable[Concatenate[Session, P], R], /, *args: P.args, **kwargs: P.kwargs
    ) -> R:
        def call() -> R:
            with self._sync() as session:
                return fn(session, *args, **kwargs)

        try:
            with anyio.fail_after(self._timeout):
                await self._limiter.acquire()
        except TimeoutError as exc:
            raise sa_exc.TimeoutError("no database connection free in time") from exc
        try:
            return await anyio.to_thread.run_sync(call, limiter=_UNLIMITED)
        finally:
            self._limiter.release()

    async def read(
        self, fn: Callable[Concatenate[Session, P], R], /, *args: P.args, **kwargs: P.kwargs
    ) -> R:
        # pysqlite opens no transaction for a SELECT: a read is a call.
        return await self(fn, *args, **kwargs)


#: ThreadDb's own limiter bounds its threads; anyio's default (40) must not bound them again.
_UNLIMITED = anyio.CapacityLimiter(10_000)


def open_db(settings: Settings) -> tuple[Db, Engine | AsyncEngine]:
    """The API process's ``Db`` for this deployment, with the engine to dispose at the end."""
    if settings.is_sqlite:
        engine = make_engine(
            settings,
            pool_size=settings.db_pool_size,
            max_overflow=0,
            pool_timeout=settings.db_pool_timeout,
        )
        db = ThreadDb(
            make_sessionmaker(engine),
            connections=settings.db_pool_size,
            timeout=settings.db_pool_timeout,
        )
        return db, engine
    async_engine = make_async_engine(settings)
    own = OwnConnection(
        make_url(settings.sqlalchemy_url)
        .set(drivername="postgresql")
        .render_as_string(hide_password=False),
        postgres_connect_args(settings),
        async_engine.dialect,
        timeout=settings.db_pool_timeout,
    )
    return Db(make_async_sessionmaker(async_engine), own), async_engine
