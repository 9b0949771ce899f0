"""The scenario editor (/ui/editor) in Debian's headless chromium, offline: a preset opened
from the list, a bad unit answered inline with the API's own message at its field, the dry
run's window bound after the fix, a run and a 2 x 3 sweep started from it. Screenshots of
the editor go to artifacts/ (docs/img/ keeps the ones the README shows, copied from there).
"""

from __future__ import annotations

import json
import math
from typing import Any
from urllib.parse import urlparse

import pytest
from pages import COLOURED_PIXELS, LOCAL, fits, shot
from servicekit import ROOT, Stack

pytestmark = pytest.mark.e2e

DOC_IMG = ROOT / "artifacts"  # docs/img/ holds the chosen ones, copied by hand


def offline(page: Any) -> list[str]:
    """Refuse every request that leaves this machine; return the list of those refused."""
    outside: list[str] = []

    def only_local(route: Any) -> None:
        host = urlparse(route.request.url).hostname or ""
        if host in LOCAL or route.request.url.startswith("data:"):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.context.route("**/*", only_local)
    return outside


def replace_value(page: Any, key: str, value: str) -> int:
    """Select the value of the editor's first `key:` line and type `value` over it, as a
    person would; returns the line's index."""
    line = page.evaluate(
        """(key) => {
          const cm = window.tcpfrEditor.cm;
          for (let i = 0; i < cm.lineCount(); i++) {
            const m = new RegExp("^(\\\\s*(?:- )?" + key + ":\\\\s*)(.*)$").exec(cm.getLine(i));
            if (m) {
              cm.focus();
              cm.setSelection({line: i, ch: m[1].length}, {line: i, ch: m[0].length});
              return i;
            }
          }
          return -1;
        }""",
        key,
    )
    assert line >= 0, f"no {key}: line in the editor"
    page.keyboard.type(value)
    return int(line)


def scenario_in_editor(page: Any) -> dict[str, Any]:
    return dict(page.evaluate("YAML.parse(window.tcpfrEditor.cm.getValue())"))


def test_the_editor_checks_runs_and_sweeps_a_preset(pg_stack: Stack, page: Any) -> None:
    outside = offline(page)
    _opens_the_preset(pg_stack, page)
    _shows_the_apis_error_then_the_fix(pg_stack, page)
    _completes_a_field_name(page)
    run = _runs_it(pg_stack, page)
    _sweeps_it(pg_stack, page, run)
    _asks_what_would_fix_it(pg_stack, page, run)
    assert not outside, outside


def _opens_the_preset(pg_stack: Stack, page: Any) -> None:
    page.goto(pg_stack.base_url + "/ui/")
    page.select_option("#scenario-presets", "riverbed-t1-8k")
    page.click("#open-editor")
    page.wait_for_url("**/ui/editor?preset=riverbed-t1-8k")
    row = page.locator("#dry-flows tr[data-flow=backup]")
    row.wait_for(timeout=30_000)
    assert row.get_attribute("data-window-bytes") == "8760"  # the preset's 8,760 B window
    topology = page.locator("#topology svg")
    preset = pg_stack.client.get("/v1/presets/riverbed-t1-8k").json()["body"]
    assert topology.get_attribute("data-nodes") == str(len(preset["nodes"]))
    assert topology.get_attribute("data-links") == str(len(preset["links"]))
    assert topology.locator("g.link").count() == len(preset["links"])
    for link in preset["links"]:
        assert link["id"] in (
            topology.locator(f"g.link[data-link={link['id']}]").text_content() or ""
        )
    fits(page)
    shot(page, "editor.png")
    DOC_IMG.mkdir(exist_ok=True)
    page.screenshot(path=str(DOC_IMG / "editor.png"))


