"""Tenants and API keys against the real thing: an API with authentication on, keys issued
and revoked by the CLI (`python -m api.keys`) as a subprocess on the same Postgres."""

from __future__ import annotations

import hashlib
import random
import re
import secrets
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
import psycopg
import pytest
from journeys import assert_problem
from servicekit import ROOT, TERMINAL, Stack

NOWHERE = "00000000-0000-7000-8000-000000000000"


def cli(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "api.keys", *args],
        cwd=ROOT,
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def issue(stack: Stack, tenant: str, name: str = "ci") -> str:
    return cli(stack, "create", "--tenant", tenant, "--name", name).stdout.strip()


def keys_listed(stack: Stack, tenant: str) -> list[dict[str, Any]]:
    return orjson.loads(cli(stack, "list", "--tenant", tenant, "--json").stdout)


@dataclass
class Tenant:
    name: str
    key: str
    client: httpx.Client

    def wait(self, run_id: str, timeout: float = 120) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            run = self.client.get(f"/v1/runs/{run_id}").json()
            if run["status"] in TERMINAL or time.monotonic() > deadline:
                return run
            time.sleep(0.1)


@pytest.fixture(scope="module")
def tenants(pg_auth_stack: Stack) -> Iterator[tuple[Tenant, Tenant]]:
    """Two tenants, each with a key from the CLI; A presents it as Bearer, B as X-API-Key."""
    tag = secrets.token_hex(3)
    a_key, b_key = issue(pg_auth_stack, f"acme-{tag}"), issue(pg_auth_stack, f"globex-{tag}")
    a = httpx.Client(
        base_url=pg_auth_stack.base_url, timeout=30, headers={"Authorization": f"Bearer {a_key}"}
    )
    b = httpx.Client(base_url=pg_auth_stack.base_url, timeout=30, headers={"X-API-Key": b_key})
    with a, b:
        yield Tenant(f"acme-{tag}", a_key, a), Tenant(f"globex-{tag}", b_key, b)


def assert_401(resp: httpx.Response) -> None:
    assert_problem(resp, 401)
    assert resp.headers["www-authenticate"] == "Bearer"


def test_keys_are_stored_hashed(pg_auth_stack: Stack, tenants: tuple[Tenant, Tenant]) -> None:
    a, _ = tenants
    match = re.fullmatch(r"tcpfr_([0-9a-f]{12})_([A-Za-z0-9_-]{43})", a.key)
    assert match, a.key
    with psycopg.connect(pg_auth_stack.env["DATABASE_URL"]) as conn:
        rows = conn.execute(
            "SELECT k.prefix, k.key_hash, k::text FROM api_keys k JOIN tenants t"
            " ON t.id = k.tenant_id WHERE t.name = %s",
            (a.name,),
        ).fetchall()
    assert len(rows) == 1
    prefix, key_hash, whole_row = rows[0]
    assert prefix == match[1]
    assert key_hash == "sha256:" + hashlib.sha256(a.key.encode()).hexdigest()
    assert match[2] not in whole_row  # the secret is nowhere in the row


