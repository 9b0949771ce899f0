"""Response caching, in one place: what a GET answered, kept by each API process and
answered again, keyed by what the response depends on (tenant, path, query, Accept).

Two kinds of answer are kept, each least recently used first out and bounded in bytes:

- **Documents that never change** (a finished run, its series, a comparison of succeeded
  runs, a finished sweep and its summary): the exact response, served again without the
  database, and a 304 when the client's copy is current. Only responses with a strong ETag
  are kept.
- **Versioned pages** (the runs list, which dashboards poll): a page is kept with the
  version of the rows it shows (equal versions, equal pages) and answered again only once
  the database has given that version anew, so a list never lags a write (a page rebuilt
  to the same bytes keeps its ETag: what moved was not shown). Requests for the
  same page that arrive together share their reads: a request joins a read only if it
  began after the request arrived, so what it gets is never older than what a read of its
  own would have given, and a hundred clients polling one page cost the database one short
  read at a time.
- **Settling documents** (a running sweep, its partial summary, its progress): versioned
  pages too, but while runs finish many times a second every poll would find a new
  version and rebuild. A settling page is therefore answered as built for a short while
  (`PageSource.settle`, and at least SETTLE_COST_FACTOR times what building it took), so
  its builds cost a process at most a small, bounded share of a core however many panels
  poll; a dashboard sees the sweep's figures at most that old. Its status is still read
  on every poll, while the page is held by a read lighter than its version's
  (`PageSource.urgent_now`), else with the version: a change of status
  (`PageSource.urgent`: the sweep has finished, been cancelled) is never held back. A
  final page is kept as a document.

An endpoint answers through ``Conditional`` (the ``CachedDep`` dependency) with one call,
``answer`` or ``page``; ``ServeCached`` answers from the same entries before routing when
that needs no decision of the app's. A tenant never reads another's entry.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from cachetools import LRUCache
from fastapi import Request, Response
from sqlalchemy.orm import Session
from starlette.types import ASGIApp, Receive, Scope, Send

from api.conditional import CACHE_HEADERS, REVALIDATE_HEADERS, etag_for, not_modified
from api.db import Db
from store.models import DEFAULT_TENANT_ID

#: Bytes an entry costs beyond its body (key, headers, bookkeeping), roughly.
ENTRY_OVERHEAD = 400

Key = tuple[object, ...]


@dataclass(frozen=True, slots=True)
class Tag:
    """A finished document's strong ETag, and whether the client's copy is that one."""

    etag: str
    current: bool


#: What an endpoint found: the document's tag (None while what it shows can still change:
#: then it is neither tagged nor kept), and how to render it (None when the tag is current).
Found = tuple[Tag | None, Callable[[], Response] | None]


@dataclass(frozen=True, slots=True)
class ListPage:
    """A rendered page of a versioned list (or of a document that changes until it settles:
    a running sweep, its partial summary): the version of the rows it shows, its ETag and
    its bytes. `final`: what it shows will not change any more, so it is answered as a
    finished document from now on (kept, with a long max-age)."""

    version: str
    etag: str
    body: bytes
    media_type: str = "application/json"
    final: bool = False

    def response(self, request: Request) -> Response:
        """The page, or a 304 when the client's copy is this one."""
        cache_headers = CACHE_HEADERS if self.final else REVALIDATE_HEADERS
        if (unchanged := not_modified(request, self.etag, cache_headers)) is not None:
            return unchanged
        headers = {"ETag": self.etag, **cache_headers}
        if self.media_type.startswith("text/csv"):
            headers["Vary"] = "Accept"
        return Response(self.body, media_type=self.media_type, headers=headers)


@dataclass(frozen=True, slots=True)
class PageSource:
    """How a versioned list is read for some filters: the version of the rows a page would
    show (a short read), and the page itself, rendered. `settle`: seconds a page that is
    not final is answered as built, though its version moved, before it is rebuilt (0:
    at once; a list must never lag a write, a running sweep's figures may)."""

    version: Callable[[Session, dict[str, Any]], str]
    render: Callable[[Session, dict[str, Any]], ListPage]
    settle: float = 0.0
    #: The part of a version that may not lag (a sweep's status): a page whose new version
    #: differs there is rebuilt at once, held or not.
    urgent: Callable[[str], str] = lambda version: ""  # noqa: E731
    #: That part as the database holds it now, by a read lighter than the version's (None:
    #: it cannot tell, read the version): a page held as built is answered again when this
    #: equals its own, without reading the version.
    urgent_now: Callable[[Db, dict[str, Any]], Awaitable[str | None]] | None = None


#: A settling page is answered as built for at least this many times its build's duration:
#: its rebuilds then take at most 1 / SETTLE_COST_FACTOR of a core per page and process.
SETTLE_COST_FACTOR = 50


@dataclass(frozen=True, slots=True)
class _Document:
    etag: str
    body: bytes
    media_type: str


@dataclass(frozen=True, slots=True)
class _Listed:
    """A kept page with what reads it again: an entry exists only for filters the endpoint
    validated, so the same query may be answered again before routing."""

    source: PageSource
    filters: dict[str, Any]
    page: ListPage
    built: float = 0.0  # time.monotonic() when it was last known current: built, or read equal
    cost: float = 0.0  # seconds its render took

    def settled_for(self, now: float) -> bool:
        """Answered as built still: a settling page younger than its hold."""
        hold = max(self.source.settle, SETTLE_COST_FACTOR * self.cost)
        return self.source.settle > 0 and not self.page.final and now - self.built < hold


@dataclass(frozen=True, slots=True)
class _Read:
    number: int  # reads are numbered as they start
    task: asyncio.Task[ListPage]


class ResponseCache:
    """One API process's kept answers: documents in ``max_bytes``, pages in an eighth of it.
    Used on the event loop."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.page_bytes = max_bytes // 8
        self._documents: LRUCache[Key, _Document] = LRUCache(
            maxsize=max(max_bytes, 1), getsizeof=lambda e: len(e.body) + ENTRY_OVERHEAD
        )
        self._pages: LRUCache[Key, _Listed] = LRUCache(
            maxsize=max(self.page_bytes, 1), getsizeof=lambda e: _page_size(e.page)
        )
        self._lock = threading.Lock()  # cachetools is not thread-safe; one loop, cheap
        self._reads: dict[Key, _Read] = {}
        self._started = 0
        #: Counts `forget` calls: a read under way across one keeps nothing it read.
        self._forgets = 0

    @staticmethod
    def key(request: Request, tenant_id: uuid.UUID) -> Key:
        # The scope's path, not request.url's: building the URL parses the Host header, a
        # tenth of what a kept page's poll cost the API in Python (py-spy).
        scope = request.scope
        query = (
            tuple(sorted(request.query_params.multi_items())) if scope.get("query_string") else ()
        )
        return (tenant_id, scope["path"], query, request.headers.get("accept", ""))

    def document(self, request: Request, key: Key) -> Response | None:
        """The kept response (or a 304 when the client's copy is current), else None."""
        if self.max_bytes <= 0:
            return None
        with self._lock:
            entry = self._documents.get(key)
        if entry is None:
            return None
        if (cached := not_modified(request, entry.etag)) is not None:
            return cached
        headers = {"ETag": entry.etag, **CACHE_HEADERS}
        if entry.media_type.startswith("text/csv"):
            headers["Vary"] = "Accept"
        return Response(entry.body, media_type=entry.media_type, headers=headers)

    def keep(self, key: Key, response: Response) -> None:
        """Keep a finished document's response (a 200 with an ETag)."""
        etag = response.headers.get("etag")
        if self.max_bytes <= 0 or etag is None or response.status_code != 200:
            return
        if len(response.body) + ENTRY_OVERHEAD > self.max_bytes // 4:
            return  # one huge frame must not flush everything else
        entry = _Document(etag, bytes(response.body), response.media_type or "application/json")
        with self._lock:
            self._documents[key] = entry

    async def served(self, request: Request, key: Key, db: Db) -> Response | None:
        """What is kept under `key`: a document, or a known page read anew; else None."""
        if (hit := self.document(request, key)) is not None:
            return hit
        listed = self._pages.get(key) if self.page_bytes > 0 else None
        if listed is None:
            return None
        page = await self.page(db, key, listed.filters, listed.source)
        return self.respond(request, key, page)

    def respond(self, request: Request, key: Key, page: ListPage) -> Response:
        """A page's response; a final one is kept as a finished document too."""
        response = page.response(request)
        if page.final and response.status_code == 200:
            self.keep(key, response)
        return response

    async def page(self, db: Db, key: Key, filters: dict[str, Any], source: PageSource) -> ListPage:
        """The page as the database holds it now, from a read that began after this call."""
        arrived = self._started
        while True:
            read = self._reads.get(key)
            if read is None:
                self._started += 1
                task = asyncio.ensure_future(self._read(db, key, filters, source))
                read = self._reads[key] = _Read(self._started, task)
                task.add_done_callback(partial(self._done, key, read))
            if read.number > arrived:
                # Shielded: a client that leaves does not cancel the others' read.
                return await asyncio.shield(read.task)
            # Under way since before this request: it may have missed a write that this
            # request's client has seen. Wait for it, then read again.
            await asyncio.wait([read.task])

    async def _read(
        self, db: Db, key: Key, filters: dict[str, Any], source: PageSource
    ) -> ListPage:
        forgets = self._forgets
        known = self._pages.get(key) if self.page_bytes > 0 else None
        if known is not None:
            if source.urgent_now is not None and known.settled_for(time.monotonic()):
                urgent = await source.urgent_now(db, filters)
                if urgent is not None and urgent == source.urgent(known.page.version):
                    return known.page
            version = await db.read(source.version, filters)
            if version == known.page.version:
                if source.settle > 0 and self._forgets == forgets:
                    self._pages[key] = replace(known, built=time.monotonic())  # held anew
                return known.page
            held = known.settled_for(time.monotonic())
            if held and source.urgent(version) == source.urgent(known.page.version):
                return known.page
        started = time.monotonic()
        page = await db.read(source.render, filters)
        if known is not None and _same_document(known.page, page):
            # The version moved (a running run's progress, say) but what the page shows did
            # not: its tag stays, so a client holding it gets a 304, not the same bytes.
            page = replace(page, etag=known.page.etag)
        fits = self.page_bytes > 0 and _page_size(page) <= self.page_bytes // 4
        if fits and self._forgets == forgets:  # else: read before a write forgot the page
            done = time.monotonic()
            self._pages[key] = _Listed(source, filters, page, done, done - started)
        return page

    def forget(self, prefix: str) -> None:
        """Drop the kept pages whose path starts with `prefix` (a write this process made:
        a cancelled sweep is read anew at once, not after its pages' hold). A read under
        way meanwhile answers its own request but keeps nothing: it may have read before
        the write."""
        with self._lock:
            self._forgets += 1
            for key in [k for k in self._pages if str(k[1]).startswith(prefix)]:
                self._pages.pop(key, None)

    def _done(self, key: Key, read: _Read, task: asyncio.Task[ListPage]) -> None:
        if self._reads.get(key) is read:
            del self._reads[key]
        if not task.cancelled():
            task.exception()  # retrieved: each waiter gets it; none may be left to


def _same_document(kept: ListPage, built: ListPage) -> bool:
    """The same bytes, answered the same way (a final page is answered as a finished one)."""
    return (kept.body, kept.media_type, kept.final) == (built.body, built.media_type, built.final)


def _page_size(page: ListPage) -> int:
    return len(page.body) + len(page.version) + ENTRY_OVERHEAD


class Conditional:
    """The response cache as one GET sees it (the ``CachedDep`` dependency)."""

    __slots__ = ("request", "_cache", "_db", "_key")

    def __init__(self, request: Request, tenant_id: uuid.UUID, cache: ResponseCache, db: Db):
        self.request = request
        self._cache = cache
        self._db = db
        self._key = ResponseCache.key(request, tenant_id)

    def tag(self, *parts: object) -> Tag:
        """The strong ETag of a document made of `parts` (what it depends on besides this
        request's path, query and Accept), and whether the client holds it."""
        etag = etag_for(self.request, *parts)
        return Tag(etag, not_modified(self.request, etag) is not None)

    async def answer(self, find: Callable[[], Awaitable[Found]]) -> Response:
        """The kept answer; else what `find` finds: a 304 when the client's copy is current,
        or the rendered document, with its ETag and kept when it has a tag."""
        if (hit := self._cache.document(self.request, self._key)) is not None:
            return hit
        tag, render = await find()
        if tag is not None and tag.current:
            return Response(status_code=304, headers={"ETag": tag.etag, **CACHE_HEADERS})
        assert render is not None, "a document not current at the client is rendered"
        response = render()
        if tag is not None:
            response.headers.update({"ETag": tag.etag, **CACHE_HEADERS})
            self._cache.keep(self._key, response)
        return response

    async def page(self, source: PageSource, filters: dict[str, Any]) -> Response:
        """The page of `source` for these (validated) filters, as the database holds it now,
        or a 304 when the client's copy is that one."""
        found = await self._cache.page(self._db, self._key, filters, source)
        return self._cache.respond(self.request, self._key, found)

    def forget(self, prefix: str) -> None:
        """After this request's write: the kept pages under `prefix` are read anew."""
        self._cache.forget(prefix)

    async def settling(self, source: PageSource, filters: dict[str, Any]) -> Response:
        """A document that changes until it settles (a running sweep, its partial summary):
        the kept final document when there is one, else the page of `source` as the
        database holds it now, rebuilt only when its version changed (a 304 while the
        client's copy is current). Once the page says it is final it is kept as a finished
        document, answered without the database."""
        if (hit := self._cache.document(self.request, self._key)) is not None:
            return hit
        return await self.page(source, filters)


class ServeCached:
    """A pure ASGI middleware that answers a GET from the response cache before routing,
    when that needs no decision of the app's: authentication off (every request is the
    default tenant's) and no request-rate limit to count. The entries are the ones the
    endpoints kept, under the same key, so the answer is byte for byte theirs; anything else
    goes on to the app. (Routing and dependency resolution cost a cached request most of
    its time: measured ~230 us of ~300 us in process.)"""

    def __init__(self, app: ASGIApp, *, owner: Any) -> None:
        self.app = app
        self.owner = owner  # the FastAPI app, whose state holds the cache once started

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            state = self.owner.state
            cache: ResponseCache | None = getattr(state, "cache", None)
            settings = state.settings
            if cache is not None and not settings.auth and settings.rate_limit is None:
                request = Request(scope)
                try:
                    hit = await cache.served(
                        request, cache.key(request, DEFAULT_TENANT_ID), state.db
                    )
                except Exception:  # the database away: the app answers, with its 503
                    hit = None
                if hit is not None:
                    await hit(scope, receive, send)
                    return
        await self.app(scope, receive, send)