def _shows_the_apis_error_then_the_fix(pg_stack: Stack, page: Any) -> None:
    # A rate where a size belongs: the API's own message, at its field's line.
    line = replace_value(page, "rcv_buf", "64KBps")
    problem = page.locator('#problems li[data-pointer="/flows/0/tcp/rcv_buf"]')
    problem.wait_for(timeout=15_000)
    answer = pg_stack.client.post("/v1/scenarios/validate", json=scenario_in_editor(page))
    assert answer.status_code == 422
    [error] = answer.json()["errors"]
    assert error["pointer"] == "/flows/0/tcp/rcv_buf"
    assert "'KBps' is a rate, not a size" in error["msg"]  # the hint the API gives
    assert error["msg"] in problem.inner_text()
    assert f"(line {line + 1})" in problem.inner_text()
    marked = page.locator(".CodeMirror-lint-mark-error")
    assert marked.count() == 1 and marked.inner_text() == "64KBps"
    page.screenshot(path=str(DOC_IMG / "editor-error.png"))

    # Fixed: the dry run answers again, with the larger window's bound.
    replace_value(page, "rcv_buf", "64KiB")
    page.wait_for_selector("#dry-flows tr[data-flow=backup]:not([data-window-bytes='8760'])")
    assert page.locator("#problems li.error").count() == 0
    facts = pg_stack.client.post("/v1/scenarios/validate", json=scenario_in_editor(page)).json()
    flow = facts["facts"]["flows"]["backup"]
    row = page.locator("#dry-flows tr[data-flow=backup]")
    shown = float(row.get_attribute("data-window-bps"))
    assert math.isclose(shown, flow["window_bps"], rel_tol=1e-9), (shown, flow)
    assert flow["window_bytes"] > 8760


def _completes_a_field_name(page: Any) -> None:
    # Ctrl-Space completes a field name from the API's schema.
    page.evaluate(
        """() => { const cm = window.tcpfrEditor.cm;
                   cm.focus(); cm.setCursor({line: cm.lineCount(), ch: 0}); }"""
    )
    page.keyboard.type("snd_b")
    page.keyboard.press("Control+Space")
    hints = page.locator(".CodeMirror-hints li")
    hints.first.wait_for()
    assert [h.split(" ")[0] for h in hints.all_inner_texts()] == ["snd_buf"]
    page.keyboard.press("Escape")
    page.evaluate(
        """() => { const cm = window.tcpfrEditor.cm; const last = cm.lineCount() - 1;
                   cm.replaceRange("", {line: last - 1, ch: cm.getLine(last - 1).length},
                                   {line: last, ch: cm.getLine(last).length}); }"""
    )


def _runs_it(pg_stack: Stack, page: Any) -> dict[str, Any]:
    # Shorter, so that the run and the sweep take seconds.
    replace_value(page, "bytes", "2500000")
    page.wait_for_function(
        "document.querySelector('#dry-state').textContent === ''"
        " && !document.querySelector('#problems li.error')"
    )
    page.click("#run")
    page.wait_for_url("**/ui/runs/*")
    page.wait_for_selector("#charts[data-ready=true]", timeout=120_000)
    drawn = page.evaluate(COLOURED_PIXELS, "#charts .chart canvas")
    assert sum(n > 300 for n in drawn) >= 4, drawn
    run = pg_stack.client.get(f"/v1/runs/{page.url.rsplit('/', 1)[1]}").json()
    assert run["scenario_id"] and run["status"] == "succeeded"
    stored = pg_stack.client.get(f"/v1/scenarios/{run['scenario_id']}").json()["scenario"]
    assert stored["flows"][0]["tcp"]["rcv_buf"] == 65536  # what was typed, saved
    return dict(run)


def _sweeps_it(pg_stack: Stack, page: Any, run: dict[str, Any]) -> None:
    # Back in the editor with the saved scenario (the run page's link): a 2 x 3 sweep of it.
    page.click("#edit-scenario")
    page.wait_for_url(f"**/ui/editor?scenario={run['scenario_id']}")
    page.locator("#dry-flows tr[data-flow=backup]").wait_for(timeout=30_000)
    rows = page.locator("#sweep-rows .sweep-row")
    rows.nth(0).locator("[name=path]").fill("flows.backup.tcp.rcv_buf")
    rows.nth(0).locator("[name=values]").fill("8760, 64KiB")
    page.click("#sweep-add")
    rows.nth(1).locator("[name=path]").fill("links.access1.rate")
    rows.nth(1).locator("[name=values]").fill("T1, 2Mbps, T3")
    # Priced before it starts (a dry run), with the API's objection to a path it lacks.
    plan = page.locator("#sweep-plan")
    page.wait_for_function("document.querySelector('#sweep-plan').textContent.includes('6 runs')")
    assert plan.inner_text().startswith("6 points × 1 = 6 runs"), plan.inner_text()
    rows.nth(1).locator("[name=path]").fill("links.nosuch.rate")
    page.wait_for_selector("#sweep-plan.error")
    assert "nosuch" in plan.inner_text(), plan.inner_text()
    rows.nth(1).locator("[name=path]").fill("links.access1.rate")
    page.wait_for_function("document.querySelector('#sweep-plan').textContent.includes('6 runs')")
    page.click("#sweep-form button[type=submit]")
    page.wait_for_url("**/ui/sweeps/*")
    page.wait_for_selector("#overlay[data-ready=true]", timeout=180_000)
    assert page.locator("#points tbody tr").count() == 6
    sweep = pg_stack.client.get(f"/v1/sweeps/{page.url.rsplit('/', 1)[1]}").json()
    assert sweep["run_count"] == 6
    shot(page, "editor-sweep.png")


