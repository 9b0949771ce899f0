"""Strong ETags and ``If-None-Match`` for what never changes: a finished run's data."""

from __future__ import annotations

import hashlib

from fastapi import Request, Response

#: Bump when a representation's bytes change for the same data (format, downsampling).
REPRESENTATION_VERSION = "2"  # 2: rate series by time-weighted means; ties, tables


def etag_for(request: Request, *parts: object) -> str:
    query = "&".join(sorted(f"{k}={v}" for k, v in request.query_params.multi_items()))
    accept = request.headers.get("accept", "")
    raw = "|".join([REPRESENTATION_VERSION, request.url.path, query, accept, *map(str, parts)])
    return '"' + hashlib.sha256(raw.encode()).hexdigest()[:40] + '"'


def not_modified(
    request: Request, etag: str, cache_headers: dict[str, str] | None = None
) -> Response | None:
    """A 304 when the client's copy is current (weak comparison, as RFC 9110 asks here)."""
    header = request.headers.get("if-none-match")
    if not header:
        return None
    tags = {t.strip().removeprefix("W/") for t in header.split(",")}
    if "*" in tags or etag in tags:
        headers = CACHE_HEADERS if cache_headers is None else cache_headers
        return Response(status_code=304, headers={"ETag": etag, **headers})
    return None


CACHE_HEADERS = {"Cache-Control": "private, max-age=86400"}
#: For what changes (a list): a client may keep it but asks again each time, with
#: If-None-Match, and gets a 304 while it has not changed.
REVALIDATE_HEADERS = {"Cache-Control": "private, no-cache"}
