"""Be sized to the port when covering the window leaves the contract binding (a case from the
advice audit, bench/advice_audit.py's probe fr-t1-ports).

The Frame Relay backup of docs/advice.md (50 MB, PVC CIR 256 kb/s, Bc = Be = 32 kbit, so
Tc = Bc / CIR = 125 ms, a 16 KiB window: 131,072 bit) with T1 access ports, 1.544 Mbit/s:

- covering the window takes Bc + Be >= 131,072 bit: Be = 100 kbit; the contract's
  long-run rate is then CIR + Be/Tc = 256 + 800 = 1,056 kb/s, under the port, and it still
  binds (the check measured 461 s);
- Be = (port - CIR) x Tc = (1,544,000 - 256,000) x 0.125 = 161,000 bit makes CIR + Be/Tc
  the port's 1,544 kb/s: the policer then passes all the port sends, and the port binds, as
  after the CIR's remedy (776 kb/s, 520 cost units against Be's 258: 129 kbit more at
  Be/Tc = Be x 8 per s, 1,032 kb/s at 0.25 a kb/s);
- the port's floor for the transfer is 50e6 x 8 / 1.544e6 = 259 s; framing and the handshake
  add a few per cent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import simulate
from engine.scenario import load_scenario
from engine.study import apply_changes

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PORT = 1_544_000
CIR, BC = 256_000, 32_000


def test_be_reaches_the_port_and_measures_as_the_cir_does() -> None:
    scenario = apply_changes(
        load_scenario(ROOT / "docs" / "examples" / "fr-backup.yaml"),
        {"links.access1.rate": PORT, "links.access2.rate": PORT},
    )
    d = simulate(scenario).diagnosis["backup"]
    assert d.limit == "pvc_policing"
    (be,) = [r for r in d.remedies if r.action == "raise_be"]
    (cir,) = [r for r in d.remedies if r.action == "raise_cir"]
    value = be.changes[0].value
    assert value == (PORT - CIR) * BC // CIR == 161_000
    assert CIR + value * CIR / BC == PORT
    assert be.figures["port_bps"] == PORT and "reaches the access port's" in be.text
    times = {
        name: simulate(apply_changes(scenario, {r.changes[0].path: r.changes[0].value}))
        .flows["backup"]
        .completion_time
        for name, r in (("be", be), ("cir", cir))
    }
    floor = scenario.flows[0].bytes * 8 / PORT
    assert times["be"] == pytest.approx(times["cir"], rel=0.01)
    assert floor <= times["be"] <= floor * 1.06
