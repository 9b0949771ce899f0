"""Frame Relay switch queues (DE first, FECN/BECN, the cycle average) and BECN-adaptive
shaping; the network is test_engine_framerelay.py's (framerelay_net.py)."""

from __future__ import annotations

import pytest
from framerelay_net import FRAME_BITS, QUIET, T1, cbr, fr_net, frame_rate_on, greedy, pvc

from engine import simulate
from engine.framerelay import CycleAverage
from engine.result import Result

pytestmark = pytest.mark.unit


# --- switch queues ------------------------------------------------------------------------


def test_de_frames_are_dropped_first_at_a_congested_switch_port():
    """Conforming pvc1 (190k < CIR) and pvc2 (410k, CIR 128k, mostly DE) share a 512k port:
    the queue settles between the DE threshold and its limit, so every drop is a DE frame."""
    limit = 40
    scenario = fr_net(
        pvcs=[
            pvc("p1", cir=256e3, bc=32000, be=0),
            pvc("p2", src="r3", dlci=200, cir=128e3, bc=16000, be=40000),
        ],
        flows=[cbr("a", frame_rate=190e3), cbr("b", frame_rate=410e3, src="h3")],
        a2_rate=512e3,
        a2_limit=limit,
        third_router=True,
        duration=120.0,
        switch={"congestion_threshold": 0.5, "de_discard_threshold": 0.75},
    )
    result = simulate(scenario)
    port = result.links["a2:sw>r2"]
    p1, p2 = result.pvcs["p1"], result.pvcs["p2"]
    assert p2.de_dropped > 0
    assert port.drops == p1.de_dropped + p2.de_dropped  # no tail drop of a non-DE frame
    assert p1.de_marked == 0 and result.flows["a"].packets_dropped == 0
    assert p2.excess_dropped == 0
    assert int(0.75 * limit) <= port.queue_max < limit
    # The DE share dropped is what the 512k port cannot carry: 600k offered.
    assert port.utilization == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize("measure", ["cycle_average", "instantaneous"])
def test_fecn_and_becn_appear_once_the_queue_passes_the_congestion_threshold(measure):
    """A greedy TCP flow fills a 20-packet switch queue: data frames get FECN, the ACKs
    leaving the same switch in the opposite direction get BECN. With a 1000-packet queue the
    window (45 segments) never reaches half of it and nothing is marked."""

    def run(limit: int) -> Result:
        return simulate(
            fr_net(
                pvcs=[pvc(cir=T1, be=0)],
                flows=[greedy(rcv_buf=65535)],
                a2_rate=512e3,
                a2_limit=limit,
                duration=60.0,
                switch={
                    "congestion_threshold": 0.5,
                    "de_discard_threshold": 0.75,
                    "congestion_measure": measure,
                },
            )
        )

    congested, quiet = run(20), run(1000)
    assert congested.links["a2:sw>r2"].queue_max >= 10
    p = congested.pvcs["p"]
    assert p.fecn_marked > 0 and p.becn_marked > 0
    assert p.becn_marked <= p.frames - congested.flows["f"].segments_sent  # only ACKs
    assert quiet.links["a2:sw>r2"].queue_max < 500
    assert quiet.pvcs["p"].fecn_marked == 0 and quiet.pvcs["p"].becn_marked == 0


