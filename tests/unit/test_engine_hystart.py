"""Slow start's delay-based exits (`tcp.slow_start`): HyStart as Linux's tcp_cubic runs it
and HyStart++ (RFC 9406).

A small path model drives the strategies as the sender does (an RTT sample, then growth,
on every ACK of new data; the window refilled at once): segment n, sent at s_n, is ACKed at
a_n = max(s_n + RTT(n), a_(n-1) + gap), `gap` being the bottleneck's time per segment.
Slow start from one segment makes rounds of 1, 2, 4, ... segments: round k (from 0) holds
segments 2^k - 1 .. 2^(k+1) - 2, so segment 63 opens round 6 with cwnd = 64 segments.
"""

import math

import pytest
from engine_helpers import bulk, link, one_link, run, series

from engine.scenario import Scenario, TcpSpec
from engine.tcp.cc import congestion_ops
from engine.tcp.cc.slowstart import HyStart, HyStartPlusPlus
from engine.tcp.state import TcpState

pytestmark = pytest.mark.unit

MSS = 1460
BASE = 0.1  # s


class Path:
    """The sender's side of slow start over the path model; `run` stops at the exit."""

    def __init__(
        self, slow_start: str, rtt, gap: float = 0.0, variant: str = "reno", pacing: bool = False
    ):
        self.cc = congestion_ops(
            TcpSpec(variant=variant, slow_start=slow_start, mss=MSS, pacing=pacing)
        )
        self.ss = self.cc.slow_start
        self.st = TcpState(MSS, 1)
        self.cc.init(self.st)
        self.rtt, self.gap = rtt, gap
        self.trace: list[tuple[int, int, float]] = []  # (segment acked, cwnd after, rtt)

    def run(self, segments: int = 2000) -> None:
        st = self.st
        sent_at = [0.0]  # send time of each segment; segment 0 leaves at t = 0
        st.snd_nxt = MSS
        last_ack = 0.0
        for n in range(segments):
            ack_time = max(sent_at[n] + self.rtt(n), last_ack + self.gap)
            last_ack = ack_time
            st.now = ack_time
            st.snd_una = (n + 1) * MSS
            if st.cwnd >= st.ssthresh:
                return
            sample = ack_time - sent_at[n]
            self.ss.on_sample(st, sample)
            self.cc.on_ack(st, MSS, True)
            self.trace.append((n, st.cwnd, sample))
            while st.snd_nxt + MSS <= st.snd_una + st.cwnd:
                sent_at.append(ack_time)
                st.snd_nxt += MSS


def round_of(segment: int) -> int:
    return (segment + 1).bit_length() - 1


# --- HyStart ---------------------------------------------------------------------------

RISE = 0.03  # above HyStart's threshold: clamp(100 ms / 8, 4 ms, 16 ms) = 12.5 ms


def rise_at_round_6(n: int) -> float:
    return BASE + (RISE if n >= 63 else 0.0)


def test_hystart_delay_exit_on_the_ninth_sample_of_the_round_where_the_rtt_rises():
    path = Path("hystart", rise_at_round_6)  # gap 0: no ACK train
    path.run()
    assert path.ss.exit == "delay"
    # Round 6 opens with cwnd 64; 8 samples are taken (cwnd 72), the 9th is compared.
    assert path.st.ssthresh == 72 * MSS
    last = path.trace[-1][0]
    assert round_of(last) == 6 and last == 63 + 8


def test_hystart_ignores_a_rise_below_its_threshold():
    path = Path("hystart", lambda n: BASE + (0.012 if n >= 63 else 0.0))
    path.run(400)
    assert path.ss.exit == ""
    assert path.st.ssthresh > 1 << 40


