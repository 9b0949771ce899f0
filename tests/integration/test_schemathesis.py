"""Schemathesis against the live API: requests generated from openapi/openapi.json, valid
and invalid, for every operation, each response judged by every schemathesis check (no
5xx, status codes, content types and headers, bodies against their schemas, invalid data
refused, authentication not ignored) but one: `positive_data_acceptance` (ST202), since a
JSON Schema cannot state what our 422s judge across fields (a flow's stop after its start,
ids that must name nodes of the same scenario, a preset that is a study): those requests
are schema-valid and still wrong.

The API under test is a second API process on ``pg_stack``'s Postgres, Redis and workers
(Postgres is the strict one: it refuses NUL characters and out-of-range numbers that SQLite
stores), with a small simulation budget so the runs it accepts cost the workers little.
Bounded: a few dozen cases per operation and generation mode, and a deadline over all.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from journeys import assert_problem
from schemathesis import GenerationMode
from schemathesis.checks import positive_data_acceptance
from schemathesis.core.failures import FailureGroup
from servicekit import Stack, api_beside
from test_tenants import issue

OPENAPI = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"
EXAMPLES = 20  # per operation and generation mode (each case is judged by several requests)
DEADLINE = 260.0  # seconds for all of it (41 operations); cases past it are not sent
JSON = {"content-type": "application/json"}
BUDGET = 2_000_000
EXCLUDED_CHECKS = [
    positive_data_acceptance
]  # see the module's docstring  # simulation events a run may be estimated at: a few seconds of a worker


@pytest.fixture(scope="module")
def api(pg_stack: Stack) -> Iterator[Stack]:
    with api_beside(
        pg_stack,
        "schemathesis",
        TCPFR_MAX_EVENTS_PER_RUN=str(BUDGET),
        TCPFR_AUTH="true",  # so that ignoring authentication would be caught
    ) as stack:
        yield stack


@pytest.fixture(scope="module")
def key(api: Stack) -> str:
    return issue(api, f"fuzz-{secrets.token_hex(4)}")


@pytest.fixture(scope="module")
def known_ids(api: Stack, key: str) -> dict[str, str]:
    """Ids of things that exist, so generated requests reach past the 404 of an unknown id:
    a finished run (its series, frame, scenario), a stored scenario, a finished sweep and a
    finished remedy check (an advice)."""
    with api.client as client:
        client.headers["X-API-Key"] = key
        run = client.post("/v1/runs", json={"preset": "riverbed-t1-8k", "seed": 4242}).json()
        body = client.get("/v1/presets/riverbed-t1-8k").json()["body"]
        scenario = client.post("/v1/scenarios", json=body).json()
        sweep = client.post(
            "/v1/sweeps",
            json={
                "base": {"preset": "riverbed-t1-8k"},
                "parameters": {"flows.backup.tcp.rcv_buf": [8760, 65535]},
                "replications": 2,
            },
        ).json()
        deadline = time.monotonic() + 300  # a remedy check runs several simulations
        while client.get(f"/v1/runs/{run['id']}").json()["status"] != "succeeded":
            assert time.monotonic() < deadline, api.logs()
            time.sleep(0.3)
        while client.get(f"/v1/sweeps/{sweep['id']}").json()["status"] != "succeeded":
            assert time.monotonic() < deadline, api.logs()
            time.sleep(0.3)
        check = client.post(f"/v1/runs/{run['id']}/remedies/check").json()
        while client.get(f"/v1/advice/{check['id']}").json()["status"] != "succeeded":
            assert time.monotonic() < deadline, api.logs()
            time.sleep(0.3)
    return {
        "run_id": run["id"],
        "scenario_id": scenario["id"],
        "sweep_id": sweep["id"],
        "advice_id": check["id"],
    }


def _refused_too_large(failure: Any, status: int) -> bool:
    """An invalid request refused as too large is refused: a body with 413 (over
    TCPFR_MAX_BODY_BYTES, before it is even read), a query with 414 (a target longer than
    the server reads; both documented); negative_data_rejection only counts other 4xx."""
    return status in (413, 414) and "Schema-violating request accepted" in str(
        getattr(failure, "title", "")
    )


def _fuzz(
    operation: Any,
    mode: GenerationMode,
    *,
    pinned: dict[str, str],
    base_url: str,
    session: requests.Session,
    deadline: float,
    sent: dict[str, int],
    failures: list[dict[str, Any]],
) -> None:
    """Send up to EXAMPLES generated cases of one operation in one mode, until the deadline;
    `pinned` path parameters are given, not generated."""

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: report every one
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode, path_parameters=pinned or None))
    def send(case: Any) -> None:
        if time.monotonic() > deadline:
            return
        response = case.call(base_url=base_url, session=session, timeout=30)
        sent[operation.label] = sent.get(operation.label, 0) + 1
        try:
            case.validate_response(
                response,
                excluded_checks=EXCLUDED_CHECKS,
                transport_kwargs={"base_url": base_url, "session": session, "timeout": 30},
            )
        except FailureGroup as group:
            failures.extend(
                {
                    "operation": operation.label,
                    "mode": mode.value,
                    "check": getattr(failure, "title", type(failure).__name__),
                    "status": response.status_code,
                    "request": case.as_curl_command(),
                    "response": response.text[:300],
                }
                for failure in group.exceptions
                if not _refused_too_large(failure, response.status_code)
            )

    # Nothing to make invalid (no parameters, no body) is Unsatisfiable: positive only.
    with contextlib.suppress(Unsatisfiable):
        send()


def test_generated_requests_pass_every_check(
    api: Stack, key: str, known_ids: dict[str, str]
) -> None:
    schema = schemathesis.openapi.from_path(OPENAPI)

    @schema.auth()
    class ApiKey:
        """A valid key on every case, where schemathesis knows it is, so its auth checks
        can take it away or spoil it and expect a 401."""

        def get(self, case: Any, ctx: Any) -> str:
            return key

        def set(self, case: Any, data: str, ctx: Any) -> None:
            case.headers = {**(case.headers or {}), "X-API-Key": data}

    operations = [result.ok() for result in schema.get_all_operations()]
    session = requests.Session()
    deadline = time.monotonic() + DEADLINE
    sent: dict[str, int] = {}
    failures: list[dict[str, Any]] = []
    for operation in operations:
        names = {p.name for p in operation.path_parameters}
        pinned = {k: v for k, v in known_ids.items() if k in names}
        passes = [(GenerationMode.POSITIVE, {}), (GenerationMode.NEGATIVE, {})]
        if pinned:  # and once more, valid requests about things that exist
            passes.append((GenerationMode.POSITIVE, pinned))
        for mode, pins in passes:
            _fuzz(
                operation,
                mode,
                pinned=pins,
                base_url=api.base_url,
                session=session,
                deadline=deadline,
                sent=sent,
                failures=failures,
            )

    total = sum(sent.values())
    kinds = Counter(f["check"] for f in failures)
    print(
        f"\nschemathesis: {total} cases over {len(sent)} of {len(operations)} operations, "
        f"{len(failures)} failed checks {dict(kinds)}"
    )
    for label, count in sorted(sent.items()):
        print(f"  {count:4d}  {label}")
    for failure in failures[:20]:
        print(f"failed: {failure}")
    assert len(sent) == len(operations), "some operations were never exercised"
    assert total >= len(operations) * 10
    assert not failures, failures[:5]


def test_values_the_database_cannot_hold_are_refused_not_a_500(
    api: Stack, key: str, known_ids: dict[str, str]
) -> None:
    """What schemathesis found, and its kin: text holding U+0000 (PostgreSQL text cannot),
    integers past 64 bits (the JSON encoder cannot), Infinity (JSON cannot). All are 4xx."""
    run = known_ids["run_id"]
    with api.client as client:
        client.headers["X-API-Key"] = key
        body = client.get("/v1/presets/riverbed-t1-8k").json()["body"]
        bodies: list[tuple[dict[str, Any], list[str | int]]] = [
            ({**body, "name": "a\x00b"}, ["name"]),
            ({**body, "description": "x\x00"}, ["description"]),
            # JSON's escape of a lone surrogate: Python's parser takes it, pydantic refuses it.
            ({**body, "name": "a\ud800b"}, ["name"]),
        ]
        big = json.loads(json.dumps(body))
        big["links"][1]["queue"] = {"limit_packets": 2**70}
        bodies.append((big, ["links", 1, "queue", "limit_packets"]))
        scripted = json.loads(json.dumps(body))
        scripted["links"][1]["loss"] = {"model": "script", "drop": [2**64]}
        bodies.append((scripted, ["links", 1, "loss", "drop", 0]))
        for bad, loc in bodies:
            raw = json.dumps(bad)
            for path, content in [
                ("/v1/scenarios", raw),
                ("/v1/scenarios/validate", raw),
                ("/v1/runs", f'{{"scenario": {raw}}}'),
            ]:
                resp = client.post(path, content=content, headers=JSON)
                problem = assert_problem(resp, 422)
                assert problem["errors"][0]["loc"][-len(loc) :] == loc, problem
        infinite = json.dumps(body).replace('"cubic_c": 0.4', '"cubic_c": Infinity')
        assert "Infinity" in infinite  # not JSON, but Python's parser (FastAPI's) takes it
        assert_problem(client.post("/v1/scenarios", content=infinite, headers=JSON), 422)
        assert_problem(client.get("/v1/runs", params={"preset": "a\x00"}), 422)
        assert_problem(client.post("/v1/runs", json={"preset": "a\x00"}), 422)
        assert_problem(client.get(f"/v1/runs/{run}/series/a%00b"), 404)
        assert_problem(client.get(f"/v1/runs/{run}/frame", params={"keys": "a\x00b"}), 404)
