"""CUBIC (RFC 9438): the strategy's formulas on a bare state record, then one scripted loss
on a long fat path, after which the traced window must follow the cubic function

    W_cubic(t) = C (t - K)^3 + W_max,   K = cbrt(W_max (1 - beta) / C)   (segments, s)

with C = 0.4, beta = 0.7 and t counted from the start of congestion avoidance.

The path is 100 Mbit/s with 100 ms of round trip (a BDP of ~856 segments) and a deep
queue, so one scripted drop in slow start is the only loss and the window stays below the
BDP. With W_max of 100-150 segments and K of 4-5 s, W_cubic stays above the Reno-friendly
estimate W_est = beta W_max + 3(1 - beta)/(1 + beta) t/RTT over the whole epoch: the
cubic region of RFC 9438 4.2 applies, not the Reno-friendly one (4.3).
"""

import math
from types import SimpleNamespace

import pytest
from engine_helpers import bulk, one_link, run, script_loss, series, value_at

from engine.budget import TRACE_CAP
from engine.scenario import TcpSpec
from engine.tcp.cc.cubic import Cubic
from engine.tcp.state import Phase, TcpState

pytestmark = pytest.mark.unit

MSS = 1460
C, BETA = 0.4, 0.7
ALPHA = 3 * (1 - BETA) / (1 + BETA)  # RFC 9438 4.3


def cubic(**spec):
    fields = {
        "cubic_c": C,
        "cubic_beta": BETA,
        "cubic_fast_convergence": True,
        "cubic_tcp_friendliness": True,
    }
    fields.update(spec)
    cc = Cubic(TcpSpec(**fields))
    st = TcpState(MSS, 1)
    cc.init(st)
    return cc, st


def k_of(w_max: float) -> float:
    return (w_max * (1 - BETA) / C) ** (1 / 3)


def w_cubic(t: float, w_max: float) -> float:
    return C * (t - k_of(w_max)) ** 3 + w_max


def lose(cc, st, cwnd_segments: int) -> None:
    """A congestion event with cwnd = FlightSize = `cwnd_segments`, then congestion
    avoidance from cwnd = ssthresh (the window the recovery leaves)."""
    st.cwnd = cwnd_segments * MSS
    st.snd_una, st.snd_max = 0, st.cwnd
    cc.on_congestion_event(st)
    st.ssthresh = cc.ssthresh_after_loss(st)
    st.cwnd = st.ssthresh
    cc.on_recovery_exit(st)


def drive(cc, st, rtt: float, t0: float, seconds: float) -> list[tuple[float, float]]:
    """ACK one segment at a time, a window's worth per RTT, from t0 for `seconds`:
    (t - t0, cwnd in segments) after each ACK."""
    cc.on_rtt_sample(st, rtt)
    st.srtt = rtt
    out = []
    st.now = t0
    while st.now < t0 + seconds:
        cc.increase_window(st, MSS)
        out.append((st.now - t0, st.cwnd / MSS))
        st.now += rtt / (st.cwnd / MSS)
    return out


# --- the strategy on a bare state record ---------------------------------------------------


@pytest.mark.parametrize(
    ("flight", "expected"), [(100, 70 * MSS), (101, int(101 * MSS * BETA)), (2, 2 * MSS)]
)
def test_ssthresh_is_beta_times_flight_size(flight, expected):
    cc, st = cubic()
    st.cwnd, st.snd_una, st.snd_max = 50 * MSS, 0, flight * MSS
    assert cc.ssthresh_after_loss(st) == expected  # RFC 9438 4.6, floor 2 SMSS
    assert st.cwnd == 50 * MSS  # returns, never mutates


def test_w_max_is_the_window_at_the_loss_and_fast_convergence_lowers_it():
    cc, st = cubic()
    lose(cc, st, 100)
    assert cc.w_max == 100
    # RFC 9438 4.7: a loss below the previous W_max releases bandwidth:
    # W_max = cwnd (1 + beta) / 2.
    lose(cc, st, 80)
    assert cc.w_max == pytest.approx(80 * (1 + BETA) / 2)
    cc, st = cubic(cubic_fast_convergence=False)
    lose(cc, st, 100)
    lose(cc, st, 80)
    assert cc.w_max == 80


def test_the_epoch_starts_at_beta_w_max_and_reaches_w_max_after_k():
    cc, st = cubic()
    lose(cc, st, 100)
    assert st.cwnd == 70 * MSS
    st.now, st.srtt = 10.0, 0.1
    cc.on_rtt_sample(st, 0.1)
    cc.increase_window(st, MSS)  # the first ACK of congestion avoidance opens the epoch
    # RFC 9438 eq. (2): K = cbrt((W_max - cwnd_epoch) / C) = cbrt(75) = 4.217 s.
    assert cc.w_cubic(0.0) == pytest.approx(70, abs=0.01)
    assert cc.w_cubic(k_of(100)) == pytest.approx(100, abs=1e-9)


