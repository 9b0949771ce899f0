"""GET /v1/runs/{id}/stream, /v1/sweeps/{id}/stream and /v1/advice/{id}/stream: live progress
as Server-Sent Events."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Hashable
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request, Response

from api.deps import DbDep, SettingsDep, TenantDep
from api.responses import problem_responses
from api.streams import service
from api.streams.feed import ChangeFeed, Look
from api.streams.sse import MEDIA_TYPE, EventStreamResponse, StreamSlots, events, last_event_id

router = APIRouter(tags=["streams"])

LastEventIdHeader = Annotated[
    str | None,
    Header(
        alias="Last-Event-ID",
        description="The id of the last event received: the stream resumes after it "
        "(EventSource sends it when it reconnects)",
    ),
]
LastEventIdQuery = Annotated[
    int | None,
    Query(
        alias="last_event_id",
        ge=-1,
        description="Same as the Last-Event-ID header, for clients that cannot set it",
    ),
]
EVENTS_DOC = """\
`text/event-stream`. Events, each with an integer `id` that grows along the stream:
`status` (one per step of {what}'s log), `progress` (the latest reading, sent when it
changes) and `done` (last, then the stream ends){done}. Each `data` is a JSON object. A
comment line is sent every TCPFR_STREAM_HEARTBEAT seconds (15) while nothing else is, so
proxies keep the connection. Reconnect with `Last-Event-ID` (or `last_event_id`) to get every
`status` after that id exactly once and the current `progress`. One API process serves at most
TCPFR_MAX_STREAMS streams; past that a 503 with `Retry-After`. Streams end when the server
stops; a client reconnects to another replica with its Last-Event-ID."""


#: One event of the stream, as an SSE parser yields it (the schema each event is read by).
EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "event": {"type": "string", "enum": ["progress", "status", "done"]},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "description": "A JSON object: the run's or sweep's state after the event",
        },
        "id": {"type": "string", "description": "An integer that grows along the stream"},
        "retry": {"type": "integer", "description": "Milliseconds before reconnecting"},
    },
}


def _responses(example: str) -> dict[int | str, dict[str, Any]]:
    return {
        200: {
            "description": "The event stream",
            "content": {MEDIA_TYPE: {"schema": EVENT_SCHEMA, "example": example}},
        },
        **problem_responses(404, 422),
    }


RUN_EXAMPLE = (
    'id: 30000\nevent: status\ndata: {"run_id": "...", "event": "started", "status": "running", '
    '...}\n\nid: 30421\nevent: progress\ndata: {"run_id": "...", "status": "running", '
    '"progress": 0.42, ...}\n\n'
)
SWEEP_EXAMPLE = (
    'id: 10000\nevent: status\ndata: {"sweep_id": "...", "status": "running", "finished": 1, '
    '"run_count": 4, "run": {...}}\n\nid: 10501\nevent: progress\ndata: {"sweep_id": "...", '
    '"status": "running", "fraction": 0.5, "eta_seconds": 3.1, ...}\n\n'
)
ADVICE_EXAMPLE = (
    'id: 20000\nevent: status\ndata: {"advice_id": "...", "status": "running", "finished": 3, '
    '"run": {...}}\n\nid: 22101\nevent: progress\ndata: {"advice_id": "...", '
    '"status": "running", "runs": 5, "run_budget": 30, "fraction": 0.1, ...}\n\n'
)


class Stream:
    """What opens a stream: the request's app (its slots, feed and stop), the database, the
    settings and the client's last event id."""

    def __init__(
        self,
        request: Request,
        db: DbDep,
        settings: SettingsDep,
        last_event_id_header: LastEventIdHeader = None,
        last_event_id_query: LastEventIdQuery = None,
    ) -> None:
        self.request = request
        self.db = db
        self.settings = settings
        self.header = last_event_id_header
        self.query = last_event_id_query

    async def open(self, key: Hashable, look: Look) -> Response:
        """The stream of what `look` reads, resumed after the client's last event id; a 404
        (or other error) from the first look is answered before the stream opens. The looks
        after the first are the process's change feed's."""
        after = last_event_id(self.header, self.query)
        first = await self.db.read(look)
        state = self.request.app.state
        slots: StreamSlots = state.stream_slots
        slots.take()
        feed: ChangeFeed = state.feed

        async def body() -> AsyncIterator[bytes]:
            async with feed.subscribe(key, look) as subscription:
                async for chunk in events(
                    first,
                    subscription.next,
                    after=after,
                    heartbeat=self.settings.stream_heartbeat,
                    stopping=state.stopping.event,
                ):
                    yield chunk

        return EventStreamResponse(body(), slots)


StreamDep = Annotated[Stream, Depends()]


@router.get(
    "/v1/runs/{run_id}/stream",
    operation_id="stream_run",
    response_class=Response,
    responses=_responses(RUN_EXAMPLE),
    description=EVENTS_DOC.format(
        what="the run's history (queued, enqueued, started, ..., succeeded)",
        done=", whose data is the run as `GET /v1/runs/{id}` has it less summary and diagnosis",
    ),
)
async def stream_run(
    run_id: uuid.UUID,
    tenant_id: TenantDep,
    stream: StreamDep,
) -> Response:
    """A run's progress and status changes as Server-Sent Events, until it finishes."""
    look = partial(service.run_events, run_id=run_id, tenant_id=tenant_id)
    key = ("run", run_id, tenant_id)
    return await stream.open(key, look)


@router.get(
    "/v1/sweeps/{sweep_id}/stream",
    operation_id="stream_sweep",
    response_class=Response,
    responses=_responses(SWEEP_EXAMPLE),
    description=EVENTS_DOC.format(
        what="the sweep's runs finishing (with the sweep's status after each)",
        done=", whose data is the sweep as `GET /v1/sweeps` lists it",
    ),
)
async def stream_sweep(
    sweep_id: uuid.UUID,
    tenant_id: TenantDep,
    stream: StreamDep,
) -> Response:
    """A sweep's progress (fraction, counts, ETA) and each run's end, until the sweep ends."""
    look = partial(
        service.sweep_events, sweep_id=sweep_id, tenant_id=tenant_id, settings=stream.settings
    )
    key = ("sweep", sweep_id, tenant_id)
    return await stream.open(key, look)


@router.get(
    "/v1/advice/{advice_id}/stream",
    operation_id="stream_advice",
    response_class=Response,
    responses=_responses(ADVICE_EXAMPLE),
    description=EVENTS_DOC.format(
        what="the advice's runs finishing",
        done=", whose data is the advice as `GET /v1/advice` lists it (its report is at "
        "`GET /v1/advice/{id}`)",
    ),
)
async def stream_advice(
    advice_id: uuid.UUID,
    tenant_id: TenantDep,
    stream: StreamDep,
) -> Response:
    """An advice's progress (runs made, counts, rounds) and each of its runs' end, until the
    advice has finished."""
    look = partial(service.advice_events, advice_id=advice_id, tenant_id=tenant_id)
    key = ("advice", advice_id, tenant_id)
    return await stream.open(key, look)
