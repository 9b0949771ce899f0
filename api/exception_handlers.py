"""Every error leaves as RFC 9457 problem+json; an unexpected one is logged and is a 500."""

from __future__ import annotations

import logging
import typing
from collections.abc import Iterable
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError
from sqlalchemy import exc as sa_exc
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import compile_path

from api import hints
from api.exceptions import TcpfrError, field_errors
from api.responses import ProblemResponse
from engine import Scenario
from store.db import database_unavailable
from store.repository import InvalidCursor

log = logging.getLogger(__name__)

PROBLEM_BASE = "urn:tcpfr:problem:"


def problem(
    request: Request,
    *,
    status: int,
    title: str,
    slug: str | None,
    detail: str | None = None,
    errors: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> ProblemResponse:
    body = problem_body(
        request.url.path, status=status, title=title, slug=slug, detail=detail, errors=errors
    )
    body.update(extra)
    return ProblemResponse(body, status_code=status, headers=headers)


def problem_body(
    instance: str,
    *,
    status: int,
    title: str,
    slug: str | None,
    detail: str | None = None,
    errors: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An RFC 9457 problem's members, in the order every answer has them."""
    body: dict[str, Any] = {
        "type": PROBLEM_BASE + slug if slug else "about:blank",
        "title": title,
        "status": status,
    }
    if detail:
        body["detail"] = detail
    body["instance"] = instance
    if errors is not None:
        body["errors"] = errors
    return body


def error_response(exc: TcpfrError, instance: str) -> ProblemResponse:
    """`exc` as problem+json: the one rendering of the TcpfrError hierarchy, for the app's
    handler and for what answers before the app (``api.body_limit``)."""
    body = problem_body(
        instance,
        status=exc.status,
        title=exc.title,
        slug=exc.slug,
        detail=exc.detail,
        errors=exc.errors,
    )
    body.update(exc.extra)
    return ProblemResponse(body, status_code=exc.status, headers=exc.headers or None)


async def _tcpfr_error(request: Request, exc: Exception) -> ProblemResponse:
    assert isinstance(exc, TcpfrError)
    return error_response(exc, request.url.path)


def _api_routes(routes: Iterable[Any]) -> Iterable[Any]:
    for route in routes:
        inner = getattr(route, "original_router", None)  # an included router (FastAPI >= 0.165)
        if inner is not None:
            yield from _api_routes(inner.routes)
        elif getattr(route, "endpoint", None) is not None:
            yield route


def _body_type(request: Request) -> Any:
    """The model the matched route validates its body against (None: none or unknown)."""
    table = getattr(request.app.state, "body_types", None)
    if table is None:
        table = []
        for route in _api_routes(request.app.routes):
            try:
                found = typing.get_type_hints(route.endpoint)
            except Exception:  # noqa: BLE001, S112 - an unresolvable annotation: no hints
                continue
            # Endpoints name their JSON body `body` (or `scenario`, a bare Scenario).
            model = found.get("body") or found.get("scenario")
            if isinstance(model, type) and issubclass(model, BaseModel):
                table.append((route.path_regex, set(route.methods or ()), model))
        request.app.state.body_types = table
    path = request.scope.get("path", "")
    for regex, methods, model in table:
        if request.method in methods and regex.match(path):
            return model
    return None


def _clearer(request: Request, exc: RequestValidationError) -> list[dict[str, Any]]:
    """The errors with messages a person can act on (``api.hints``)."""
    raw = list(exc.errors())
    body = [e for e in raw if tuple(e.get("loc", ()))[:1] == ("body",)]
    rest = [e for e in raw if tuple(e.get("loc", ()))[:1] != ("body",)]
    bad_json = [e for e in body if e.get("type") == "json_invalid"]
    if bad_json:
        err = bad_json[0]
        pos = err["loc"][1] if len(err["loc"]) > 1 and isinstance(err["loc"][1], int) else 0
        line, col = hints.line_column(exc.body or "", pos)
        reason = (err.get("ctx") or {}).get("error", "invalid JSON")
        return [
            {
                "loc": ["body"],
                "msg": f"malformed JSON at line {line}, column {col}: {reason}",
                "type": "json_invalid",
                "line": line,
                "column": col,
            }
        ]
    root = _body_type(request)
    if root is not None and body:
        inner = [{**e, "loc": tuple(e["loc"][1:])} for e in body]
        wrap = hints.wrapping_hint(inner, root, Scenario)
        inner = [wrap] if wrap is not None else hints.improve(inner, root)
        body = [{**e, "loc": ("body", *e["loc"])} for e in inner]
    return [*field_errors(body), *field_errors(rest)]


async def _request_validation(request: Request, exc: Exception) -> ProblemResponse:
    assert isinstance(exc, RequestValidationError)
    errors = _clearer(request, exc)
    first = errors[0] if errors else None
    detail = f"{len(errors)} validation error(s)"
    if first:
        where = first.get("pointer") or ".".join(map(str, first["loc"]))
        detail += f"; first at {where or '(body)'}: {first['msg']}"
    return problem(
        request,
        status=422,
        title="Request validation failed",
        slug="validation",
        detail=detail,
        errors=errors,
    )


async def _pydantic_validation(request: Request, exc: Exception) -> ProblemResponse:
    assert isinstance(exc, ValidationError)
    errors = field_errors(exc.errors(include_url=False, include_input=False))
    return problem(
        request,
        status=422,
        title="Validation failed",
        slug="validation",
        detail=f"{exc.error_count()} validation error(s) in {exc.title}",
        errors=errors,
    )


def allowed_methods(app: Any, path: str) -> list[str]:
    """Every method the resource at this path answers (Starlette's own 405 names only the
    first route that matched the path), HEAD with GET, and OPTIONS, which we answer. A
    template with fewer parameters names the path more closely and is that resource alone:
    `/v1/scenarios/validate` is the validator, not a scenario whose id is 'validate'."""
    table = getattr(app.state, "allow_table", None)
    if table is None:
        table = [
            (compile_path(template)[0], template.count("{"), {m.upper() for m in ops})
            for template, ops in app.openapi().get("paths", {}).items()
        ]
        app.state.allow_table = table
    matching = [(params, ops) for regex, params, ops in table if regex.match(path)]
    closest = min((params for params, _ in matching), default=0)
    methods: set[str] = set()
    for params, ops in matching:
        if params == closest:
            methods |= ops
    if "GET" in methods:
        methods.add("HEAD")
    if methods:
        methods.add("OPTIONS")
    return sorted(methods)


async def _http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    headers = dict(getattr(exc, "headers", None) or {})
    if exc.status_code == 405:
        allow = allowed_methods(request.app, request.url.path)
        headers["Allow"] = ", ".join(allow)
        if request.method == "OPTIONS" and allow:
            # RFC 9110 9.3.7: what the target resource supports, and nothing else.
            return Response(status_code=204, headers=headers)
    titles = {404: "Not found", 405: "Method not allowed", 400: "Bad request"}
    return problem(
        request,
        status=exc.status_code,
        title=titles.get(exc.status_code, "HTTP error"),
        slug=None,
        detail=str(exc.detail) if exc.detail else None,
        headers=headers or None,
    )


async def _invalid_cursor(request: Request, exc: Exception) -> ProblemResponse:
    return problem(
        request,
        status=422,
        title="Invalid cursor",
        slug="validation",
        detail="cursor is not one this service handed out",
        errors=[{"loc": ["query", "cursor"], "msg": "invalid cursor", "type": "value_error"}],
    )


#: Seconds a client is asked to wait while the database is away (a restart takes a few).
DATABASE_RETRY_AFTER = 5


async def _database_error(request: Request, exc: Exception) -> ProblemResponse:
    """The database away (restarting, unreachable, out of connections) is a 503 the client
    may retry, not a 500: the pool reconnects by itself once it is back."""
    if not database_unavailable(exc):
        return await _unexpected(request, exc)
    log.warning(
        "database unavailable on %s %s: %s", request.method, request.url.path, type(exc).__name__
    )
    return problem(
        request,
        status=503,
        title="Service unavailable",
        slug="service-unavailable",
        detail="The database is not reachable right now; retry shortly.",
        headers={"Retry-After": str(DATABASE_RETRY_AFTER)},
    )


async def _unexpected(request: Request, exc: Exception) -> ProblemResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return problem(
        request,
        status=500,
        title="Internal error",
        slug="internal-error",
        detail="An unexpected error occurred; it has been logged.",
    )


def install(app: FastAPI) -> None:
    app.add_exception_handler(TcpfrError, _tcpfr_error)
    app.add_exception_handler(RequestValidationError, _request_validation)
    app.add_exception_handler(ValidationError, _pydantic_validation)
    app.add_exception_handler(InvalidCursor, _invalid_cursor)
    app.add_exception_handler(StarletteHTTPException, _http_exception)
    app.add_exception_handler(sa_exc.DBAPIError, _database_error)
    app.add_exception_handler(sa_exc.TimeoutError, _database_error)
    app.add_exception_handler(Exception, _unexpected)
