"""/docs carries a runnable request example for every POST that takes a body: each one the
OpenAPI document gives is accepted by the running API (a run from a preset, a run of an
inline scenario, a sweep and a preset's study priced by dry run, an advice request started
and cancelled), and Swagger UI's "Try it out" starts from it."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from servicekit import Stack

pytestmark = pytest.mark.e2e


def _examples(doc: dict[str, Any], op: dict[str, Any]) -> list[Any]:
    """The request-body examples of an operation: the body schema's `examples` (through a
    `$ref`, or the non-null branch of an optional body)."""
    schemas = doc["components"]["schemas"]
    schema = op["requestBody"]["content"]["application/json"]["schema"]
    branches = schema.get("anyOf", [schema])
    for branch in branches:
        while "$ref" in branch:
            branch = schemas[branch["$ref"].rsplit("/", 1)[1]]
        if branch.get("examples"):
            return list(branch["examples"])
    return []


def test_every_post_with_a_body_has_an_example_the_api_accepts(pg_stack: Stack) -> None:
    with pg_stack.client as client:
        doc = client.get("/openapi.json").json()
        posts = {
            path: ops["post"]
            for path, ops in doc["paths"].items()
            if "post" in ops and "requestBody" in ops["post"]
        }
        missing = [path for path, op in posts.items() if not _examples(doc, op)]
        assert not missing, missing
        run_examples = _examples(doc, posts["/v1/runs"])
        assert {"preset", "scenario"} <= {k for ex in run_examples for k in ex}

        runs = []
        for example in run_examples:
            answer = client.post("/v1/runs", json=example)
            assert answer.status_code in (201, 202), answer.text
            runs.append(answer.json()["id"])
        for example in _examples(doc, posts["/v1/scenarios/validate"]):
            answer = client.post("/v1/scenarios/validate", json=example)
            assert answer.status_code == 200, answer.text
            assert answer.json()["cost"]["within_budget"] is True
        for example in _examples(doc, posts["/v1/sweeps"]):
            answer = client.post("/v1/sweeps", params={"dry_run": "true"}, json=example)
            assert answer.status_code == 200, answer.text
        for example in _examples(doc, posts["/v1/presets/{name}/sweep"]):
            answer = client.post(
                "/v1/presets/riverbed-study/sweep", params={"dry_run": "true"}, json=example
            )
            assert answer.status_code == 200, answer.text
        for example in _examples(doc, posts["/v1/advice"]):
            # A fresh seed, so that it is not served from an earlier test's advice.
            answer = client.post("/v1/advice", json={**example, "seed": random.randrange(2**20)})
            assert answer.status_code in (201, 202), answer.text
            advice = answer.json()
            assert client.post(f"/v1/advice/{advice['id']}/cancel").status_code < 300
        for run_id in runs:
            done = pg_stack.wait_run(run_id)
            assert done["status"] == "succeeded", done
        for example in _examples(doc, posts["/v1/runs/{run_id}/remedies/check"]):
            answer = client.post(f"/v1/runs/{runs[0]}/remedies/check", json=example)
            assert answer.status_code in (200, 201, 202), answer.text


def test_try_it_out_starts_from_the_example(pg_stack: Stack, page: Any) -> None:
    doc = pg_stack.client.get("/openapi.json").json()
    first = _examples(doc, doc["paths"]["/v1/runs"]["post"])[0]
    page.goto(pg_stack.base_url + "/docs#/runs/create_run")
    block = page.locator("#operations-runs-create_run")
    block.wait_for(timeout=30_000)
    if not block.locator(".opblock-body").count():
        block.locator(".opblock-summary").click()
    block.locator("button.try-out__btn").click()
    body = block.locator("textarea.body-param__text")
    body.wait_for()
    assert json.loads(body.input_value()) == first