def test_cubic_region_follows_w_cubic():
    cc, st = cubic()
    lose(cc, st, 150)
    trace = drive(cc, st, 0.1, 0.0, 2 * k_of(150))
    for t, w in trace[100::200]:
        # Per ACK cwnd moves toward W_cubic(t + RTT) (4.2), so it runs between the two.
        assert w_cubic(t, 150) * 0.98 <= w <= w_cubic(t + 0.1, 150) * 1.02, t


def test_reno_friendly_region_dominates_at_small_rtt():
    """At RTT 10 ms from W_max = 20, W_est (4.3) grows by alpha = 0.53 segment per RTT,
    far above the cubic curve (~20 segments at t < K = 2.47 s): cwnd follows W_est,
    which starts at cwnd_epoch = beta W_max and reaches cwnd_prior = 20 after
    (1 - beta) W_max / alpha = 11.3 RTTs."""
    cc, st = cubic()
    lose(cc, st, 20)
    trace = drive(cc, st, 0.01, 0.0, 0.11)
    for t, w in trace[10::10]:
        w_est = BETA * 20 + ALPHA * t / 0.01
        assert w == pytest.approx(w_est, rel=0.05), t
        assert w_est > w_cubic(t, 20), t  # the Reno-friendly condition of 4.3


def test_reno_friendly_growth_becomes_one_segment_per_rtt_past_cwnd_prior():
    """RFC 9438 4.3: once W_est has grown to cwnd_prior (the window before the reduction),
    alpha_cubic SHOULD be 1: Reno's rate. From W_max = 20 at RTT 10 ms, W_est reaches 20
    at 11.3 RTTs and then gains one segment per RTT: about 208 segments at 2 s."""
    cc, st = cubic()
    lose(cc, st, 20)
    trace = drive(cc, st, 0.01, 0.0, 2.0)
    t_prior = (1 - BETA) * 20 / ALPHA * 0.01
    for t, w in trace[-5000::1000]:
        w_est = 20 + (t - t_prior) / 0.01
        assert w == pytest.approx(w_est, rel=0.05), t


def test_after_a_timeout_the_epoch_starts_with_k_zero_at_the_current_window():
    """RFC 9438 4.8 (and Linux's bictcp_reset on TCP_CA_Loss): in the first congestion
    avoidance after a timeout, K = 0 and W_max is the window at its start, so the window
    grows convexly from there instead of climbing back toward the pre-timeout W_max.
    Linux's reset also forgets last_max_cwnd, and with none its bictcp_update clamps cnt
    to 20 (ns-3's TcpCubic the same): one segment per 20 acknowledged, so over a round
    trip dW = W / 20 and W = 70 e^(t / (20 RTT)), above both cubic terms."""
    cc, st = cubic()
    st.cwnd = 100 * MSS
    st.snd_una, st.snd_max = 0, st.cwnd
    cc.on_congestion_event(st)
    st.ssthresh = cc.ssthresh_after_loss(st)
    st.cwnd = MSS
    cc.on_state_change(st, Phase.LOSS)
    st.cwnd = st.ssthresh  # slow start has brought cwnd back to ssthresh = 70 segments
    trace = drive(cc, st, 0.1, 10.0, 1.0)
    assert cc.k == 0.0
    assert cc.w_max == pytest.approx(70.0)
    # One second in: W_cubic = 70 + C t^3 and the Reno-friendly 70 + alpha t / RTT are
    # both below the clamp's 70 e^(t / 2 s), which sets the window.
    t, w = trace[-1]
    assert max(70 + C * t**3, 70 + ALPHA * t / 0.1) < 70 * math.exp(t / (20 * 0.1))
    assert w == pytest.approx(70 * math.exp(t / (20 * 0.1)), rel=0.01)


def test_the_first_epoch_grows_at_least_five_percent_per_round_trip():
    """Leaving slow start with no loss yet (HyStart), CUBIC has no W_max: the epoch starts
    at K = 0 from the window it has, where W_cubic = W0 + C t^3 is flat. Linux's
    bictcp_update and ns-3's TcpCubic::Update clamp cnt (segments acknowledged per segment
    of growth) to 20 while last_max_cwnd is 0: each window acknowledged adds W / 20, so
    W = W0 e^(t / (20 RTT)). From 100 segments at RTT 100 ms, after 2 s: 100 e = 272,
    where the cubic term alone gives 100 + 0.4 (2.1)^3 = 104 and Reno's friendly region
    100 + 0.53 * 20 = 111. After a loss (W_max known) the clamp is off."""
    cc, st = cubic()
    st.cwnd = st.ssthresh = 100 * MSS  # HyStart's exit: ssthresh = cwnd
    t, w = drive(cc, st, 0.1, 0.0, 2.0)[-1]
    assert w == pytest.approx(100 * math.exp(t / (20 * 0.1)), rel=0.01)
    cc, st = cubic()
    lose(cc, st, 143)  # ssthresh = 0.7 * 143 = 100 segments, W_max = 143
    t, w = drive(cc, st, 0.1, 0.0, 2.0)[-1]
    assert w == pytest.approx(w_cubic(t + 0.1, 143), rel=0.02)  # concave, toward W_max


