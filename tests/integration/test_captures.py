"""Packet captures through the whole service: a scenario asking for one is simulated by a
real worker, the file is stored with the result (Postgres, and SQLite in the embedded
mode), listed in the run document, served by `GET /v1/runs/{id}/pcap` and saved by
`tcpfr export --pcap`; tshark reads what comes back."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml
from clikit import read_bundle, tcpfr
from journeys import assert_problem
from servicekit import Stack
from tshark import count, expert_problems, require_tshark

from client import Client
from engine.presets import preset_text

PCAP = "application/vnd.tcpdump.pcap"


def lossy_scenario() -> dict[str, Any]:
    """riverbed-drops-reno cut to 2 MB (about 1,400 segments, a dozen losses), its sender's
    first link captured both ways."""
    doc = yaml.safe_load(preset_text("riverbed-drops-reno"))
    doc["name"] = "drops-reno-2mb-captured"
    doc["flows"][0]["bytes"] = 2_000_000
    doc["capture"] = [{"link": "lan1", "direction": "both", "max_packets": 20_000}]
    return doc


@pytest.fixture(scope="module")
def captured(pg_stack: Stack) -> dict[str, Any]:
    with Client(pg_stack.base_url) as client:
        run = client.run(scenario=lossy_scenario()).wait()
        return run.doc.model_dump(mode="json")


def test_the_run_document_lists_its_captures(captured: dict[str, Any]) -> None:
    [capture] = captured["captures"]
    assert capture["link"] == "lan1" and capture["direction"] == "both"
    assert capture["href"] == f"/v1/runs/{captured['id']}/pcap?link=lan1&direction=both"
    links = captured["summary"]["links"]
    # Everything transmitted on lan1, both ways, and nothing missed.
    assert (
        capture["packets"]
        == links["lan1:ws>branch"]["packets"] + links["lan1:branch>ws"]["packets"]
    )
    assert capture["missed"] == 0


def test_the_pcap_is_served_and_wireshark_reads_it(
    pg_stack: Stack, captured: dict[str, Any], tmp_path: Path
) -> None:
    require_tshark()
    [capture] = captured["captures"]
    with pg_stack.client as http:
        resp = http.get(capture["href"])
        assert resp.status_code == 200, resp.text
        assert resp.headers["content-type"] == PCAP
        assert hashlib.sha256(resp.content).hexdigest() == capture["sha256"]
        assert len(resp.content) == capture["bytes"]
        again = http.get(capture["href"], headers={"If-None-Match": resp.headers["etag"]})
        assert again.status_code == 304
        # The link's one capture: the direction may be left out.
        plain = http.get(f"/v1/runs/{captured['id']}/pcap", params={"link": "lan1"})
        assert plain.status_code == 200 and plain.content == resp.content
    with Client(pg_stack.base_url) as client:
        # The same scenario and seed again: a cache hit serves its source's capture.
        hit = client.run(scenario=lossy_scenario())
        assert (
            hit.doc.cache_hit
            and hit.doc.captures
            and hit.doc.captures[0].href.startswith(f"/v1/runs/{hit.id}/pcap")
        )
        assert hit.pcap("lan1") == resp.content
    path = tmp_path / "lan1.pcap"
    path.write_bytes(resp.content)
    assert expert_problems(path) == 0
    assert count(path) == capture["packets"]
    backup = captured["summary"]["flows"]["backup"]
    assert backup["retransmissions"] > 0
    assert (
        count(path, "tcp.analysis.retransmission || tcp.analysis.fast_retransmission")
        == backup["retransmissions"]
    )


def test_no_such_capture_is_a_404_naming_those_there_are(
    pg_stack: Stack, captured: dict[str, Any]
) -> None:
    with pg_stack.client as http:
        url = f"/v1/runs/{captured['id']}/pcap"
        body = assert_problem(http.get(url, params={"link": "access1"}), 404)
        assert "lan1 both" in body["detail"]
        assert body["captures"] == [{"link": "lan1", "direction": "both"}]
        assert_problem(http.get(url, params={"link": "lan1", "direction": "a_to_b"}), 404)
        assert_problem(http.get(url, params={"link": "lan1", "direction": "up"}), 422)
        assert_problem(http.get(url), 422)  # link is required
        resp = http.post("/v1/runs", json={"preset": "riverbed-t1-8k"})
        assert resp.status_code in (201, 202), resp.text
        plain = resp.json()["id"]
    with Client(pg_stack.base_url) as client:
        client.get_run(plain).wait()
    with pg_stack.client as http:
        body = assert_problem(http.get(f"/v1/runs/{plain}/pcap", params={"link": "lan1"}), 404)
        assert "asked for none" in body["detail"]


def test_the_dry_run_counts_the_capture(pg_stack: Stack) -> None:
    with pg_stack.client as http:
        resp = http.post("/v1/scenarios/validate", json=lossy_scenario())
        assert resp.status_code == 200, resp.text
        est = resp.json()["cost"]["estimate"]
    # ~1,370 data segments and their ACKs (one per two): well under max_packets.
    assert 1_000 < est["capture_packets"] < 20_000
    assert est["capture_bytes"] > est["capture_packets"] * 16


def test_tcpfr_export_pcap(pg_stack: Stack, captured: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "capture.pcap"
    proc = tcpfr(pg_stack.base_url, "export", captured["id"], "--pcap", "lan1", "-o", str(out))
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert hashlib.sha256(out.read_bytes()).hexdigest() == captured["captures"][0]["sha256"]
    proc = tcpfr(
        pg_stack.base_url,
        "export",
        captured["id"],
        "--pcap",
        "lan1:both",
        "-o",
        str(tmp_path / "again.pcap"),
    )
    assert proc.returncode == 0 and (tmp_path / "again.pcap").read_bytes() == out.read_bytes()
    proc = tcpfr(pg_stack.base_url, "export", captured["id"], "--pcap", "access1")
    assert proc.returncode == 2 and "no capture of link 'access1'" in proc.stderr


def test_the_export_bundle_carries_the_capture(
    pg_stack: Stack, captured: dict[str, Any], tmp_path: Path
) -> None:
    with Client(pg_stack.base_url) as client:
        data = client.export(captured["id"], tmp_path / "run.zip").read_bytes()
    manifest, files = read_bundle(data)  # each file checked against the manifest's sha256
    pcap = files["captures/lan1-both.pcap"]
    assert hashlib.sha256(pcap).hexdigest() == captured["captures"][0]["sha256"]


def test_captures_in_the_embedded_mode(embedded_stack: Stack) -> None:
    """SQLite and the file-system broker store and serve the same file, to the byte."""
    with Client(embedded_stack.base_url) as client:
        run = client.run(scenario=lossy_scenario()).wait()
        [capture] = run.doc.captures or []
        data = run.pcap("lan1")
    assert hashlib.sha256(data).hexdigest() == capture.sha256
