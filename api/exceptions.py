"""One error hierarchy for the API, rendered once as RFC 9457 problem+json
(``api.exception_handlers``). Nothing below the routers raises HTTPException."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, TypeVar


class TcpfrError(Exception):
    status: ClassVar[int] = 500
    title: ClassVar[str] = "Internal error"
    slug: ClassVar[str] = "internal-error"
    headers: ClassVar[dict[str, str]] = {}  # response headers the status calls for

    def __init__(
        self, detail: str, *, errors: Sequence[dict[str, Any]] | None = None, **extra: Any
    ):
        super().__init__(detail)
        self.detail = detail
        self.errors = list(errors) if errors else None
        self.extra = extra


class Unauthorized(TcpfrError):
    """No API key, or one that is wrong or revoked (RFC 9110 §15.5.2 wants the challenge)."""

    status = 401
    title = "Unauthorized"
    slug = "unauthorized"
    headers = {"WWW-Authenticate": "Bearer"}


class NotFound(TcpfrError):
    status = 404
    title = "Not found"
    slug = "not-found"


T = TypeVar("T")


def found(row: T | None, what: str, id: object) -> T:
    """`row`, or the 404 of a `what` that does not exist or is another tenant's (ids reveal
    nothing across tenants)."""
    if row is None:
        raise NotFound(f"no {what} with id {id}")
    return row


class Conflict(TcpfrError):
    status = 409
    title = "Conflict"
    slug = "conflict"


class Unprocessable(TcpfrError):
    """The request is well-formed JSON but cannot be acted on; ``errors`` say where."""

    status = 422
    title = "Unprocessable request"
    slug = "unprocessable"


class InvalidScenario(Unprocessable):
    title = "Invalid scenario"
    slug = "invalid-scenario"


class IdempotencyKeyReused(Unprocessable):
    title = "Idempotency-Key reused with a different request"
    slug = "idempotency-key-reused"


class OverBudget(Unprocessable):
    """The scenario would cost more simulated events than one run may (``api.limits``)."""

    title = "Scenario over the simulation budget"
    slug = "over-budget"


class RequestTimeout(TcpfrError):
    status = 408
    title = "Request body too slow"
    slug = "request-timeout"
    # What is left of the body is never read: the connection cannot carry another request.
    headers = {"Connection": "close"}


class PayloadTooLarge(TcpfrError):
    status = 413
    title = "Request body too large"
    slug = "payload-too-large"
    headers = {"Connection": "close"}  # as RequestTimeout's


class UnsupportedMediaType(TcpfrError):
    status = 415
    title = "Unsupported media type"
    slug = "unsupported-media-type"
    headers = {"Accept-Post": "application/json"}  # what would have been taken (RFC 9110)


class _RetryLater(TcpfrError):
    """Refused for now: `Retry-After` says in how many seconds to ask again."""

    def __init__(self, detail: str, *, retry_after: int, **extra: Any) -> None:
        super().__init__(detail, retry_after=retry_after, **extra)
        self.headers = {"Retry-After": str(retry_after)}  # type: ignore[misc]


class TooManyRequests(_RetryLater):
    """A per-tenant limit (request rate, runs queued or running at once) is reached."""

    status = 429
    title = "Too many requests"
    slug = "too-many-requests"


class ServiceUnavailable(_RetryLater):
    status = 503
    title = "Service unavailable"
    slug = "service-unavailable"


def json_pointer(path: Sequence[str | int]) -> str:
    """RFC 6901: '~' and '/' escaped, one reference token per path element."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def field_error(loc: Sequence[str | int], msg: str, type: str = "value_error") -> dict[str, Any]:
    """One entry of a problem's `errors`; a place in the body also gets its JSON pointer."""
    err: dict[str, Any] = {"loc": list(loc), "msg": msg, "type": type}
    if loc and loc[0] == "body":
        err["pointer"] = json_pointer(list(loc[1:]))
    return err


def field_errors(
    errors: Iterable[Any], *, prefix: Sequence[str | int] = ()
) -> list[dict[str, Any]]:
    """Pydantic errors as ``{loc, msg, type, pointer}``, without the echoed input."""
    out = []
    for err in errors:
        loc = [*prefix, *err.get("loc", ())]
        item: dict[str, Any] = {"loc": loc, "msg": err.get("msg", ""), "type": err.get("type", "")}
        item.update({k: err[k] for k in ("line", "column") if k in err})
        if loc and loc[0] == "body":
            item["pointer"] = json_pointer(loc[1:])
        out.append(item)
    return out
