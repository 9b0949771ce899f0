"""The runs list is served from its last rendering while its rows are unchanged: every write
(a new run, a worker's progress and ending, a cancel, a deletion, a scenario's deletion)
shows in the very next list, on each database, through a second API process too; pages,
cursors and ETags behave as documented."""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from servicekit import TERMINAL, Stack, api_beside
from sqlalchemy import Engine, delete, update

from api.runs.schemas import RunListItem
from settings import Settings
from store.db import make_engine
from store.models import Run, RunEvent

FIELDS = list(RunListItem.model_fields)
STAGE = {"queued": 0, "running": 1, "succeeded": 2, "failed": 2, "cancelled": 2}


@pytest.fixture(params=["postgres", "embedded", "postgres-replica"])
def pair(request: pytest.FixtureRequest) -> Iterator[tuple[Stack, Stack]]:
    """(where runs are written, where the list is read). The replica is a second API
    process with a request-rate limit, so its lists go through the endpoint rather than
    the before-routing shortcut, and its cache never saw the writes."""
    if request.param == "embedded":
        stack = request.getfixturevalue("embedded_stack")
        yield stack, stack
        return
    stack = request.getfixturevalue("pg_stack")
    if request.param == "postgres":
        yield stack, stack
        return
    with api_beside(stack, "list-replica", TCPFR_RATE_LIMIT="100000/second") as replica:
        yield stack, replica


def database(stack: Stack) -> Engine:
    """The stack's database, to write as a worker or an operator would."""
    settings = Settings(
        _env_file=None,
        database_url=stack.env.get("DATABASE_URL"),
        data_dir=Path(stack.env["TCPFR_DATA_DIR"]),
    )
    return make_engine(settings)


def listed(client: httpx.Client, **params: Any) -> dict[str, dict[str, Any]]:
    resp = client.get("/v1/runs", params={"limit": 500, **params})
    assert resp.status_code == 200, resp.text
    return {item["id"]: item for item in resp.json()["items"]}


def as_listed(doc: dict[str, Any]) -> dict[str, Any]:
    return {key: doc[key] for key in FIELDS}


def submit(client: httpx.Client, **body: Any) -> dict[str, Any]:
    body = {"preset": "riverbed-t1-8k", "seed": random.randrange(1, 2**31), **body}
    resp = client.post("/v1/runs", json=body)
    assert resp.status_code in (201, 202), resp.text
    return resp.json()


def test_a_new_run_and_each_change_of_it_show_at_once(pair: tuple[Stack, Stack]) -> None:
    writer, reader = pair
    with writer.client as w, reader.client as r:
        first, again = r.get("/v1/runs"), r.get("/v1/runs")
        assert again.content == first.content and again.headers["etag"] == first.headers["etag"]

        run = submit(w, cache="refresh")
        assert run["id"] in listed(r)
        # The list is read after the run's document, so it is never behind it.
        while True:
            doc = w.get(f"/v1/runs/{run['id']}").json()
            item = listed(r)[run["id"]]
            assert STAGE[item["status"]] >= STAGE[doc["status"]], (item, doc)
            if doc["status"] in TERMINAL:
                break
        assert doc["status"] == "succeeded"
        assert listed(r)[run["id"]] == as_listed(doc)

        other = submit(w, cache="refresh")
        listed(r)  # cached with the run queued (or running)
        cancelled = w.post(f"/v1/runs/{other['id']}/cancel").json()
        item = listed(r)[other["id"]]
        assert item["status"] == "cancelled" or item["cancel_requested"] is True, item
        assert cancelled["status"] == "cancelled" or cancelled["cancel_requested"] is True
        done = writer.wait_run(other["id"])
        assert listed(r)[other["id"]] == as_listed(done)


def test_any_write_to_a_listed_row_shows_at_once(pair: tuple[Stack, Stack]) -> None:
    """Writes made beside the API (as a worker's, or an operator's): the smallest change
    of a float, text full of quotes and separators, and a deletion."""
    writer, reader = pair
    engine = database(writer)
    try:
        with writer.client as w, reader.client as r:
            run = submit(w, cache="refresh")
            w.post(f"/v1/runs/{run['id']}/cancel")
            run_id = uuid.UUID(writer.wait_run(run["id"])["id"])

            def write(**values: Any) -> dict[str, Any]:
                listed(r)
                with engine.begin() as conn:
                    conn.execute(update(Run).where(Run.id == run_id).values(**values))
                return listed(r)[str(run_id)]

            assert write(progress=0.5)["progress"] == 0.5
            assert write(progress=math.nextafter(0.5, 1.0))["progress"] == math.nextafter(0.5, 1)
            tricky = "it's \"done\"; a,b ['x'] \\ NULL ;;,"
            error = {"type": "X", "message": tricky}
            assert write(error=error)["error"] == error
            assert write(error={"type": "X", "message": tricky + " "})["error"]["message"] != tricky
            assert write(attempts=7)["attempts"] == 7

            listed(r)
            with engine.begin() as conn:
                conn.execute(delete(RunEvent).where(RunEvent.run_id == run_id))
                conn.execute(delete(Run).where(Run.id == run_id))
            assert str(run_id) not in listed(r)
    finally:
        engine.dispose()