def test_after_fast_retransmit_the_epoch_climbs_back_toward_w_max():
    cc, st = cubic()
    lose(cc, st, 100)
    drive(cc, st, 0.1, 10.0, 0.1)
    assert cc.w_max == pytest.approx(100.0)
    assert cc.k == pytest.approx(k_of(100), rel=1e-3)


# --- one loss on a long fat path ----------------------------------------------------------

RATE, DELAY = 100e6, 0.05
RUNS = {100: 9.5, 150: 10.8}  # drop index -> sim duration covering 2 K after the loss


@pytest.fixture(scope="module", params=list(RUNS), ids=lambda d: f"drop{d}")
def epoch(request):
    drop = request.param
    flow = bulk(nbytes=None, variant="cubic", rcv_buf=50_000_000, window_scaling=True)
    result = run(
        one_link(
            rate=RATE,
            delay=DELAY,
            limit_packets=100_000,
            loss=script_loss(drop),
            duration=RUNS[drop],
            flows=[flow],
        )
    )
    # Exact times are looked up below: the traces must not have been thinned (thinning
    # drops every other point, the first slow-start steps included).
    cwnd, ack = series(result, "flow.f.cwnd"), series(result, "flow.f.ack")
    assert len(cwnd[0]) < TRACE_CAP and len(ack[0]) < TRACE_CAP
    assert cwnd[1][:8] == [k * MSS for k in range(1, 9)]
    assert ack[1][:8] == [k * MSS for k in range(1, 9)]
    t_fr = series(result, "flow.f.ssthresh")[0][0]
    before = t_fr - 1e-9
    w_max = value_at(result, "flow.f.cwnd", before) / MSS
    flight = value_at(result, "flow.f.seq", before) - value_at(result, "flow.f.ack", before)
    recover = value_at(result, "flow.f.seq", t_fr)
    t_ca = next(t for t, v in zip(*series(result, "flow.f.ack"), strict=True) if v >= recover)
    return SimpleNamespace(result=result, t_fr=t_fr, w_max=w_max, flight=flight, t_ca=t_ca)


def test_one_loss_one_fast_retransmit(epoch):
    flow = epoch.result.flows["f"]
    assert (flow.retransmissions, flow.fast_retransmits, flow.timeouts) == (1, 1, 0)
    assert len(series(epoch.result, "flow.f.ssthresh")[1]) == 1


def test_ssthresh_after_the_loss_is_beta_times_flight_size(epoch):
    ssthresh = series(epoch.result, "flow.f.ssthresh")[1][0]
    # FlightSize leaves out the two segments Limited Transmit sent (RFC 5681 3.2 step 2).
    flight = epoch.flight - 2 * MSS
    assert ssthresh == pytest.approx(BETA * flight, abs=MSS)  # RFC 9438 4.6
    assert ssthresh == pytest.approx(BETA * epoch.w_max * MSS, abs=MSS)


def test_congestion_avoidance_starts_at_beta_w_max(epoch):
    cwnd = value_at(epoch.result, "flow.f.cwnd", epoch.t_ca) / MSS
    assert cwnd == pytest.approx(BETA * epoch.w_max, abs=1.0)


@pytest.mark.parametrize("frac", [0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0])
def test_window_follows_w_cubic_over_the_epoch(epoch, frac):
    k = k_of(epoch.w_max)
    t = frac * k
    traced = value_at(epoch.result, "flow.f.cwnd", epoch.t_ca + t) / MSS
    expected = w_cubic(t, epoch.w_max)
    assert traced == pytest.approx(expected, rel=0.10), (t, traced, expected)
    # The cubic region (RFC 9438 4.2) applies: W_cubic is above the Reno-friendly W_est.
    w_est = BETA * epoch.w_max + ALPHA * t / (2 * DELAY)
    assert expected > w_est


def test_the_window_plateaus_at_w_max_around_k(epoch):
    """The concave-to-convex inflection: cwnd first reaches W_max within an RTT of K."""
    k = k_of(epoch.w_max)
    t_reach = (
        next(
            t
            for t, v in zip(*series(epoch.result, "flow.f.cwnd"), strict=True)
            if t > epoch.t_ca and v / MSS >= epoch.w_max
        )
        - epoch.t_ca
    )
    assert t_reach == pytest.approx(k, abs=0.1 * k)
