"""A slow way back for the ACKs, diagnosed and fixed (the ADSL case a new user brings).

A 20 MB download over ADSL: server -[1 Gb/s, 5 ms]- isp =[adsl: 24 Mb/s down, 1 Mb/s up,
10 ms, ATM AAL5]= client, CUBIC + SACK with a 1 MiB window and delayed ACKs off. On ATM a
1,500-byte datagram is 32 cells (1,696 B) and a 40-byte ACK 2 cells (106 B = 848 bit):

- the downlink carries 24e6 x 1,460 / 1,696 = 20.66 Mbit/s of payload;
- the uplink returns 1e6 / 848 = 1,179 ACKs/s, at one ACK per segment a clock of
  1,179 x 1,460 x 8 = 13.77 Mbit/s: the ACKs' way back is the limit, not the downlink;
- delayed ACKs (one ACK per 2 segments) double the clock to 27.5 Mbit/s, and an uplink of a
  T1 (1.544 Mbit/s) lifts it to 21.3 Mbit/s: either leaves the downlink binding, so the
  transfer takes at least 20e6 x 8 / 20.66e6 = 7.74 s instead of about
  (20e6 - 1 MiB) x 8 / 13.77e6 = 11.0 s (a window's worth leaves ahead of the clock);
- a faster downlink changes nothing while the ACKs set the pace.

Before this, the diagnosis named the downlink (`link_capacity`) and offered its upgrade to
E3, which measured 0% (the why was wrong, and so was the candidate fix).
"""

from __future__ import annotations

import pytest

from engine import Scenario, simulate
from engine.advice.check import RemedyCheck
from engine.advice.local import drive
from engine.advice.request import AdviceRequest
from engine.advice.search import Advisor
from engine.advice.target import Target
from engine.net import wire_bytes

pytestmark = pytest.mark.unit

MSS = 1460
NBYTES = 20_000_000
WINDOW = 1 << 20
DOWN_PAYLOAD = 24e6 * MSS / wire_bytes("atm_aal5", MSS + 40)
ACK_BITS = wire_bytes("atm_aal5", 40) * 8
CLOCK = 1e6 / ACK_BITS * MSS * 8
T1_CLOCK = 1.544e6 / ACK_BITS * MSS * 8


def adsl() -> Scenario:
    tcp = {
        "variant": "cubic",
        "sack": True,
        "rcv_buf": WINDOW,
        "window_scaling": True,
        "delayed_ack": {"enabled": False},
    }
    return Scenario.model_validate(
        {
            "name": "adsl",
            "duration": 60,
            "nodes": [
                {"id": "server", "kind": "host"},
                {"id": "isp", "kind": "router"},
                {"id": "client", "kind": "host"},
            ],
            "links": [
                {
                    "id": "lan",
                    "a": "server",
                    "b": "isp",
                    "rate": 1e9,
                    "delay": 0.005,
                    "encap": "ethernet",
                },
                {
                    "id": "adsl",
                    "a": "isp",
                    "b": "client",
                    "rate": 24e6,
                    "rate_b_to_a": 1e6,
                    "delay": 0.01,
                    "encap": "atm_aal5",
                },
            ],
            "flows": [
                {
                    "id": "down",
                    "kind": "tcp_bulk",
                    "src": "server",
                    "dst": "client",
                    "bytes": NBYTES,
                    "tcp": tcp,
                }
            ],
        }
    )


@pytest.fixture(scope="module")
def result():
    return simulate(adsl())


def test_the_diagnosis_names_the_acks_way_back_and_what_it_cost(result) -> None:
    """The limit is the ACK clock at the uplink, its bound 13.77 Mbit/s exactly (the path
    facts' arithmetic), below the downlink's 20.66; the flow reaches it (above it by no more
    than its first window, which leaves ahead of the clock); the time it cost is the flow's life past the handshake beyond the
    downlink's time for its bytes."""
    d = result.diagnosis["down"]
    s = result.flows["down"]
    assert pytest.approx(20.66e6, rel=1e-3) == DOWN_PAYLOAD
    assert pytest.approx(13.77e6, rel=1e-3) == CLOCK
    assert d.limit == "ack_clock" and d.bottleneck == "adsl:client>isp"
    assert d.bounds.ack_clock_bps == pytest.approx(CLOCK, rel=1e-12)
    assert d.bounds.link_bps == pytest.approx(DOWN_PAYLOAD, rel=0.01)
    # At the clock, but for the window that left ahead of it: at most NBYTES / (NBYTES - W).
    assert CLOCK <= s.goodput_bps <= CLOCK * NBYTES / (NBYTES - WINDOW)
    t = s.time
    assert d.limit_time == pytest.approx(t.duration - t.handshake - t.busy, rel=1e-9)
    assert t.busy == pytest.approx(NBYTES * 8 / DOWN_PAYLOAD, rel=0.01)
    # Where the time went says the same: the downlink's idle time is the ACKs' way back's
    # (all of it but slow start's first rounds, before the ACKs queue), none a window's.
    assert t.ack_clock >= 0.9 * d.limit_time
    assert t.ack_clock + t.slow_start == pytest.approx(d.limit_time, rel=1e-9)
    assert t.congestion_avoidance == t.receive_window == t.recovery == 0
    assert "ACKs' way back" in d.why and "adsl:client>isp" in d.why and "13.8 Mbit/s" in d.why


