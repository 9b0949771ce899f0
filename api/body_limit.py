"""A pure ASGI middleware that refuses request bodies over ``max_body_bytes`` with a 413,
bodies that are not JSON (by their ``Content-Type``) with a 415, and bodies that have not
all arrived ``body_timeout`` seconds after the request's headers with a 408 (a client that
sends slowly or stops half-way holds no connection longer than that).

A declared ``Content-Length`` over the limit is refused before a byte is read. A body sent
without one (chunked) or with a false one is counted as it streams in, and refused as soon
as the count passes the limit: the limit holds however the client frames the body. The
body, at most the limit, is read before the app runs, so the 413 is whole problem+json
however far the app would have got; every JSON endpoint reads the whole body anyway.
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.exception_handlers import error_response
from api.exceptions import PayloadTooLarge, RequestTimeout, TcpfrError, UnsupportedMediaType


class BodyLimit:
    def __init__(self, app: ASGIApp, *, max_bytes: int, timeout: float) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._refuse(scope, receive, send, f"declares {declared:,}")
            return
        messages: list[Message] = []
        size = 0
        try:
            async with asyncio.timeout(self.timeout):
                while True:
                    message = await receive()
                    messages.append(message)
                    if message["type"] != "http.request":
                        break  # the client went away: let the app see it
                    size += len(message.get("body", b""))
                    if size > self.max_bytes:
                        what = f"sent more than {self.max_bytes:,}"
                        await self._refuse(scope, receive, send, what)
                        return
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            await self._too_slow(scope, receive, send, size)
            return
        if size and not _is_json(scope):
            await self._unsupported(scope, receive, send)
            return

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    async def _unsupported(self, scope: Scope, receive: Receive, send: Send) -> None:
        detail = (
            f"the request body is {_content_type(scope) or 'of no declared type'}; "
            "send JSON with `Content-Type: application/json`"
        )
        await _answer(UnsupportedMediaType(detail), scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, what: str) -> None:
        detail = f"the request body {what} bytes; the limit is {self.max_bytes:,} bytes"
        error = PayloadTooLarge(detail, max_body_bytes=self.max_bytes)
        await _answer(error, scope, receive, send)

    async def _too_slow(self, scope: Scope, receive: Receive, send: Send, size: int) -> None:
        detail = (
            f"the request body did not arrive within {self.timeout:g} s "
            f"(TCPFR_BODY_TIMEOUT; {size:,} bytes came)"
        )
        await _answer(RequestTimeout(detail), scope, receive, send)


async def _answer(error: TcpfrError, scope: Scope, receive: Receive, send: Send) -> None:
    await error_response(error, scope.get("path", ""))(scope, receive, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the server rejects a malformed one before we see it
    return None


def _content_type(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            return str(value.decode("latin-1"))
    return None


def _is_json(scope: Scope) -> bool:
    """`application/json`, or any `+json` type (RFC 6839); none declared is read as JSON,
    as FastAPI reads it."""
    declared = _content_type(scope)
    if declared is None:
        return True
    media = declared.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )
