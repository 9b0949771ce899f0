"""A pure ASGI middleware that refuses request bodies over ``max_body_bytes`` with a 413.

A declared ``Content-Length`` over the limit is refused before a byte is read. A body sent
without one (chunked) or with a false one is counted as it streams in, and refused as soon
as the count passes the limit: the limit holds however the client frames the body. The
body, at most the limit, is read before the app runs, so the 413 is whole problem+json
however far the app would have got; every JSON endpoint reads the whole body anyway.
"""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.exception_handlers import PROBLEM_BASE
from api.exceptions import PayloadTooLarge
from api.responses import ProblemResponse


class BodyLimit:
    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._refuse(scope, receive, send, f"declares {declared:,} bytes")
            return
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break  # the client went away: let the app see it
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                await self._refuse(scope, receive, send, f"sent more than {self.max_bytes:,}")
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, what: str) -> None:
        body: dict[str, Any] = {
            "type": PROBLEM_BASE + PayloadTooLarge.slug,
            "title": PayloadTooLarge.title,
            "status": PayloadTooLarge.status,
            "detail": f"the request body {what} bytes; the limit is {self.max_bytes:,}",
            "instance": scope.get("path", ""),
            "max_body_bytes": self.max_bytes,
        }
        # The rest of the body is never read: the connection cannot carry another request.
        headers = {"Connection": "close"}
        await ProblemResponse(body, status_code=413, headers=headers)(scope, receive, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the server rejects a malformed one before we see it
    return None
