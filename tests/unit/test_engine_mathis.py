"""Goodput under random loss against the Mathis et al. (1997) bound

    B = MSS / RTT * sqrt(3 / (2 b p))      (b segments per ACK: 2 with delayed ACKs)

for the Reno-family variants. The bound models congestion avoidance's sawtooth with loss
recovered by fast retransmit; it ignores retransmission timeouts. So the path here keeps
timeouts cheap against the round trip: 200 ms of RTT with RFC 6298's 1 s minimum RTO, a
10 Mbit/s link well above the bound, a deep queue (RTT stays near the base RTT) and a
large scaled receive window (loss, not the window, limits the flow).

Where timeouts do matter (100 ms RTT, 1 s RTO, 5% loss), Mathis overestimates. Padhye et
al.'s (1998) full model with T0 = the minimum RTO counts a timeout whenever a loss leaves
fewer than three duplicate ACKs; Limited Transmit (RFC 3042) avoids many of those, so the
goodput lands between the two models.
"""

import math

import pytest
from engine_helpers import bulk, mathis_reference_bps, one_link, padhye_bps, run

from engine.diagnosis import mathis_bps

pytestmark = pytest.mark.unit

MSS = 1460
B = 2  # delayed ACKs, count 2
VARIANTS = ["reno", "newreno", "sack"]
LOSS = [0.01, 0.02, 0.05]


def lossy(variant: str, p: float, *, delay: float, duration: float = 300.0):
    flow = bulk(
        nbytes=None,
        variant=variant,
        rcv_buf=10_000_000,
        window_scaling=True,
        min_rto=1.0,
        delayed_ack={"enabled": True, "count": B, "timeout": 0.2},
    )
    loss = {"model": "bernoulli", "rate": p, "direction": "a_to_b"}
    return run(
        one_link(
            rate=10e6, delay=delay, limit_packets=10_000, loss=loss, duration=duration, flows=[flow]
        )
    )


def test_mathis_bps_is_the_formula():
    # 1460 B every 100 ms is 116.8 kbit/s; sqrt(3 / (2 * 2 * 0.01)) = sqrt(75).
    assert mathis_bps(1460, 0.1, 0.01, 2) == pytest.approx(116_800 * math.sqrt(75), rel=1e-12)
    assert mathis_bps(1460, 0.1, 0.04, 1) == pytest.approx(116_800 * math.sqrt(37.5), rel=1e-12)


@pytest.fixture(scope="module")
def results():
    return {(v, p): lossy(v, p, delay=0.1) for v in VARIANTS for p in LOSS}


@pytest.mark.parametrize("p", LOSS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_goodput_lies_within_half_and_one_and_a_half_mathis(results, variant, p):
    result = results[variant, p]
    flow = result.flows["f"]
    assert flow.plr == pytest.approx(p, rel=0.15)  # the loss the flow actually saw
    # Near the base RTT (no standing queue; delayed ACKs add a little to the samples).
    assert 0.2 < flow.rtt_mean < 0.2 * 1.15
    assert result.links["wan:h1>h2"].queue_mean < 0.5
    bound = mathis_reference_bps(MSS, flow.rtt_mean, flow.plr, B)
    assert 0.5 * bound <= flow.goodput_bps <= 1.5 * bound, flow.goodput_bps / bound
    # The diagnosis reports the paper's bound for the flow's own measurements.
    assert result.diagnosis["f"].bounds.mathis_bps == pytest.approx(bound, rel=1e-9)


@pytest.mark.parametrize("variant", VARIANTS)
def test_goodput_falls_about_as_one_over_root_p(results, variant):
    """Mathis: B ~ p^-1/2. Timeouts, more frequent at higher p, steepen it somewhat
    (Padhye: towards p^-1); the fitted exponent must stay between the two."""
    xs = [math.log(results[variant, p].flows["f"].plr) for p in LOSS]
    ys = [math.log(results[variant, p].flows["f"].goodput_bps) for p in LOSS]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    assert -0.85 <= slope <= -0.45, slope


@pytest.mark.parametrize("variant", VARIANTS)
def test_where_timeouts_dominate_padhye_holds_and_mathis_overestimates(variant):
    result = lossy(variant, 0.05, delay=0.05)
    flow = result.flows["f"]
    assert flow.timeouts > 20  # a 1 s RTO against 100 ms: the regime Mathis leaves out
    mathis = mathis_reference_bps(MSS, flow.rtt_mean, flow.plr, B)
    padhye = padhye_bps(MSS, flow.rtt_mean, flow.plr, B, t0=1.0)
    assert 0.9 * padhye <= flow.goodput_bps < 0.75 * mathis, (
        flow.goodput_bps / padhye,
        flow.goodput_bps / mathis,
    )
