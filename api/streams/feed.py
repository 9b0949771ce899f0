"""One change feed per API process: what every open event stream reads from the database,
read once per poll for all of them, on a connection of the feed's own.

A stream subscribes to its resource (a run or a sweep, of a tenant). Every
``stream_poll_interval`` seconds the feed looks at each resource that some stream watches,
all in one session on its own engine (one connection, one thread), and hands each look's
result to that resource's streams. A hundred streams cost one short session per poll, not
a hundred, whether they watch one run or a hundred, and never a connection or a thread of
the request path: open streams do not slow other requests down.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Hashable
from dataclasses import dataclass, field

import anyio
from sqlalchemy.orm import Session, sessionmaker

from api.streams.sse import Found

log = logging.getLogger("tcpfr.api.streams")

#: A look at one resource, in the feed's session.
Look = Callable[[Session], Found]


class Subscription:
    """A stream's view of the feed: the latest look at its resource, as it comes."""

    def __init__(self) -> None:
        self._latest: Found | BaseException | None = None
        self._ready = asyncio.Event()

    def deliver(self, found: Found | BaseException) -> None:
        self._latest = found
        self._ready.set()

    async def next(self, timeout: float) -> Found | None:
        """The look made since the last call, or None when none came within `timeout`; a
        look that failed raises its error here."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), timeout)
        if not self._ready.is_set():
            return None
        self._ready.clear()
        found, self._latest = self._latest, None
        if isinstance(found, BaseException):
            raise found
        return found


@dataclass
class _Watched:
    look: Look
    subscribers: set[Subscription] = field(default_factory=set)


class ChangeFeed:
    def __init__(self, sessions: sessionmaker[Session], *, poll: float) -> None:
        self._sessions = sessions
        self._poll = poll
        self._watched: dict[Hashable, _Watched] = {}
        self._thread = anyio.CapacityLimiter(1)  # one pass at a time, in one thread

    @contextlib.asynccontextmanager
    async def subscribe(self, key: Hashable, look: Look) -> AsyncIterator[Subscription]:
        """Watch the resource `key` names (its looks made by `look`) while in the block."""
        watched = self._watched.setdefault(key, _Watched(look))
        subscription = Subscription()
        watched.subscribers.add(subscription)
        try:
            yield subscription
        finally:
            watched.subscribers.discard(subscription)
            if not watched.subscribers and self._watched.get(key) is watched:
                del self._watched[key]

    async def run(self) -> None:
        """Poll while the process serves: one pass per interval whenever a stream is open."""
        while True:
            await asyncio.sleep(self._poll)
            if not self._watched:
                continue
            watched = dict(self._watched)
            try:
                found = await anyio.to_thread.run_sync(
                    self._look_all, watched, limiter=self._thread
                )
            except Exception as exc:  # the database away: every stream hears it
                log.warning("change feed: pass failed (%s)", type(exc).__name__)
                found = dict.fromkeys(watched, exc)
            for key, result in found.items():
                for subscription in list(watched[key].subscribers):
                    subscription.deliver(result)

    def _look_all(self, watched: dict[Hashable, _Watched]) -> dict[Hashable, Found | BaseException]:
        found: dict[Hashable, Found | BaseException] = {}
        with self._sessions() as session:
            for key, entry in watched.items():
                try:
                    found[key] = entry.look(session)
                except Exception as exc:  # this resource's own failure (deleted, say)
                    session.rollback()
                    found[key] = exc
        return found