def _asks_what_would_fix_it(pg_stack: Stack, page: Any, run: dict[str, Any]) -> None:
    # And "what would fix it?" for the saved scenario: the advice page opens (then cancelled:
    # the advisor's runs are test_ui's to wait for).
    page.goto(f"{pg_stack.base_url}/ui/editor?scenario={run['scenario_id']}")
    page.locator("#dry-flows tr[data-flow=backup]").wait_for(timeout=30_000)
    assert page.locator("#advice-flow").input_value() == "backup"
    page.fill("#advice-target", "10")
    page.fill("#advice-budget", "4")
    page.click("#advice-form button[type=submit]")
    page.wait_for_url("**/ui/advice/*")
    advice_id = page.url.rsplit("/", 1)[1]
    advice = pg_stack.client.get(f"/v1/advice/{advice_id}").json()
    assert advice["base"]["scenario_id"] == run["scenario_id"]
    target = advice["request"]["target"]
    assert target["flow"] == "backup" and target["metric"] == "completion_time", target
    assert target["value"] == 10, target  # "10" typed, read as seconds
    pg_stack.client.post(f"/v1/advice/{advice_id}/cancel")


def test_the_editor_draws_pvcs_and_takes_json(pg_stack: Stack, page: Any) -> None:
    """A Frame Relay network pasted as JSON (JSON is YAML): its PVC drawn as an arc labelled
    with its CIR as typed, and the dry run's window for its flow."""
    from pages import policed_backup

    offline(page)
    page.goto(pg_stack.base_url + "/ui/editor")
    page.locator("#dry-flows tr[data-flow=transfer]").wait_for(timeout=30_000)  # the blank
    scenario = policed_backup()
    page.evaluate("(text) => window.tcpfrEditor.cm.setValue(text)", json.dumps(scenario))
    row = page.locator("#dry-flows tr[data-flow=backup]")
    row.wait_for(timeout=15_000)
    pvc = page.locator("#topology g.pvc[data-pvc=p1]")
    assert "CIR 256kbps" in (pvc.text_content() or "")
    facts = pg_stack.client.post("/v1/scenarios/validate", json=scenario).json()
    flow = facts["facts"]["flows"]["backup"]
    assert float(row.get_attribute("data-window-bytes")) == flow["window_bytes"]
    assert page.locator("#topology g.node").count() == len(scenario["nodes"])
    # As YAML for the picture: the same scenario, one field a line.
    page.evaluate(
        "() => { const cm = window.tcpfrEditor.cm; cm.setValue(YAML.stringify(YAML.parse(cm.getValue()))); }"
    )
    page.wait_for_function("document.querySelector('#dry-state').textContent === ''")
    DOC_IMG.mkdir(exist_ok=True)
    page.screenshot(path=str(DOC_IMG / "editor-pvc.png"))


def test_a_run_of_an_inline_scenario_opens_in_the_editor(pg_stack: Stack, page: Any) -> None:
    """A run posted with its scenario inline has no stored scenario: its page's link opens
    the editor on what it simulated (GET /v1/runs/{id}/scenario)."""
    from pages import policed_backup

    offline(page)
    scenario = policed_backup()
    scenario["name"] = "inline-for-the-editor"
    run = pg_stack.client.post("/v1/runs", json={"scenario": scenario}).json()
    page.goto(f"{pg_stack.base_url}/ui/runs/{run['id']}")
    page.click("#edit-scenario")
    page.wait_for_url(f"**/ui/editor?run={run['id']}")
    page.locator("#dry-flows tr[data-flow=backup]").wait_for(timeout=30_000)
    assert scenario_in_editor(page)["name"] == "inline-for-the-editor"
    assert page.locator("#topology g.pvc[data-pvc=p1]").count() == 1
    pg_stack.client.post(f"/v1/runs/{run['id']}/cancel")
