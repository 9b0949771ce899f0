"""Refusing past capacity: when this process's event loop runs behind, so that a request
arriving now would wait longer than ``max_queue_wait`` seconds before any of its code runs,
new requests get a 503 with ``Retry-After`` at once instead of joining the queue.

How far behind the loop runs is measured, not guessed: a timer due every ``INTERVAL``
seconds records how late it fires. A request waits for the loop as the timer does (the
server hands whole requests to the loop as they arrive), so the timer's lateness is the
wait a new request is in for. Only lateness that lasts counts, the smaller of the last two
readings: one long step (a first import, a collection) is not a queue, and refusing what
arrives just after it would not shorten anything. Liveness (``/healthz``) is always
answered: a busy process is not a dead one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from api.exception_handlers import PROBLEM_BASE
from api.exceptions import ServiceUnavailable
from api.responses import ProblemResponse

INTERVAL = 0.05
RETRY_AFTER_S = 1
ALWAYS_ANSWERED = frozenset({"/healthz"})


class LoopLag:
    """How late this process's event loop runs, in seconds, as last measured."""

    def __init__(self) -> None:
        self.seconds = 0.0

    async def watch(self) -> None:
        loop = asyncio.get_running_loop()
        last = 0.0
        while True:
            due = loop.time() + INTERVAL
            await asyncio.sleep(INTERVAL)
            late = max(0.0, loop.time() - due)
            self.seconds, last = min(late, last), late

    @contextlib.asynccontextmanager
    async def watching(self) -> AsyncIterator[LoopLag]:
        task = asyncio.create_task(self.watch())
        try:
            yield self
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


class ShedWhenBehind:
    """A pure ASGI middleware, outermost: the 503 costs no routing and no database."""

    def __init__(self, app: ASGIApp, *, owner: Any, max_wait: float) -> None:
        self.app = app
        self.owner = owner  # the FastAPI app, whose state holds the LoopLag once started
        self.max_wait = max_wait

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.max_wait > 0:
            lag: LoopLag | None = getattr(self.owner.state, "loop_lag", None)
            if (
                lag is not None
                and lag.seconds > self.max_wait
                and scope["path"] not in ALWAYS_ANSWERED
            ):
                await self._refuse(scope, receive, send, lag.seconds)
                return
        await self.app(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, behind: float) -> None:
        body = {
            "type": PROBLEM_BASE + ServiceUnavailable.slug,
            "title": ServiceUnavailable.title,
            "status": ServiceUnavailable.status,
            "detail": f"this API process is {behind:.1f} s behind its requests, past "
            f"TCPFR_MAX_QUEUE_WAIT ({self.max_wait:g} s): retry after {RETRY_AFTER_S} s",
            "instance": scope.get("path", ""),
        }
        headers = {"Retry-After": str(RETRY_AFTER_S)}
        await ProblemResponse(body, status_code=503, headers=headers)(scope, receive, send)
