"""The client's pieces that need no server: how the command reads its input, draws its
progress, and turns answers into exit codes (httpx's MockTransport plays the server)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from client import cli
from client.api import ApiError, Client

pytestmark = pytest.mark.unit


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_a_bar_on_a_terminal_and_lines_when_piped() -> None:
    tty = Terminal()
    show = cli.ProgressDisplay("run x", tty)
    show(0.0, "queued")
    show(0.5, "running")
    show(1.0, "succeeded")
    assert tty.getvalue().count("\r") == 3 and tty.getvalue().endswith("succeeded \n")
    assert "[###############---------------]  50% running" in tty.getvalue()

    piped = io.StringIO()
    show = cli.ProgressDisplay("run x", piped)
    for f in (0.0, 0.01, 0.02, 0.15, 0.16, 1.0):
        show(f, "running" if f < 1 else "succeeded")
    assert piped.getvalue().splitlines() == [
        "run x: running 0%",
        "run x: running 15%",
        "run x: succeeded 100%",
    ]


def test_run_body_from_a_preset_a_scenario_file_or_a_request_file(tmp_path: Path) -> None:
    assert cli.run_body("riverbed-t1-64k", 3) == {"preset": "riverbed-t1-64k", "seed": 3}
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: x\nnodes: []\n")
    assert cli.run_body(str(scenario), None) == {"scenario": {"name": "x", "nodes": []}}
    request = tmp_path / "request.json"  # an export bundle's
    request.write_text(json.dumps({"scenario": {"name": "x"}, "seed": 7}))
    assert cli.run_body(str(request), None) == {"scenario": {"name": "x"}, "seed": 7}
    assert cli.run_body(str(request), None, refresh=True)["cache"] == "refresh"
    with pytest.raises(cli.BadInput, match="cannot read"):
        cli.run_body(str(tmp_path / "missing.yaml"), None)
    (tmp_path / "list.yaml").write_text("- 1\n")
    with pytest.raises(cli.BadInput, match="expected a scenario"):
        cli.run_body(str(tmp_path / "list.yaml"), None)


def _serving(status: int, body: Any, content_type: str) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return httpx.Response(status, content=data, headers={"content-type": content_type})

    return httpx.MockTransport(handler)


def test_problems_and_pages_that_are_not_problems() -> None:
    problem = {
        "type": "urn:x",
        "title": "Unprocessable",
        "status": 422,
        "detail": "bad",
        "errors": [{"loc": ["body", "seed"], "msg": "too big", "type": "x", "pointer": "/seed"}],
    }
    transport = _serving(422, problem, "application/problem+json")
    with Client("http://t", transport=transport) as c, pytest.raises(ApiError) as info:
        c.presets()
    assert info.value.status == 422 and info.value.problem.errors[0].pointer == "/seed"
    err = io.StringIO()
    cli.print_problem(info.value, err)
    assert err.getvalue().splitlines() == [
        "error: 422 Unprocessable: bad",
        "  at /seed (body.seed): too big",
    ]
    # A proxy's HTML 502 still becomes an ApiError with its status.
    transport = _serving(502, b"<html>bad gateway</html>", "text/html")
    with Client("http://t", transport=transport) as c, pytest.raises(ApiError) as info:
        c.presets()
    assert info.value.status == 502 and "bad gateway" in (info.value.problem.detail or "")


def test_exit_codes(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def serving(status: int) -> None:
        transport = _serving(
            status, {"type": "t", "title": "x", "status": status}, "application/problem+json"
        )
        monkeypatch.setattr(
            cli, "Client", lambda url, **kw: Client(url, transport=transport, key=kw.get("key"))
        )

    serving(503)
    assert cli.main(["presets"]) == cli.UNREACHABLE
    serving(404)
    assert cli.main(["status", "x"]) == cli.BAD_INPUT
    assert cli.main(["sweep"]) == cli.BAD_INPUT  # neither a file nor --preset
    assert "give a sweep FILE or --preset NAME" in capsys.readouterr().err
