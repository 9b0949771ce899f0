"""The web pages: `/` → `/ui/`, the runs and sweeps list, the scenario editor, a run's page,
a sweep's page, an advice's page.

Plain HTML, CSS and JavaScript over the public API (``assets/api.js`` is its whole client);
uPlot draws the charts, CodeMirror is the editor (``assets/vendor``, ``make ui-vendor``). The pages are static: they
hold no tenant's data, so they need no key; the API calls they make do.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

HERE = Path(__file__).resolve().parent
PAGES = {
    name: (HERE / f"{name}.html").read_bytes()
    for name in ("index", "editor", "run", "sweep", "advice")
}
# Pages change with the code, not per request; assets are named the same across versions,
# so the browser asks again (and gets a 304) rather than keep a stale script.
PAGE_HEADERS = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}


def _page(name: str) -> HTMLResponse:
    return HTMLResponse(PAGES[name], headers=PAGE_HEADERS)


def install(app: FastAPI) -> None:
    @app.get("/", include_in_schema=False)
    async def root() -> RedirectResponse:
        return RedirectResponse("/ui/", status_code=307)

    @app.get("/ui", include_in_schema=False)
    async def ui_bare() -> RedirectResponse:
        return RedirectResponse("/ui/", status_code=307)

    @app.get("/ui/", include_in_schema=False)
    async def index() -> HTMLResponse:
        return _page("index")

    @app.get("/ui/editor", include_in_schema=False)
    async def editor() -> HTMLResponse:
        return _page("editor")

    # The id is checked by the page's API calls (a 404 shows there); a malformed one is
    # FastAPI's 422 here already.
    @app.get("/ui/runs/{run_id}", include_in_schema=False)
    async def run_page(run_id: uuid.UUID) -> HTMLResponse:
        return _page("run")

    @app.get("/ui/sweeps/{sweep_id}", include_in_schema=False)
    async def sweep_page(sweep_id: uuid.UUID) -> HTMLResponse:
        return _page("sweep")

    @app.get("/ui/advice/{advice_id}", include_in_schema=False)
    async def advice_page(advice_id: uuid.UUID) -> HTMLResponse:
        return _page("advice")

    app.mount("/ui/assets", StaticFiles(directory=HERE / "assets"), name="ui-assets")
