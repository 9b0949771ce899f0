"""What never changes, rendered once: the documents of finished runs (a run, its series,
comparisons of finished runs, a finished sweep's summary) kept in memory, least recently
used first out, bounded in bytes, and served again without the database.

An entry is the exact response a request got: its key is what the response depends on
(tenant, path, query, Accept), as its ETag is, so a 304 needs no database either. Only
responses whose ETag says "finished" are stored; a tenant never reads another's entry.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from typing import Any

from cachetools import LRUCache
from fastapi import Request, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from api.conditional import CACHE_HEADERS, not_modified
from api.list_cache import ListCache
from store.models import DEFAULT_TENANT_ID

#: Bytes an entry costs beyond its body (key, headers, bookkeeping), roughly.
ENTRY_OVERHEAD = 400
#: The runs list's path: served from `api.list_cache` before routing, as documents are.
RUNS_LIST = "/v1/runs"


@dataclass(frozen=True, slots=True)
class Entry:
    etag: str
    body: bytes
    media_type: str
    status: int


class DocumentCache:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._lru: LRUCache[tuple[object, ...], Entry] = LRUCache(
            maxsize=max(max_bytes, 1), getsizeof=lambda e: len(e.body) + ENTRY_OVERHEAD
        )
        self._lock = threading.Lock()  # cachetools is not thread-safe; one loop, cheap

    @staticmethod
    def _key(request: Request, tenant_id: uuid.UUID) -> tuple[object, ...]:
        query = tuple(sorted(request.query_params.multi_items()))
        return (tenant_id, request.url.path, query, request.headers.get("accept", ""))

    def lookup(self, request: Request, tenant_id: uuid.UUID) -> Response | None:
        """The stored response (or a 304 when the client's copy is current), else None."""
        if self.max_bytes <= 0:
            return None
        with self._lock:
            entry = self._lru.get(self._key(request, tenant_id))
        if entry is None:
            return None
        if (cached := not_modified(request, entry.etag)) is not None:
            return cached
        headers = {"ETag": entry.etag, **CACHE_HEADERS}
        if entry.media_type.startswith("text/csv"):
            headers["Vary"] = "Accept"
        return Response(
            entry.body, status_code=entry.status, media_type=entry.media_type, headers=headers
        )

    def store(self, request: Request, tenant_id: uuid.UUID, response: Response) -> Response:
        """Keep a finished document's response (one with an ETag); returns it unchanged."""
        etag = response.headers.get("etag")
        if self.max_bytes <= 0 or etag is None or response.status_code != 200:
            return response
        body = bytes(response.body)
        if len(body) + ENTRY_OVERHEAD > self.max_bytes // 4:
            return response  # one huge frame must not flush everything else
        entry = Entry(etag, body, response.media_type or "application/json", 200)
        with self._lock:
            self._lru[self._key(request, tenant_id)] = entry
        return response


class ServeCached:
    """A pure ASGI middleware that answers a GET from the document cache before routing,
    when that needs no decision of the app's: authentication off (every request is the
    default tenant's) and no request-rate limit to count. The entries are the ones the
    endpoints stored, under the same key, so the answer is byte for byte theirs; anything
    else goes on to the app. (Routing and dependency resolution cost a cached request most
    of its time: measured ~230 us of ~300 us in process.)"""

    def __init__(self, app: ASGIApp, *, owner: Any) -> None:
        self.app = app
        self.owner = owner  # the FastAPI app, whose state holds the cache once started

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            state = self.owner.state
            cache: DocumentCache | None = getattr(state, "cache", None)
            settings = state.settings
            if cache is not None and not settings.auth and settings.rate_limit is None:
                request = Request(scope)
                hit = cache.lookup(request, DEFAULT_TENANT_ID)
                if hit is None and scope["path"] == RUNS_LIST:
                    hit = await self._listed(request)
                if hit is not None:
                    await hit(scope, receive, send)
                    return
        await self.app(scope, receive, send)

    async def _listed(self, request: Request) -> Response | None:
        """The runs list from `ListCache`, read anew (a short read while it is unchanged),
        when the endpoint has answered this query before."""
        state = self.owner.state
        lists: ListCache = state.list_cache
        key = ListCache.key(request, DEFAULT_TENANT_ID)
        if (filters := lists.filters_of(key)) is None:
            return None
        try:
            page = await lists.page(state.db, key, filters)
        except Exception:  # the database away: the app answers, with its 503
            return None
        return page.response(request)
