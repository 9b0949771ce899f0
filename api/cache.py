"""What never changes, rendered once: the documents of finished runs (a run, its series,
comparisons of finished runs, a finished sweep's summary) kept in memory, least recently
used first out, bounded in bytes, and served again without the database.

An entry is the exact response a request got: its key is what the response depends on
(tenant, path, query, Accept), as its ETag is, so a 304 needs no database either. Only
responses whose ETag says "finished" are stored; a tenant never reads another's entry.

What does change, the runs list, is kept too (`ListCache`), with the version of the rows
it was rendered from, and served only once the database has said that this is still
their version.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cachetools import LRUCache
from fastapi import Request, Response
from sqlalchemy.orm import Session
from starlette.types import ASGIApp, Receive, Scope, Send

from api.conditional import CACHE_HEADERS, REVALIDATE_HEADERS, not_modified
from store.models import DEFAULT_TENANT_ID
from store.runs import RunRepository

if TYPE_CHECKING:
    from api.deps import Db

#: Bytes an entry costs beyond its body (key, headers, bookkeeping), roughly.
ENTRY_OVERHEAD = 400
#: The runs list's path: served from `ListCache` before routing, as documents are.
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
        self.hits = self.misses = 0

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
            self.misses += 1
            return None
        self.hits += 1
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
        """The runs list from `ListCache`, once the database has confirmed its version."""
        state = self.owner.state
        lists: ListCache = state.list_cache
        try:
            page = await lists.current(state.db, ListCache.key(request, DEFAULT_TENANT_ID))
        except Exception:  # the database away: the app answers, with its 503
            return None
        return None if page is None else page.response(request)


@dataclass(frozen=True, slots=True)
class ListPage:
    """A rendered page of the runs list: what `RunRepository.list_version` is asked to check
    it (`filters`), the version of the rows it shows, its ETag and its bytes."""

    filters: dict[str, Any]
    version: str
    etag: str
    body: bytes

    def response(self, request: Request) -> Response:
        """The page, or a 304 when the client's copy is this one."""
        if (unchanged := not_modified(request, self.etag, REVALIDATE_HEADERS)) is not None:
            return unchanged
        headers = {"ETag": self.etag, **REVALIDATE_HEADERS}
        return Response(self.body, media_type="application/json", headers=headers)


class ListCache:
    """Rendered pages of the runs list, by tenant and query string, least recently used
    first out, bounded in bytes. An entry is a candidate, never an answer by itself: it is
    served only once the database has given the page's version (one short row) and it is
    the entry's, so a list never lags a write (a new run, a worker's progress, a cancel);
    what it saves is reading and rendering the rows. Used on the event loop only."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._lru: LRUCache[tuple[object, ...], ListPage] = LRUCache(
            maxsize=max(max_bytes, 1), getsizeof=_list_page_size
        )

    @staticmethod
    def key(request: Request, tenant_id: uuid.UUID) -> tuple[object, ...]:
        # The query as sent: an entry exists only for a query the endpoint validated.
        return (tenant_id, tuple(sorted(request.query_params.multi_items())))

    async def current(self, db: Db, key: tuple[object, ...]) -> ListPage | None:
        """The entry under `key` if its rows are still what the database holds."""
        known = self._lru.get(key) if self.max_bytes > 0 else None
        if known is None:
            return None
        version = await db.read(_list_version, known.filters)
        if version != known.version:
            # Gone, so the endpoint this request goes on to reads the rows at once.
            self._lru.pop(key, None)
            return None
        return known

    def put(self, key: tuple[object, ...], page: ListPage) -> None:
        if self.max_bytes > 0 and _list_page_size(page) <= self.max_bytes // 4:
            self._lru[key] = page


def _list_page_size(page: ListPage) -> int:
    return len(page.body) + len(page.version) + ENTRY_OVERHEAD


def _list_version(session: Session, filters: dict[str, Any]) -> str:
    return RunRepository(session).list_version(**filters)
