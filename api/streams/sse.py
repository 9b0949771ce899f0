"""Server-Sent Events: the wire format, the per-process bound on open streams, the end of
every stream when the server stops, and the loop that turns looks at a resource into events.

A stream is a sequence of events whose integer ids grow strictly and are a function of the
state they report (``api.streams.service``), so a client that reconnects with
``Last-Event-ID: n`` is sent what came after ``n`` and nothing it already has. The looks
after the first come from the process's change feed (``api.streams.feed``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

import orjson
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from api.exceptions import ServiceUnavailable, Unprocessable, field_error

log = logging.getLogger("tcpfr.api.streams")
MEDIA_TYPE = "text/event-stream"
RETRY_MS = 2000  # what the client's EventSource waits before reconnecting


@dataclass(frozen=True, slots=True)
class Event:
    id: int
    event: str  # progress, status or done
    data: dict[str, Any]

    def encode(self) -> bytes:
        body = orjson.dumps(self.data, option=orjson.OPT_NON_STR_KEYS)
        return b"id: %d\nevent: %s\ndata: %s\n\n" % (self.id, self.event.encode(), body)


#: What a look at a resource finds: its events, and whether it has finished.
Found = tuple[list[Event], bool]
#: The next look, or None when none came within the timeout (seconds) given.
NextLook = Callable[[float], Awaitable[Found | None]]


class StreamSlots:
    """At most ``limit`` streams open in this process; past it a 503 with Retry-After."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open = 0

    def take(self) -> None:
        if self.open >= self.limit:
            raise TooManyStreams(
                f"this API process already serves {self.limit} event streams "
                "(TCPFR_MAX_STREAMS); retry, or poll the resource instead",
                retry_after=5,
            )
        self.open += 1

    def give_back(self) -> None:
        self.open -= 1


class TooManyStreams(ServiceUnavailable):
    def __init__(self, detail: str, *, retry_after: int) -> None:
        super().__init__(detail, retry_after=retry_after)
        self.headers = {"Retry-After": str(retry_after)}  # type: ignore[misc]


class Stopping:
    """Set when the server is asked to stop (SIGTERM, SIGINT). uvicorn waits for open
    responses before it runs the lifespan's shutdown, so a stream would otherwise stay open
    until the graceful-shutdown timeout; this wraps the server's own signal handlers (which
    still run) so streams can end at once."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self._previous: dict[int, Any] = {}

    @contextlib.contextmanager
    def watching_signals(self) -> Iterator[None]:
        loop = asyncio.get_running_loop()

        def handler(sig: int, frame: FrameType | None) -> None:
            loop.call_soon_threadsafe(self.event.set)
            previous = self._previous.get(sig)
            if callable(previous):
                previous(sig, frame)

        try:
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, handler)
        except ValueError:  # not the main thread (an in-process test client): nothing to wrap
            pass
        try:
            yield
        finally:
            self.event.set()
            for signum, previous in self._previous.items():
                with contextlib.suppress(ValueError, TypeError):
                    if signal.getsignal(signum) is handler:
                        signal.signal(signum, previous)


def last_event_id(header: str | None, query: int | None) -> int:
    """The id the client has seen: the ``Last-Event-ID`` header (sent by EventSource on a
    reconnection) or the ``last_event_id`` query parameter; -1 for none."""
    if header is not None and header.strip():
        try:
            value = int(header.strip())
        except ValueError:
            raise Unprocessable(
                "Last-Event-ID is not an event id of this stream",
                errors=[field_error(["header", "Last-Event-ID"], "must be an integer")],
            ) from None
        if value < -1:
            raise Unprocessable(
                "Last-Event-ID is not an event id of this stream",
                errors=[field_error(["header", "Last-Event-ID"], "must be >= -1")],
            )
        return value
    return -1 if query is None else query


async def events(
    first: Found,
    next_look: NextLook,
    *,
    after: int,
    heartbeat: float,
    stopping: asyncio.Event,
) -> AsyncIterator[bytes]:
    """Send what is new in each look; a comment when nothing was sent for ``heartbeat`` s;
    return once the resource has finished (after its ``done``) or the server stops."""
    loop = asyncio.get_running_loop()
    yield b"retry: %d\n: tcpfr event stream\n\n" % RETRY_MS
    quiet_since = loop.time()
    found: Found | None = first
    stop = asyncio.ensure_future(stopping.wait())
    try:
        while True:
            if found is not None:
                batch, finished = found
                fresh = [e for e in batch if e.id > after]
                if fresh:
                    after = fresh[-1].id
                    quiet_since = loop.time()
                    yield b"".join(e.encode() for e in fresh)
                if finished:
                    return
            if loop.time() - quiet_since >= heartbeat:
                quiet_since = loop.time()
                yield b": heartbeat\n\n"
            wait = heartbeat - (loop.time() - quiet_since)
            look = asyncio.ensure_future(next_look(max(wait, 0.0)))
            await asyncio.wait({look, stop}, return_when=asyncio.FIRST_COMPLETED)
            if stopping.is_set():
                look.cancel()
                return
            found = look.result()
    finally:
        stop.cancel()


class EventStreamResponse(StreamingResponse):
    """A stream that gives its slot back however it ends (finished, client gone, server
    stopping), even when the body was never started."""

    def __init__(self, content: AsyncIterator[bytes], slots: StreamSlots) -> None:
        super().__init__(
            content,
            media_type=MEDIA_TYPE,
            headers={
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",  # nginx: pass each event through at once
            },
        )
        self._slots = slots

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._slots.give_back()
            aclose = getattr(self.body_iterator, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()
