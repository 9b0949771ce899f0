"""A flow held by two buffers of one size: the remedy raises both, or it could not help.

With snd_buf = rcv_buf = 64 KiB on a 10 Mb/s path of 600 ms, the flight is min(snd_buf,
rcv_buf) = 65,535 B against a bandwidth-delay product of ~750 kB, so the flow gets about
W/RTT = 65,535 x 8 / 0.6 = 0.87 Mbit/s. Raising the send buffer alone leaves the receive
window at 64 KiB and the same 0.87 Mbit/s; only both to the BDP (with window scaling) lift
the bound to the link's payload rate.
"""

from __future__ import annotations

import pytest
from engine_helpers import bulk, dumbbell

from engine import Scenario, simulate
from engine.protocol import TCP_IP_HEADERS

pytestmark = pytest.mark.unit

RATE, DELAY, WINDOW = 10e6, 0.3, 65535


def test_a_send_buffer_as_small_as_the_receive_window_is_raised_with_it() -> None:
    flow = bulk(nbytes=2_000_000, snd_buf=WINDOW, rcv_buf=WINDOW)
    scenario = Scenario.model_validate(dumbbell(rate=RATE, delay=DELAY, flows=[flow]))
    result = simulate(scenario)
    diagnosis = result.diagnosis["f"]
    assert diagnosis.limit in ("send_buffer", "receive_window")
    rtt = result.flows["f"].rtt_min
    helping = [r for r in diagnosis.remedies if r.helps and r.action.startswith("raise_")]
    assert helping, [r.text for r in diagnosis.remedies]
    payload = RATE * 1460 / (1460 + TCP_IP_HEADERS + 8)  # bits/s of payload through PPP
    bdp = payload / 8 * rtt  # the measured smallest RTT is the base one plus a packet's time
    for remedy in helping:
        changed = {c.path.rsplit(".", 1)[-1]: c.value for c in remedy.changes}
        assert changed["snd_buf"] >= 0.98 * bdp and changed["rcv_buf"] >= 0.98 * bdp, changed
        assert changed["window_scaling"] is True
        # the bound after it: the link's payload rate (1460 of every 1508 B), within 5%
        assert remedy.predicted is not None
        assert remedy.predicted.goodput_bps == pytest.approx(payload, rel=0.05)
