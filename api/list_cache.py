"""The runs list, kept rendered: a dashboard polls it, and reading and rendering its rows
cost each request more than everything else it does.

A page is kept with the version of the rows it shows (``RunRepository.list_version``: equal
versions, equal pages) and answered again only once the database has given that version
anew, so a list never lags a write (a new run, a worker's progress, a cancel, a deletion).
Requests for the same page that arrive together share their reads: a request joins a read
only if it began after the request arrived, so what it gets is never older than what a
read of its own would have given, and a hundred clients polling one page cost the
database one short read at a time, not a hundred.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from cachetools import LRUCache
from fastapi import Request, Response
from sqlalchemy.orm import Session

from api.conditional import REVALIDATE_HEADERS, not_modified
from store.runs import RunRepository

if TYPE_CHECKING:
    from api.deps import Db

#: Bytes an entry costs beyond its body (key, bookkeeping), roughly.
ENTRY_OVERHEAD = 400

Key = tuple[object, ...]


@dataclass(frozen=True, slots=True)
class ListPage:
    """A rendered page of the runs list: the `RunRepository.list` arguments it answers
    (`filters`), the version of the rows it shows, its ETag and its bytes."""

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


#: Reads and renders the page for these filters (the endpoint's code, given at start-up).
RenderPage = Callable[[Session, dict[str, Any]], ListPage]


@dataclass(frozen=True, slots=True)
class _Read:
    number: int  # reads are numbered as they start
    task: asyncio.Task[ListPage]


class ListCache:
    """Rendered pages by tenant and query string (as sent: an entry exists only for a query
    the endpoint validated), least recently used first out, bounded in bytes. Used on the
    event loop only."""

    def __init__(self, max_bytes: int, render: RenderPage) -> None:
        self.max_bytes = max_bytes
        self._render = render
        self._lru: LRUCache[Key, ListPage] = LRUCache(maxsize=max(max_bytes, 1), getsizeof=_size)
        self._reads: dict[Key, _Read] = {}
        self._started = 0

    @staticmethod
    def key(request: Request, tenant_id: uuid.UUID) -> Key:
        return (tenant_id, tuple(sorted(request.query_params.multi_items())))

    def filters_of(self, key: Key) -> dict[str, Any] | None:
        """The filters of the page kept under `key`, if one is: this query was valid."""
        known = self._lru.get(key) if self.max_bytes > 0 else None
        return None if known is None else known.filters

    async def page(self, db: Db, key: Key, filters: dict[str, Any]) -> ListPage:
        """The page as the database holds it now, from a read that began after this call."""
        arrived = self._started
        while True:
            read = self._reads.get(key)
            if read is None:
                self._started += 1
                task = asyncio.ensure_future(self._read(db, key, filters))
                read = self._reads[key] = _Read(self._started, task)
                task.add_done_callback(partial(self._done, key, read))
            if read.number > arrived:
                # Shielded: a client that leaves does not cancel the others' read.
                return await asyncio.shield(read.task)
            # Under way since before this request: it may have missed a write that this
            # request's client has seen. Wait for it, then read again.
            await asyncio.wait([read.task])

    async def _read(self, db: Db, key: Key, filters: dict[str, Any]) -> ListPage:
        known = self._lru.get(key) if self.max_bytes > 0 else None
        if known is not None and await db.read(_version, known.filters) == known.version:
            return known
        page = await db.read(self._render, filters)
        if self.max_bytes > 0 and _size(page) <= self.max_bytes // 4:
            self._lru[key] = page
        return page

    def _done(self, key: Key, read: _Read, task: asyncio.Task[ListPage]) -> None:
        if self._reads.get(key) is read:
            del self._reads[key]
        if not task.cancelled():
            task.exception()  # retrieved: each waiter gets it; none may be left to


def _size(page: ListPage) -> int:
    return len(page.body) + len(page.version) + ENTRY_OVERHEAD


def _version(session: Session, filters: dict[str, Any]) -> str:
    return RunRepository(session).list_version(**filters)