def test_a_deleted_scenario_leaves_its_runs_at_once(pair: tuple[Stack, Stack]) -> None:
    writer, reader = pair
    with writer.client as w, reader.client as r:
        body = w.get("/v1/presets/riverbed-t1-8k").json()["body"]
        body["name"] = f"list-{uuid.uuid4().hex[:8]}"
        scenario_id = w.post("/v1/scenarios", json=body).json()["id"]
        run = submit(w, preset=None, scenario_id=scenario_id)
        w.post(f"/v1/runs/{run['id']}/cancel")
        assert list(listed(r, scenario_id=scenario_id)) == [run["id"]]
        assert listed(r)[run["id"]]["scenario_id"] == scenario_id

        assert w.delete(f"/v1/scenarios/{scenario_id}").status_code == 204
        assert listed(r, scenario_id=scenario_id) == {}
        assert listed(r)[run["id"]]["scenario_id"] is None
        writer.wait_run(run["id"])


def test_etag_and_304(pair: tuple[Stack, Stack]) -> None:
    writer, reader = pair
    with writer.client as w, reader.client as r:
        page = r.get("/v1/runs", params={"limit": 3})
        etag = page.headers["etag"]
        assert page.headers["cache-control"] == "private, no-cache"
        for tag in (etag, f"W/{etag}", f'"other", {etag}'):
            same = r.get("/v1/runs", params={"limit": 3}, headers={"If-None-Match": tag})
            assert same.status_code == 304 and same.content == b""
            assert same.headers["etag"] == etag
        # Another limit is another page, with its own tag.
        assert r.get("/v1/runs", params={"limit": 4}).headers["etag"] != etag

        run = submit(w, cache="refresh")
        w.post(f"/v1/runs/{run['id']}/cancel")
        changed = r.get("/v1/runs", params={"limit": 3}, headers={"If-None-Match": etag})
        assert changed.status_code == 200 and changed.headers["etag"] != etag
        assert run["id"] in {item["id"] for item in changed.json()["items"]}
        writer.wait_run(run["id"])


def test_pages_follow_cursors_as_before(pair: tuple[Stack, Stack]) -> None:
    writer, reader = pair
    with writer.client as w, reader.client as r:
        body = w.get("/v1/presets/riverbed-t1-8k").json()["body"]
        body["name"] = f"pages-{uuid.uuid4().hex[:8]}"
        scenario_id = w.post("/v1/scenarios", json=body).json()["id"]
        ids = []
        for _ in range(7):
            run = submit(w, preset=None, scenario_id=scenario_id, cache="refresh")
            w.post(f"/v1/runs/{run['id']}/cancel")
            ids.append(run["id"])
        for run_id in ids:
            writer.wait_run(run_id)

        whole = r.get("/v1/runs", params={"scenario_id": scenario_id}).json()
        assert [item["id"] for item in whole["items"]] == ids[::-1]  # newest first
        assert whole["next_cursor"] is None

        def walk() -> list[bytes]:
            bodies, cursor = [], None
            while True:
                params = {"scenario_id": scenario_id, "limit": 3}
                if cursor is not None:
                    params["cursor"] = cursor
                resp = r.get("/v1/runs", params=params)
                assert resp.status_code == 200, resp.text
                bodies.append(resp.content)
                cursor = resp.json()["next_cursor"]
                if cursor is None:
                    return bodies

        pages = walk()
        assert walk() == pages  # again, from the cache: the same bytes
        shown = [orjson.loads(page)["items"] for page in pages]
        assert [len(items) for items in shown] == [3, 3, 1]
        items = [item for page_items in shown for item in page_items]
        assert items == whole["items"]
        assert r.get(
            "/v1/runs", params={"status": "queued", "scenario_id": scenario_id}
        ).json() == {
            "items": [],
            "next_cursor": None,
        }