def test_the_candidates_double_the_clock_or_speed_the_uplink_and_not_the_downlink(result) -> None:
    """Delayed ACKs (free) and a T1 uplink each lift the bound to the downlink's payload
    rate (min(2 x 13.77, 20.66) and min(21.3, 20.66)), and say so; the downlink's upgrade to
    E3 leaves the ACK clock binding: shown as no help, with why."""
    remedies = {r.action + ":" + r.changes[0].path: r for r in result.diagnosis["down"].remedies}
    delayed = remedies["enable_delayed_ack:flows.down.tcp.delayed_ack.enabled"]
    assert delayed.helps and delayed.cost_class == "endpoint"
    assert delayed.predicted.goodput_bps == pytest.approx(DOWN_PAYLOAD, rel=1e-9)
    uplink = remedies["upgrade_link:links.adsl.rate_b_to_a"]
    assert uplink.changes[0].value == 1.544e6 and uplink.helps
    assert T1_CLOCK > DOWN_PAYLOAD
    assert uplink.predicted.goodput_bps == pytest.approx(DOWN_PAYLOAD, rel=1e-9)
    downlink = remedies["upgrade_link:links.adsl.rate"]
    assert not downlink.helps and downlink.why_not == "bound_unchanged"
    assert downlink.predicted.limit == "ack" and downlink.predicted.goodput_bps == pytest.approx(
        CLOCK
    )
    assert "ACKs' way back (adsl:client>isp) still holds the flow" in downlink.text


def test_measured_the_free_fix_is_recommended_and_the_downlink_changes_nothing() -> None:
    """The remedy check simulates each candidate: delayed ACKs and the T1 uplink each end
    the transfer at the downlink's pace (at least 7.74 s and within 4% of it), the E3
    downlink within 1% of the run itself; of the two fixes the free one is recommended."""
    scenario = adsl()
    report = drive(scenario, RemedyCheck(scenario, {"flow": "down"})).report
    floor = NBYTES * 8 / DOWN_PAYLOAD
    by_path = {i.remedy.changes[0].path: i for i in report.items}
    base = report.base.mean
    assert base == pytest.approx((NBYTES - WINDOW) * 8 / CLOCK, rel=0.03)
    for path in ("flows.down.tcp.delayed_ack.enabled", "links.adsl.rate_b_to_a"):
        after = by_path[path].after.mean
        assert floor <= after <= floor * 1.04, (path, after)
        assert by_path[path].verdict == "better"
    assert by_path["links.adsl.rate"].after.mean == pytest.approx(base, rel=0.01)
    assert not by_path["links.adsl.rate"].recommended
    assert report.text[-1].startswith("Recommended: delayed_ack off → on")


def test_the_advisor_meets_a_target_with_delayed_acks_for_free() -> None:
    """Target 9 s (the run takes ~11 s, the downlink allows 7.74 s): the cheapest fix is
    delayed ACKs, free, measured within the target; the downlink's own upgrade cannot
    reach it, by the ACK clock's bound."""
    scenario = adsl()
    advisor = Advisor(scenario, AdviceRequest(target=Target.parse("down.completion_time<=9s")))
    report = drive(scenario, advisor).report
    top = report.fixes[0]
    assert [c.path for c in top.changes] == ["flows.down.tcp.delayed_ack.enabled"]
    assert top.cost == 0 and top.measured.mean <= 9
    rejected = {r.lever: r for r in report.rejected}
    assert rejected["adsl rate"].limit == "ack"