def test_no_wrong_or_malformed_key_is_401(pg_auth_stack: Stack) -> None:
    well_formed = f"tcpfr_{secrets.token_hex(6)}_{secrets.token_urlsafe(32)}"
    with pg_auth_stack.client as client:
        for method, path in [
            ("GET", "/v1/runs"),
            ("GET", f"/v1/runs/{NOWHERE}"),
            ("GET", f"/v1/runs/{NOWHERE}/events"),
            ("GET", f"/v1/runs/{NOWHERE}/series"),
            ("GET", f"/v1/runs/{NOWHERE}/frame?keys=x"),
            ("POST", f"/v1/runs/{NOWHERE}/cancel"),
            ("GET", "/v1/scenarios"),
            ("DELETE", f"/v1/scenarios/{NOWHERE}"),
            ("GET", "/v1/sweeps"),
            ("GET", f"/v1/sweeps/{NOWHERE}"),
            ("POST", "/v1/presets/riverbed-study/sweep?dry_run=true"),
            ("GET", f"/v1/compare?runs={NOWHERE}"),
        ]:
            assert_401(client.request(method, path))
            for headers in (
                {"Authorization": f"Bearer {well_formed}"},
                {"X-API-Key": well_formed},
                {"Authorization": "Bearer garbage"},
                {"Authorization": f"Basic {well_formed}"},
                {"X-API-Key": ""},
            ):
                assert_401(client.request(method, path, headers=headers))
        assert_401(client.post("/v1/runs", json={"preset": "riverbed-t1-64k"}))
        assert_401(client.post("/v1/scenarios/validate", json={"name": "x"}))
        # Public: health, the preset catalogue, the OpenAPI document.
        for path in ("/healthz", "/readyz", "/v1/presets", "/v1/presets/riverbed-t1-8k"):
            assert client.get(path).status_code == 200, path
        doc = client.get("/openapi.json").json()
        assert set(doc["components"]["securitySchemes"]) == {"BearerKey", "ApiKeyHeader"}
        assert "401" in doc["paths"]["/v1/runs"]["get"]["responses"]
        assert "security" not in doc["paths"]["/v1/presets"]["get"]


def test_another_tenants_ids_are_404(
    pg_stack: Stack, pg_auth_stack: Stack, tenants: tuple[Tenant, Tenant]
) -> None:
    a, b = tenants
    body = a.client.get("/v1/presets/riverbed-t1-64k").json()["body"]
    body["name"] = f"acme-wan-{uuid.uuid4().hex[:6]}"
    scenario = a.client.post("/v1/scenarios", json=body)
    assert scenario.status_code == 201, scenario.text
    scenario_id = scenario.json()["id"]
    created = a.client.post("/v1/runs", json={"scenario_id": scenario_id})
    assert created.status_code in (201, 202), created.text
    run_id = created.json()["id"]
    assert a.wait(run_id)["status"] == "succeeded"
    key = "flow.backup.cwnd"

    a_paths = [
        f"/v1/runs/{run_id}",
        f"/v1/runs/{run_id}/scenario",
        f"/v1/runs/{run_id}/events",
        f"/v1/runs/{run_id}/series",
        f"/v1/runs/{run_id}/series/{key}",
        f"/v1/runs/{run_id}/frame?keys={key}",
        f"/v1/scenarios/{scenario_id}",
    ]
    for path in a_paths:
        assert a.client.get(path).status_code == 200, path
        # B is told exactly what an id that never existed gets: not 403, nothing to learn.
        theirs = assert_problem(b.client.get(path), 404)
        nobody = assert_problem(b.client.get(path.replace(run_id, NOWHERE)), 404)
        assert theirs["title"] == nobody["title"] and theirs["type"] == nobody["type"]
        # Nor does the auth-off API on the same database, acting as the default tenant.
        assert_problem(pg_stack.client.get(path), 404)
    assert_problem(b.client.post(f"/v1/runs/{run_id}/cancel"), 404)
    assert_problem(b.client.delete(f"/v1/scenarios/{scenario_id}"), 404)
    assert a.client.get(f"/v1/scenarios/{scenario_id}").status_code == 200  # not deleted

    assert run_id not in {r["id"] for r in b.client.get("/v1/runs").json()["items"]}
    assert b.client.get("/v1/runs", params={"scenario_id": scenario_id}).json()["items"] == []
    assert scenario_id not in {s["id"] for s in b.client.get("/v1/scenarios").json()["items"]}
    assert run_id in {r["id"] for r in a.client.get("/v1/runs").json()["items"]}
    assert scenario_id in {s["id"] for s in a.client.get("/v1/scenarios").json()["items"]}

    # B cannot run A's stored scenario: it is as unknown as a made-up id, at that field.
    problem = assert_problem(b.client.post("/v1/runs", json={"scenario_id": scenario_id}), 422)
    assert problem["errors"][0]["loc"] == ["body", "scenario_id"]

    # Sweeps and comparisons are scoped the same way.
    sweeps_are_scoped(a, b, scenario_id=scenario_id, run_id=run_id, key=key)


