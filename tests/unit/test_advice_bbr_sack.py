"""BBR is offered with SACK to a flow that lacks it (a case from the advice audit,
bench/advice_audit.py).

The shallow queue of tests/unit/test_advice_shallow_queue.py (100 MB from a 1 Gb/s LAN over a
100 Mbit/s WAN of 25 ms each way, a router queue of 8 packets, CUBIC, a 4 MiB window, IW 10),
with SACK off and a 1 s minimum RTO, as a flow left at its defaults has them:

- the WAN's payload rate is 100e6 x 1,460 / 1,538 = 94.93 Mbit/s, so the transfer cannot
  end before 100e6 x 8 / 94.93e6 = 8.43 s plus a round trip;
- BBR's startup overshoots the 8-packet queue and loses a burst of packets in one round
  trip; without SACK it recovers one per round trip, or waits for its timer, and ends far
  slower than the CUBIC it replaces (the audit measured 145 s against 27 s on 200 MB);
- with SACK it recovers the burst at once and runs at the link's rate.

So the variant remedy carries SACK with it, and measured, it ends within 10% of the link's
floor; the same variant without SACK, run beside it, is slower than the flow as it is.
"""

from __future__ import annotations

import pytest
from test_advice_shallow_queue import NBYTES, PAYLOAD, RTT, shallow

from engine import Scenario, simulate
from engine.advice.check import RemedyCheck
from engine.advice.local import drive
from engine.study import apply_changes

pytestmark = pytest.mark.unit


def shallow_without_sack() -> Scenario:
    """test_advice_shallow_queue's scenario, SACK off and a 1 s minimum RTO, 300 s long."""
    changes = {"flows.f.tcp.sack": False, "flows.f.tcp.min_rto": 1.0, "duration": 300}
    return apply_changes(shallow(), changes).model_copy(update={"name": "shallow-nosack"})


def test_bbr_comes_with_sack_and_measures_at_the_links_rate() -> None:
    scenario = shallow_without_sack()
    d = simulate(scenario).diagnosis["f"]
    (remedy,) = [r for r in d.remedies if r.action == "change_variant"]
    values = {c.path: (c.was, c.value) for c in remedy.changes}
    assert values == {
        "flows.f.tcp.variant": ("cubic", "bbr"),
        "flows.f.tcp.sack": (False, True),
    }
    assert "SACK" in remedy.text
    report = drive(scenario, RemedyCheck(scenario, {"flow": "f"})).report
    floor = NBYTES * 8 / PAYLOAD + RTT
    base = report.base.mean
    (item,) = [i for i in report.items if i.remedy.action == "change_variant"]
    assert item.verdict == "better"
    assert floor <= item.after.mean <= floor * 1.10 < base
    # Why SACK rides along: BBR without it is slower than the CUBIC it would replace.
    alone = simulate(apply_changes(scenario, {"flows.f.tcp.variant": "bbr"}))
    assert alone.flows["f"].completion_time > base