def test_hystart_ack_train_exit_when_the_round_lasts_half_the_min_rtt():
    # A 1 ms-per-segment bottleneck: each round's ACKs come 1 ms apart (a train), so
    # round k lasts 2^k - 1 ms. Round 6 (64 ACKs, cwnd 64 at its start) is the first to
    # pass delay_min / 2 = 50.5 ms: on its ACK at +51 ms, the 52nd, with cwnd 64 + 51.
    path = Path("hystart", lambda n: 0.101, gap=0.001)
    path.run()
    assert path.ss.exit == "train"
    assert path.st.ssthresh == 115 * MSS
    assert round_of(path.trace[-1][0]) == 6


def test_hystart_waits_for_sixteen_segments():
    path = Path("hystart", lambda n: BASE + (RISE if n >= 3 else 0.0))
    path.run()
    # The rise from round 2 on is there all along, but HyStart only looks from cwnd 16:
    # the first round that opens at 16 (round 4, segment 15) exits after its 9th sample.
    assert path.ss.exit == "delay"
    assert path.st.ssthresh == (16 + 8) * MSS


# --- HyStart++ (RFC 9406) ----------------------------------------------------------------


def test_hystart_plus_plus_enters_css_in_the_round_of_the_rise_then_exits_after_5_rounds():
    path = Path("hystart++", rise_at_round_6)
    path.run()
    ss = path.ss
    # Rounds are counted from 1 (RFC 9406 starts one with the first ACK): round 7 is
    # slow start's round 6. CSS begins on its 8th sample (N_RTT_SAMPLE), cwnd 64 + 7.
    assert ss.css_entered_round == 7
    entry = next(i for i, (n, _, _) in enumerate(path.trace) if n == 63 + 7)
    assert path.trace[entry - 1][1] == 71 * MSS  # cwnd before the 8th ACK
    # From the 8th ACK on, cwnd grows by SMSS / CSS_GROWTH_DIVISOR per ACK.
    css = path.trace[entry - 1 : -1]  # the last entry is the exit ACK's
    growth = [b[1] - a[1] for a, b in zip(css, css[1:], strict=False)]
    assert growth and all(g == MSS // 4 for g in growth)
    # CSS_ROUNDS = 5 rounds later, congestion avoidance: ssthresh = cwnd, on the first
    # ACK of round 12 (which then grows cwnd as congestion avoidance does).
    assert ss.exit_round == 7 + 5
    assert path.st.ssthresh == path.trace[-2][1]


def test_hystart_plus_plus_resumes_slow_start_after_a_spurious_rise():
    # The RTT rises for round 6 only; round 7's minimum is back under the CSS baseline.
    path = Path("hystart++", lambda n: BASE + (RISE if 63 <= n < 127 else 0.0))
    path.run(600)
    ss = path.ss
    assert ss.css_entered_round == 7
    assert not ss.css and not ss.done
    # Back in slow start: one segment per ACK again.
    assert path.trace[-1][1] - path.trace[-2][1] == MSS


def test_hystart_plus_plus_only_in_the_first_slow_start():
    ss = HyStartPlusPlus(MSS)
    st = TcpState(MSS, 1)
    ss.on_timeout(st)
    assert ss.done  # RFC 9406 4.2: standard slow start after a timeout


def test_slow_start_defaults_per_variant():
    assert type(congestion_ops(TcpSpec(variant="cubic")).slow_start) is HyStart
    assert congestion_ops(TcpSpec(variant="newreno")).slow_start.name == "standard"
    assert congestion_ops(TcpSpec(variant="vegas")).slow_start.name == "standard"
    assert (
        congestion_ops(TcpSpec(variant="newreno", slow_start="hystart++")).slow_start.name
        == "hystart++"
    )
    with pytest.raises(ValueError, match="slow_start"):
        TcpSpec(variant="none", slow_start="hystart")


# --- the sender --------------------------------------------------------------------------


def test_cubic_with_hystart_leaves_slow_start_before_the_buffer_overflows():
    # 10 Mbit/s, 50 ms each way: BDP = 10e6 * 0.1 / 8 / 1500 B ~ 83 segments, and a
    # buffer of 60 packets. Standard slow start doubles past BDP + buffer and loses a
    # burst; HyStart's ACK train ends slow start near half the BDP's round trip.
    def flow(slow_start):
        return run(
            one_link(
                rate=10e6,
                delay=0.05,
                limit_packets=60,
                duration=20,
                flows=[
                    bulk(
                        nbytes=3000 * MSS,
                        variant="cubic",
                        rcv_buf=1 << 22,
                        window_scaling=True,
                        slow_start=slow_start,
                    )
                ],
            )
        )

    hystart, standard = flow("hystart"), flow("standard")
    assert standard.flows["f"].retransmissions > 10
    exit_t, ssthresh = (v[0] for v in series(hystart, "flow.f.ssthresh"))
    bdp = 10e6 * 0.1 / 8
    assert bdp / 2 < ssthresh < bdp + 60 * 1500
    # Nothing is lost in slow start. CUBIC's first epoch (no W_max yet) then grows by
    # Linux's and ns-3's clamp, 5% per round trip (C t^3 adds under a segment in the first
    # second), so it fills the rest of the buffer no sooner than ln((BDP + 60) / exit) /
    # ln(1.06) round trips of at least 100 ms after the exit.
    rtx_t, rtx_v = series(hystart, "flow.f.retransmissions")
    first_loss = next(t for t, v in zip(rtx_t, rtx_v, strict=True) if v > 0)
    overflow = math.log((bdp + 60 * 1500) / ssthresh) / math.log(1.06) * 0.1
    assert first_loss > exit_t + overflow
    assert hystart.flows["f"].retransmissions < standard.flows["f"].retransmissions / 10
    assert hystart.flows["f"].completion_time < standard.flows["f"].completion_time


def test_a_paced_hystart_ack_train_must_last_the_whole_min_rtt():
    # Linux halves the ACK-train threshold only for an unpaced sender: pacing spreads a
    # round's segments (and so its ACKs) over up to half the RTT. On the 1 ms-per-segment
    # path above, round 6 lasts 63 ms < delay_min = 101 ms; round 7 (cwnd 128 at its start)
    # passes 101 ms on its ACK at +102 ms, with cwnd 128 + 102.
    path = Path("hystart", lambda n: 0.101, gap=0.001, pacing=True)
    path.run()
    assert path.ss.exit == "train"
    assert path.st.ssthresh == 230 * MSS
    assert round_of(path.trace[-1][0]) == 7


def test_paced_cubic_with_hystart_leaves_slow_start_only_once_the_path_is_full():
    # A sender on a 10 Gbit/s access link, then 50 Mbit/s, 20 ms each way: BDP = 50e6 *
    # 0.04 / 8 = 250 kB, below the 1000-packet buffer. Pacing at twice cwnd/srtt spreads
    # every round's ACKs over about half the RTT, so a train passes delay_min / 2 as soon
    # as the ACKs come closer than 2 ms (at about 100 kB here, whatever the path): only
    # delay_min says the path is full, as Linux has it for a paced socket. Slow start from
    # 10 segments fills the path in about four round trips, and the link then stays busy.
    rate, one_way = 50e6, 0.02
    scenario = Scenario.model_validate(
        {
            "name": "paced-hystart",
            "duration": 1.5,
            "nodes": [
                {"id": "h1", "kind": "host"},
                {"id": "r", "kind": "router"},
                {"id": "h2", "kind": "host"},
            ],
            "links": [
                link("access", "h1", "r", rate=10e9, delay=0.0001, limit_packets=1000),
                link("wan", "r", "h2", rate=rate, delay=one_way, limit_packets=1000),
            ],
            "flows": [
                bulk(
                    nbytes=None,
                    variant="cubic",
                    slow_start="hystart",
                    initial_cwnd=10,
                    rcv_buf=1 << 24,
                    window_scaling=True,
                    pacing=True,
                )
            ],
        }
    )
    result = run(scenario)
    assert series(result, "flow.f.ssthresh")[1][0] > rate * 2 * one_way / 8
    assert result.flows["f"].goodput_bps > 0.75 * rate