def test_the_cycle_average_is_the_area_under_the_queue_over_the_last_two_cycles():
    """ANSI T1.618 Annex A's measure, on frames of one transmission time tau: a burst of 4
    at t = 0 into an idle port holds 4, 3, 2, 1 frames for tau each (area 10 tau), then
    the port idles until t = 1; the average at t is 10 tau / t. A burst of 2 at t = 1
    starts a second cycle (area 3 tau); at t = 1 + 2 tau the average covers both cycles.
    A burst of 1 at t = 2 starts a third: the first cycle is forgotten."""
    tau = 0.01
    cycle = CycleAverage(by_bytes=False)

    def burst(at: float, n: int) -> None:
        cycle.arrival(at)
        for k in range(n):
            cycle.add(at, at + (k + 1) * tau, 1500)

    burst(0.0, 4)
    assert cycle.average(2 * tau) == pytest.approx((4 + 3) * tau / (2 * tau))  # 3.5
    assert cycle.average(0.5) == pytest.approx(10 * tau / 0.5)
    burst(1.0, 2)
    assert cycle.average(1.0 + 2 * tau) == pytest.approx((10 + 3) * tau / (1.0 + 2 * tau))
    burst(2.0, 1)
    assert cycle.average(2.0 + tau) == pytest.approx((3 + 1) * tau / (1.0 + tau))
    by_bytes = CycleAverage(by_bytes=True)
    by_bytes.arrival(0.0)
    by_bytes.add(0.0, tau, 1500)
    assert by_bytes.average(tau / 2) == pytest.approx(1500)


# --- BECN-adaptive shaping ----------------------------------------------------------------


def test_becn_shaping_steps_the_rate_down_to_min_cir_and_back_after_quiet():
    """Cisco IOS adaptive shaping: rate x0.75 per BECN at most once per Tc down to min_cir;
    after 16 Tc without BECN it steps back up by (Bc + Be) / 16 per Tc to CIR. The 200k
    switch port congests while the TCP flow runs (to 30 s); a light CBR flow from 45 s
    finds the rate recovered (4 steps from min_cir, where dividing by 0.75 took 3)."""
    cir, min_cir, bc = 512e3, 256e3, 64000
    tc = bc / cir
    scenario = fr_net(
        pvcs=[pvc(cir=cir, bc=bc, be=bc, becn_shaping=True, min_cir=min_cir)],
        flows=[
            greedy(rcv_buf=65535, stop=30.0),
            cbr("late", frame_rate=32e3, start=45.0, stop=50.0),
        ],
        a2_rate=200e3,
        a2_limit=20,
        duration=60.0,
    )
    result = simulate(scenario)
    t, v = result.series["pvc.p.rate"].t, result.series["pvc.p.rate"].v
    step = 2 * bc / 16 / tc  # (Bc + Be) / 16 per Tc: 64 kbit/s
    assert v[:4] == pytest.approx([cir, cir * 0.75, cir * 0.75**2, min_cir])
    assert v[-5:] == pytest.approx([min_cir + k * step for k in range(5)])
    last_down = -1.0
    for i in range(1, len(v)):
        if v[i] < v[i - 1]:
            assert v[i] == pytest.approx(max(min_cir, v[i - 1] * 0.75))
            assert t[i] - last_down >= tc
            last_down = t[i]
        else:
            assert v[i] == pytest.approx(min(cir, v[i - 1] + step))
            assert t[i] - last_down >= QUIET * tc
            if v[i - 1] > v[i - 2]:  # consecutive step-ups are one Tc apart
                assert t[i] - t[i - 1] == pytest.approx(tc)
    assert t[-1] < 45.0  # traced when due, not when the late flow noticed
    assert result.pvcs["p"].becn_marked > 0


def test_shaping_holds_the_pvc_to_its_current_rate():
    """With no BECN the shaper spaces frames at CIR: a CBR stream at 2x CIR is delayed, not
    policed, and the shaper's queue (the port's limit) overflows instead."""
    cir = 256e3
    result = simulate(
        fr_net(
            pvcs=[pvc(cir=cir, bc=32000, be=0, becn_shaping=True)],
            flows=[cbr("u", frame_rate=2 * cir)],
            duration=100.0,
        )
    )
    p = result.pvcs["p"]
    assert frame_rate_on(result, "a1:r1>sw") == pytest.approx(cir, rel=0.02)
    assert p.excess_dropped == 0 and p.de_marked == 0
    # Released: CIR x T worth of frames; still held at the end: a full queue (1000 frames).
    released = cir * 100.0 / FRAME_BITS
    assert p.shaper_dropped == pytest.approx(p.frames - released - 1000, abs=2)