def sweeps_are_scoped(a: Tenant, b: Tenant, *, scenario_id: str, run_id: str, key: str) -> None:
    """B can neither sweep A's stored scenario nor see A's sweep, its runs, its summary or
    a comparison of A's run: each is a 404 (or a 422 at the field), as a made-up id."""
    spec = {
        "base": {"scenario_id": scenario_id},
        "parameters": {"flows.backup.tcp.rcv_buf": [32768, 65535]},
        "replications": 1,
    }
    problem = assert_problem(b.client.post("/v1/sweeps", json=spec), 422)
    assert problem["errors"][0]["loc"] == ["body", "base", "scenario_id"]
    sweep = a.client.post("/v1/sweeps", json=spec)
    assert sweep.status_code in (201, 202), sweep.text
    sweep_id = sweep.json()["id"]
    deadline = time.monotonic() + 120
    while a.client.get(f"/v1/sweeps/{sweep_id}").json()["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, "sweep did not finish"
        time.sleep(0.2)
    for path in (
        f"/v1/sweeps/{sweep_id}",
        f"/v1/sweeps/{sweep_id}/runs",
        f"/v1/sweeps/{sweep_id}/summary",
        f"/v1/compare?runs={run_id}",
        f"/v1/compare/series?runs={run_id}&key={key}",
    ):
        assert a.client.get(path).status_code == 200, path
        assert_problem(b.client.get(path), 404)
    assert_problem(b.client.post(f"/v1/sweeps/{sweep_id}/cancel"), 404)
    assert sweep_id not in {s["id"] for s in b.client.get("/v1/sweeps").json()["items"]}
    assert sweep_id in {s["id"] for s in a.client.get("/v1/sweeps").json()["items"]}


def test_the_result_cache_is_per_tenant(tenants: tuple[Tenant, Tenant]) -> None:
    a, b = tenants
    body = {"preset": "riverbed-t1-64k", "seed": random.randrange(1, 2**31)}
    first = a.client.post("/v1/runs", json=body)
    assert first.status_code == 202, first.text
    a_run = a.wait(first.json()["id"])
    assert a_run["status"] == "succeeded"
    hit = a.client.post("/v1/runs", json=body)
    assert hit.status_code == 201 and hit.json()["source_run_id"] == a_run["id"]

    # The same simulation asked for by B is simulated again for B, not served from A's run.
    mine = b.client.post("/v1/runs", json=body)
    assert mine.status_code == 202, mine.text
    assert mine.json()["cache_hit"] is False and mine.json()["source_run_id"] is None
    b_run = b.wait(mine.json()["id"])
    assert b_run["status"] == "succeeded" and b_run["cache_hit"] is False
    again = b.client.post("/v1/runs", json=body)
    assert again.status_code == 201 and again.json()["source_run_id"] == b_run["id"]
    # Same scenario, seed and engine: the same figures, to the bit, whoever asked.
    assert b_run["summary"]["flows"] == a_run["summary"]["flows"]


def test_idempotency_keys_are_per_tenant(
    pg_auth_stack: Stack, tenants: tuple[Tenant, Tenant]
) -> None:
    a, b = tenants
    idem = {"Idempotency-Key": str(uuid.uuid4())}
    body = {"preset": "riverbed-t1-64k", "seed": random.randrange(1, 2**31), "cache": "refresh"}
    a_first = a.client.post("/v1/runs", json=body, headers=idem)
    b_first = b.client.post("/v1/runs", json=body, headers=idem)
    assert a_first.status_code == 202 and b_first.status_code == 202, b_first.text
    assert a_first.json()["id"] != b_first.json()["id"]
    a_again = a.client.post("/v1/runs", json=body, headers=idem)
    b_again = b.client.post("/v1/runs", json=body, headers=idem)
    assert a_again.status_code == 200 and a_again.json()["id"] == a_first.json()["id"]
    assert b_again.status_code == 200 and b_again.json()["id"] == b_first.json()["id"]
    # A key A used is free for a third tenant even with another body (A would get a 422).
    c_key = issue(pg_auth_stack, f"initech-{secrets.token_hex(3)}")
    other = {**body, "seed": body["seed"] + 1}
    with pg_auth_stack.client as c:
        resp = c.post("/v1/runs", json=other, headers={**idem, "X-API-Key": c_key})
        assert resp.status_code == 202, resp.text
    assert_problem(a.client.post("/v1/runs", json=other, headers=idem), 422)
    for t, first in ((a, a_first), (b, b_first)):
        assert t.wait(first.json()["id"])["status"] == "succeeded"


def test_revoked_key_is_401_at_once(pg_auth_stack: Stack, tenants: tuple[Tenant, Tenant]) -> None:
    a, _ = tenants
    key = issue(pg_auth_stack, a.name, name="laptop")
    headers = {"Authorization": f"Bearer {key}"}
    with pg_auth_stack.client as client:
        assert client.get("/v1/runs", headers=headers).status_code == 200
        listed = {k["name"]: k for k in keys_listed(pg_auth_stack, a.name)}
        used = listed["laptop"]["last_used_at"]
        assert used is not None and listed["laptop"]["revoked_at"] is None
        assert listed["laptop"]["prefix"] == key[: len("tcpfr_") + 12]
        # A second use within the minute writes nothing: last_used_at is not per request.
        assert client.get("/v1/runs", headers=headers).status_code == 200
        assert {k["name"]: k for k in keys_listed(pg_auth_stack, a.name)}["laptop"][
            "last_used_at"
        ] == used

        done = cli(pg_auth_stack, "revoke", listed["laptop"]["prefix"])
        assert "revoked" in done.stdout
        assert_401(client.get("/v1/runs", headers=headers))
        assert_401(client.get("/v1/runs", headers={"X-API-Key": key}))
        listed = {k["name"]: k for k in keys_listed(pg_auth_stack, a.name)}
        assert listed["laptop"]["revoked_at"] is not None
        # The tenant's other key is untouched.
        assert a.client.get("/v1/runs").status_code == 200


def test_work_done_with_auth_off_belongs_to_tenant_default(
    pg_stack: Stack, pg_auth_stack: Stack, tenants: tuple[Tenant, Tenant]
) -> None:
    with pg_stack.client as open_api:
        run = open_api.post("/v1/runs", json={"preset": "riverbed-t1-64k"}).json()
    key = issue(pg_auth_stack, "default", name=f"ops-{secrets.token_hex(3)}")
    with pg_auth_stack.client as client:
        got = client.get(f"/v1/runs/{run['id']}", headers={"X-API-Key": key})
        assert got.status_code == 200 and got.json()["id"] == run["id"]
    assert_problem(tenants[0].client.get(f"/v1/runs/{run['id']}"), 404)


def test_embedded_mode_runs_without_keys_and_says_so(embedded_stack: Stack) -> None:
    with embedded_stack.client as client:
        assert client.get("/v1/runs").status_code == 200
        assert client.get("/v1/scenarios").status_code == 200
    assert "AUTHENTICATION IS OFF" in embedded_stack.logs(lines=10_000)


def test_auth_on_says_so(pg_auth_stack: Stack) -> None:
    logs = pg_auth_stack.logs(lines=10_000)
    assert "authentication is on" in logs and "AUTHENTICATION IS OFF" not in logs


def test_compose_runs_with_auth_on(monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    from settings import Settings

    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    for service in ("api", "migrate"):  # `docker compose run --rm api python -m api.keys`
        value = compose["services"][service]["environment"]["TCPFR_AUTH"]
        monkeypatch.setenv("TCPFR_AUTH", str(value))
        assert Settings(_env_file=None).auth is True, service


def test_every_route_but_the_public_ones_needs_a_key() -> None:
    """A router added later (sweeps, compare, ...) is protected unless made public on purpose."""
    from api.main import create_app
    from settings import Settings

    public = {"/healthz", "/readyz", "/v1/presets", "/v1/presets/{name}"}
    doc = create_app(Settings(_env_file=None)).openapi()
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            if path in public:
                assert "security" not in op, (method, path)
            else:
                assert op.get("security") == [{"BearerKey": []}, {"ApiKeyHeader": []}], (
                    method,
                    path,
                )
                assert "401" in op["responses"], (method, path)
