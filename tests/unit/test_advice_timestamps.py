"""Timestamps are offered to a flow whose time went to the retransmission timer's backoff
(a case from the advice audit, bench/advice_audit.py).

The shallow queue of tests/unit/test_advice_bbr_sack.py (100 MB over a 100 Mbit/s WAN of
25 ms each way behind a router queue of 8 packets, CUBIC without SACK, 300 s), with Linux's
200 ms minimum RTO:

- without timestamps, a timeout's go-back-N resends are lost again in the 8-packet queue,
  only the timer finds them, and Karn's rule takes no RTT sample from the ACK of a
  retransmission: the RTO doubles at each of 14 timeouts, and 94% of the run goes to
  waiting for the timer; the transfer does not end;
- with timestamps (RFC 7323), the ACK of each retransmission echoes its send time: an RTT
  sample, and the RTO falls back to its 200 ms floor (Linux's tcp_ack_update_rtt). Timeouts
  come as often (more: the sender is back sooner), but each waits 200 ms, never more, and
  the transfer ends, at about four times the goodput.
"""

from __future__ import annotations

import pytest
from test_advice_bbr_sack import shallow_without_sack

from engine import Scenario, simulate
from engine.advice.check import RemedyCheck
from engine.advice.local import drive
from engine.study import apply_changes

pytestmark = pytest.mark.unit

LINUX_MIN_RTO = 0.2


def backed_off() -> Scenario:
    """CUBIC without SACK behind 8 packets, Linux's 200 ms minimum RTO, no timestamps."""
    return apply_changes(shallow_without_sack(), {"flows.f.tcp.min_rto": LINUX_MIN_RTO})


def test_timestamps_end_the_backoff() -> None:
    scenario = backed_off()
    before = simulate(scenario).flows["f"]
    after = simulate(apply_changes(scenario, {"flows.f.tcp.timestamps": True})).flows["f"]
    assert before.time is not None and after.time is not None
    assert not before.completed and before.timeouts == 14
    assert before.time.timeout / before.time.duration > 0.9
    assert after.completed and after.completion_time is not None
    assert after.completion_time < 0.5 * scenario.duration
    # Every timeout waited the floor and no more: no backoff survives an RTT sample.
    assert after.time.timeout == pytest.approx(after.timeouts * LINUX_MIN_RTO, rel=1e-9)


def test_timestamps_are_offered_and_measured() -> None:
    scenario = backed_off()
    d = simulate(scenario).diagnosis["f"]
    (remedy,) = [r for r in d.remedies if r.action == "enable_timestamps"]
    assert [(c.path, c.was, c.value) for c in remedy.changes] == [
        ("flows.f.tcp.timestamps", False, True)
    ]
    assert remedy.helps and remedy.cost_class == "endpoint"
    assert remedy.figures["timeouts"] == 14 and float(remedy.figures["waiting"]) > 0.9
    assert "RTT sample" in remedy.text and "14 timeouts" in remedy.text
    report = drive(scenario, RemedyCheck(scenario, {"flow": "f"})).report
    (item,) = [i for i in report.items if i.remedy.action == "enable_timestamps"]
    assert report.metric == "goodput_bps"  # the transfer does not end as it is
    assert item.verdict == "better" and item.after.unfinished == 0
    # Measured: 1.44 Mbit/s of goodput as it is, 6.0 with timestamps.
    assert item.after.mean > 4 * report.base.mean


def test_not_offered_when_timestamps_are_on() -> None:
    """With timestamps the flow still waits for its timer a good share of its time (40%,
    265 timeouts of 200 ms): the rule must see the option on and offer nothing."""
    scenario = apply_changes(backed_off(), {"flows.f.tcp.timestamps": True})
    result = simulate(scenario)
    time = result.flows["f"].time
    assert time is not None and time.timeout / time.duration > 0.25
    actions = {r.action for r in result.diagnosis["f"].remedies}
    assert "enable_timestamps" not in actions
