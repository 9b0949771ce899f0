"""The response cache's versioned pages, their shared reads: a request never takes the answer of a read that began before it
arrived, requests that wait together share one read, and one leaving or failing does not
take the others with it. (Against the real databases: tests/integration/test_runs_list.py.)"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from api.cache import ListPage, PageSource, ResponseCache

pytestmark = pytest.mark.unit

KEY = ("tenant", (("limit", "50"),))
FILTERS: dict[str, Any] = {"limit": 50}


class FakeDb:
    """A database holding one page whose version is `version`; each read sees the version
    of the moment it begins, and waits at `gate` when one is set."""

    def __init__(self) -> None:
        self.version = "v1"
        self.gate: asyncio.Event | None = None
        self.versions_read = self.pages_read = 0
        self.fail: Exception | None = None
        self.body: bytes | None = None  # what the page shows; None: its version

    async def read(self, fn: Any, filters: dict[str, Any]) -> Any:
        seen = self.version
        if self.gate is not None:
            await self.gate.wait()
        if self.fail is not None:
            raise self.fail
        if fn is SOURCE.version:
            self.versions_read += 1
            return seen
        self.pages_read += 1
        return ListPage(seen, f'"{seen}"', self.body or seen.encode())


def _version(_session: Any, _filters: dict[str, Any]) -> str:
    raise AssertionError("FakeDb reads versions")


def _render(_session: Any, _filters: dict[str, Any]) -> ListPage:
    raise AssertionError("FakeDb renders")


SOURCE = PageSource(version=_version, render=_render)


def cache_of(page_bytes: int) -> ResponseCache:
    return ResponseCache(page_bytes * 8)  # pages get an eighth of the cache


async def page(cache: ResponseCache, db: FakeDb) -> ListPage:
    return await cache.page(db, KEY, FILTERS, SOURCE)  # type: ignore[arg-type]


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_a_request_never_takes_a_read_begun_before_it_arrived() -> None:
    async def main() -> None:
        db, cache = FakeDb(), cache_of(1 << 20)
        assert (await page(cache, db)).body == b"v1"  # kept

        db.gate = asyncio.Event()
        before = asyncio.ensure_future(page(cache, db))
        await settle()  # its read has begun, and sees v1
        db.version = "v2"  # a write, then a request
        after = asyncio.ensure_future(page(cache, db))
        await settle()
        db.gate.set()
        assert (await before).body == b"v1"
        assert (await after).body == b"v2"
        assert (await page(cache, db)).body == b"v2"

    asyncio.run(main())


def test_requests_that_wait_together_share_one_read() -> None:
    async def main() -> None:
        db, cache = FakeDb(), cache_of(1 << 20)
        await page(cache, db)
        db.gate = asyncio.Event()
        first = asyncio.ensure_future(page(cache, db))
        await settle()
        waiting = [asyncio.ensure_future(page(cache, db)) for _ in range(50)]
        await settle()
        db.gate.set()
        pages = await asyncio.gather(first, *waiting)
        assert {p.body for p in pages} == {b"v1"}
        # The page once, then one version read for `first` and one for the fifty.
        assert (db.pages_read, db.versions_read) == (1, 2)

    asyncio.run(main())


def test_one_leaving_or_failing_does_not_take_the_others_along() -> None:
    async def main() -> None:
        db, cache = FakeDb(), cache_of(1 << 20)
        await page(cache, db)
        db.gate = asyncio.Event()
        leaving, staying = (asyncio.ensure_future(page(cache, db)) for _ in "ab")
        await settle()
        leaving.cancel()
        await settle()
        db.gate.set()
        assert (await staying).body == b"v1"

        db.fail = ConnectionError("database away")
        both = [asyncio.ensure_future(page(cache, db)) for _ in "ab"]
        for outcome in await asyncio.gather(*both, return_exceptions=True):
            assert isinstance(outcome, ConnectionError)
        db.fail = None
        assert (await page(cache, db)).body == b"v1"

    asyncio.run(main())


@pytest.mark.parametrize("max_bytes", [0, 1 << 20])
def test_a_changed_page_is_read_again_and_kept_within_bounds(max_bytes: int) -> None:
    async def main() -> None:
        db, cache = FakeDb(), cache_of(max_bytes)
        await page(cache, db)
        db.version = "v2"
        assert (await page(cache, db)).body == b"v2"
        kept = cache._pages.get(KEY)
        assert (kept.filters if kept else None) == (FILTERS if max_bytes else None)
        assert db.pages_read == 2

    asyncio.run(main())


def test_a_page_rebuilt_to_the_same_bytes_keeps_its_etag() -> None:
    """A version can move where the page shows nothing of it (a running sweep's runs
    progress by less than its figures show): the page rebuilt to the same bytes keeps its
    ETag, so a client holding it gets a 304; a page whose bytes changed gets a new one."""

    async def main() -> None:
        db, cache = FakeDb(), cache_of(1 << 20)
        db.body = b"shown"
        first = await page(cache, db)
        db.version = "v2"
        same = await page(cache, db)
        assert db.pages_read == 2 and same.version == "v2"  # read again: the version moved
        assert same.etag == first.etag == '"v1"' and same.body == b"shown"
        assert same.response(_request(first.etag)).status_code == 304
        assert await page(cache, db) is same and db.pages_read == 2  # kept at v2

        db.version, db.body = "v3", b"changed"
        changed = await page(cache, db)
        assert changed.body == b"changed" and changed.etag == '"v3"'
        resp = changed.response(_request(first.etag))
        assert resp.status_code == 200 and resp.body == b"changed"

    asyncio.run(main())


def _request(if_none_match: str | None = None) -> Any:
    from starlette.requests import Request

    headers = [(b"if-none-match", if_none_match.encode())] if if_none_match else []
    scope = {"type": "http", "method": "GET", "path": "/v1/sweeps/x", "query_string": b""}
    return Request({**scope, "headers": headers})


def test_a_settling_document_is_revalidated_until_final_then_kept() -> None:
    """A running sweep's page: tagged, answered 304 while current, never kept beyond a
    revalidation; once final, kept as a finished document with a long max-age."""
    cache = cache_of(1 << 20)
    running = ListPage("v1", '"v1"', b"a,b\n", media_type="text/csv; charset=utf-8")
    resp = cache.respond(_request(), KEY, running)
    assert resp.status_code == 200 and resp.headers["cache-control"] == "private, no-cache"
    assert resp.headers["etag"] == '"v1"' and resp.headers["vary"] == "Accept"
    assert resp.media_type == "text/csv; charset=utf-8"
    assert cache.respond(_request('"v1"'), KEY, running).status_code == 304
    assert cache.document(_request(), KEY) is None  # not kept: it will change

    final = ListPage("v2", '"v2"', b"a,b\n1,2\n", final=True)
    resp = cache.respond(_request('"v1"'), KEY, final)
    assert resp.status_code == 200 and resp.headers["cache-control"] == "private, max-age=86400"
    kept = cache.document(_request(), KEY)
    assert kept is not None and kept.body == b"a,b\n1,2\n"
    hit = cache.document(_request('"v2"'), KEY)
    assert hit is not None and hit.status_code == 304


def test_a_held_page_is_answered_on_its_status_alone_until_that_changes() -> None:
    """A settling page held as built (a running sweep's): a poll reads its status by the
    light read (`urgent_now`) and, while that is the page's own, answers the page without
    reading the version; a status that changed, or one the light read cannot tell (None),
    reads the version, and a new status rebuilds the page at once, held or not."""

    async def main() -> None:
        db, cache = FakeDb(), cache_of(1 << 20)
        status = {"now": "running"}
        probes: list[str | None] = []

        async def urgent_now(_db: Any, _filters: dict[str, Any]) -> str | None:
            probes.append(status["now"])
            return status["now"]

        source = PageSource(
            version=SOURCE.version,
            render=SOURCE.render,
            settle=60.0,
            urgent=lambda v: v.split("|")[0],
            urgent_now=urgent_now,
        )

        async def poll() -> ListPage:
            return await cache.page(db, KEY, FILTERS, source)  # type: ignore[arg-type]

        db.version = "running|1"
        first = await poll()
        assert (db.versions_read, db.pages_read, probes) == (0, 1, [])  # nothing kept yet
        db.version = "running|2"  # runs finished: the figures moved, the status did not
        for _ in range(3):
            assert await poll() is first
        assert (db.versions_read, db.pages_read) == (0, 1) and probes == ["running"] * 3

        status["now"] = None  # type: ignore[assignment]  # the light read cannot tell
        assert await poll() is first  # the version read: same status, still held
        assert (db.versions_read, db.pages_read) == (1, 1)

        status["now"] = "succeeded"  # what the light read says differs from the page's
        db.version = "succeeded|3"
        done = await poll()
        assert done.version == "succeeded|3" and (db.versions_read, db.pages_read) == (2, 2)

    asyncio.run(main())


def test_a_read_under_way_when_a_write_forgets_the_page_keeps_nothing() -> None:
    """A cancel drops the sweep's kept pages (forget). A read that began before it may have
    read the state before the cancel: it answers its own request, but neither puts the page
    back held anew (its version read equal) nor keeps what it rendered, so the next poll
    reads the cancelled sweep afresh."""

    async def main() -> None:
        key = ("tenant", "/v1/sweeps/x", (), "")
        # Held a minute, but any change of version is urgent: rebuilt at once.
        held = PageSource(
            version=SOURCE.version, render=SOURCE.render, settle=60.0, urgent=lambda v: v
        )
        db, cache = FakeDb(), cache_of(1 << 20)

        async def read() -> ListPage:
            return await cache.page(db, key, FILTERS, held)  # type: ignore[arg-type]

        for moved in (False, True):  # the version read equal; the page rendered anew
            first = await read()
            assert cache._pages.get(key) is not None
            db.gate = asyncio.Event()
            if moved:
                db.version = db.version + "+"
            reading = asyncio.ensure_future(read())
            await settle()  # the read is under way, stopped at the gate
            cache.forget("/v1/sweeps/x")
            db.gate.set()
            answered = await reading
            assert answered.version == db.version and (answered is first) != moved
            assert cache._pages.get(key) is None  # nothing kept: the next poll reads anew
            db.gate = None

    asyncio.run(main())
