"""The request's way to the database: ``Db`` (asyncio sessions, PostgreSQL) and ``ThreadDb``
(SQLite, one thread hop per call), and which of the two a deployment gets (``open_db``).

A request path must never need a free thread to finish: FastAPI runs a plain ``def``
dependency in its thread pool, and a path that waits on that pool while holding a
connection can deadlock the pool against the connections under load. ``Db`` takes no
thread; ``ThreadDb`` takes one only while it holds a token of its own limiter, sized to its
connection pool.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

import anyio
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session, sessionmaker

from settings import Settings
from store.db import make_async_engine, make_async_sessionmaker, make_engine, make_sessionmaker

P = ParamSpec("P")
R = TypeVar("R")


class Db:
    """``await db(fn, *args, **kwargs)`` opens a session, runs ``fn(session, *args, **kwargs)``
    (the same repository and service code the workers run with sync sessions) and closes the
    session: a connection is held only while that code runs, never while the request waits
    for anything else.

    On PostgreSQL the code runs on psycopg's asyncio connection through SQLAlchemy's
    ``run_sync`` (a greenlet on the event loop, not a thread)."""

    __slots__ = ("_sessions",)

    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

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
    return Db(make_async_sessionmaker(async_engine)), async_engine
