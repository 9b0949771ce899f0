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


def test_the_advisor_moves_both_buffers_of_a_window_and_meets_the_target() -> None:
    """The advisor, on a 10 MB transfer over that path with a 100-packet bottleneck queue
    and a 20 s target: neither buffer alone can lift the flight above 64 KiB, so before the
    window was one lever (both buffers moved together) it found no fix at all and reported
    97 s as the best. Every fix it reports now meets the target as measured, moves both
    buffers past 64 KiB with window scaling, and takes no less than the link's floor: 10 MB
    at the payload rate, plus the handshake's and the last segment's round trip."""
    from engine.advice.local import drive
    from engine.advice.request import AdviceRequest
    from engine.advice.search import Advisor
    from engine.advice.target import Target

    nbytes, target = 10_000_000, 20.0
    flow = bulk(nbytes=nbytes, snd_buf=WINDOW, rcv_buf=WINDOW, variant="newreno")
    scenario = Scenario.model_validate(
        dumbbell(rate=RATE, delay=DELAY, limit_packets=100, flows=[flow], duration=3600)
    )
    request = AdviceRequest(target=Target.parse(f"f.completion_time<={target}s"))
    advisor = Advisor(scenario, request)
    report = drive(scenario, advisor).report
    assert report.base is not None and report.base.mean > 4 * target  # window-bound: ~97 s
    assert report.fixes, report.text
    payload = RATE * 1460 / (1460 + TCP_IP_HEADERS + 8)
    floor = nbytes * 8 / payload + 2 * (2 * DELAY)  # 8.3 s + 1.2 s
    for fix in report.fixes:
        assert floor <= fix.measured.mean <= target, (fix.text, floor)
        changed = {c.path.rsplit(".", 1)[-1]: c.value for c in fix.changes}
        if "rcv_buf" in changed or "snd_buf" in changed:
            assert changed["rcv_buf"] > WINDOW and changed["snd_buf"] > WINDOW, fix.text
            assert changed["window_scaling"] is True, fix.text


def test_a_window_lever_moves_two_buffers_but_not_other_settings() -> None:
    from engine.advice.options import LeverSpec

    both = LeverSpec(paths=["flows.f.tcp.rcv_buf", "flows.f.tcp.snd_buf"])
    assert both.paths == ["flows.f.tcp.rcv_buf", "flows.f.tcp.snd_buf"]
    with pytest.raises(ValueError, match="the same setting"):
        LeverSpec(paths=["flows.f.tcp.rcv_buf", "links.wan.queue.limit_packets"])
    with pytest.raises(ValueError, match="the same setting"):
        LeverSpec(paths=["flows.f.tcp.snd_buf", "flows.f.tcp.initial_cwnd"])
