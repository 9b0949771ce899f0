"""Frame Relay PVCs (engine/framerelay/), each test tied to the mechanism's definition.

Topology: h1 -[lan1]- r1 =[a1]= sw =[a2]= r2 -[lan2]- h2, with optionally h3 -[lan3]- r3
=[a3]= sw; the `a*` links are Frame Relay (8 bytes of framing), `sw` is an fr_switch. CIR,
Bc and Be count frame bits on the PVC's first link: a UDP datagram of 512 payload bytes is
a 548-byte frame (512 + 8 UDP + 20 IP + 8 Frame Relay) = 4,384 bits.
"""

from __future__ import annotations

from typing import Any

import pytest
from engine_helpers import link, tcp_opts

from engine import Scenario, simulate
from engine.framerelay import CycleAverage, FrQueue, PvcDirection, PvcExit, PvcIngress
from engine.net import Egress
from engine.result import Result
from engine.simulation import Network

pytestmark = pytest.mark.unit

T1 = 1.544e6
FRAME_BITS = (512 + 8 + 20 + 8) * 8  # 4,384
QUIET = 16  # Tc intervals without BECN before the shaper steps back up


def fr_net(
    *,
    pvcs: list[dict],
    flows: list[dict],
    a2_rate: float = T1,
    a2_limit: int = 1000,
    switch: dict | None = None,
    third_router: bool = False,
    duration: float = 100.0,
    seed: int = 1,
    delay: float = 0.02,
) -> Scenario:
    nodes = [
        ("h1", "host"),
        ("r1", "router"),
        ("sw", "fr_switch"),
        ("r2", "router"),
        ("h2", "host"),
    ]
    links = [
        link("lan1", "h1", "r1", rate=10e6, delay=0.0001, encap="ethernet"),
        link("a1", "r1", "sw", rate=T1, delay=delay, encap="frame_relay"),
        link(
            "a2", "sw", "r2", rate=a2_rate, delay=delay, encap="frame_relay", limit_packets=a2_limit
        ),
        link("lan2", "r2", "h2", rate=10e6, delay=0.0001, encap="ethernet"),
    ]
    if third_router:
        nodes += [("h3", "host"), ("r3", "router")]
        links += [
            link("lan3", "h3", "r3", rate=10e6, delay=0.0001, encap="ethernet"),
            link("a3", "r3", "sw", rate=T1, delay=0.02, encap="frame_relay"),
        ]
    d: dict[str, Any] = {
        "name": "engine-test-fr",
        "seed": seed,
        "duration": duration,
        "nodes": [{"id": n, "kind": k} for n, k in nodes],
        "links": links,
        "frame_relay": {"pvcs": pvcs},
        "flows": flows,
    }
    if switch is not None:
        d["frame_relay"]["switch"] = switch
    return Scenario.model_validate(d)


def pvc(
    pvc_id: str = "p", *, src: str = "r1", dst: str = "r2", dlci: int = 100, **fields: Any
) -> dict:
    return {"id": pvc_id, "dlci": dlci, "src": src, "dst": dst, **fields}


def cbr(
    flow_id: str,
    *,
    frame_rate: float,
    src: str = "h1",
    dst: str = "h2",
    start: float = 0.0,
    stop: float | None = None,
) -> dict:
    """UDP CBR of 512-byte datagrams whose *frame* bit rate on a Frame Relay link is given."""
    d = {
        "id": flow_id,
        "kind": "udp_cbr",
        "src": src,
        "dst": dst,
        "rate": frame_rate / FRAME_BITS * 512 * 8,
        "packet_size": 512,
        "start": start,
    }
    if stop is not None:
        d["stop"] = stop
    return d


def greedy(flow_id: str = "f", *, stop: float | None = None, **tcp: Any) -> dict:
    d = {
        "id": flow_id,
        "kind": "tcp_bulk",
        "src": "h1",
        "dst": "h2",
        "start": 0.0,
        "tcp": tcp_opts(**tcp),
    }
    if stop is not None:
        d["stop"] = stop
    return d


def frame_rate_on(result: Result, key: str) -> float:
    """Frame bits per second carried by one link direction over the run."""
    return result.links[key].bytes * 8 / result.sim_time


# --- policing -----------------------------------------------------------------------------


def test_be_zero_holds_a_greedy_tcp_flow_to_cir():
    """Be = 0: frames beyond Bc are discarded, so committed frame bits <= Bc + CIR * T.
    Bc defaults to CIR x 1 s (Tc = 1 s): the initial full bucket adds Bc / T = 0.3%."""
    cir = 256e3
    scenario = fr_net(pvcs=[pvc(cir=cir, be=0)], flows=[greedy(rcv_buf=65535)], duration=300.0)
    result = simulate(scenario)
    p = result.pvcs["p"]
    # The switch polices frames as they arrive from a1: what it admits leaves by a2.
    rate = frame_rate_on(result, "a2:sw>r2")
    assert rate <= cir * 1.02
    assert rate > 0.5 * cir  # the cap binds; TCP is not starved
    assert result.flows["f"].goodput_bps < cir
    assert p.excess_dropped > 0 and p.de_marked == 0


def test_be_zero_passes_exactly_cir_of_a_cbr_stream_above_it():
    cir = 256e3
    result = simulate(
        fr_net(
            pvcs=[pvc(cir=cir, bc=32000, be=0)],
            flows=[cbr("u", frame_rate=2 * cir)],
            duration=200.0,
        )
    )
    assert frame_rate_on(result, "a2:sw>r2") == pytest.approx(cir, rel=0.02)
    p = result.pvcs["p"]
    assert p.excess_dropped == pytest.approx(p.frames / 2, rel=0.02)
    assert result.flows["u"].packets_dropped == p.excess_dropped


@pytest.mark.parametrize("frame_rate", [320e3, 480e3])
def test_frames_beyond_bc_are_marked_de_and_beyond_bc_plus_be_dropped(frame_rate: float):
    """Long-run shares: committed CIR, DE up to Be/Tc, the rest discarded."""
    cir, bc, be = 256e3, 32000, 16000
    excess_rate = be / (bc / cir)  # Be per Tc = 128 kbit/s
    result = simulate(
        fr_net(
            pvcs=[pvc(cir=cir, bc=bc, be=be)],
            flows=[cbr("u", frame_rate=frame_rate)],
            duration=200.0,
        )
    )
    p = result.pvcs["p"]
    de_share = (min(frame_rate, cir + excess_rate) - cir) / frame_rate
    drop_share = max(0.0, frame_rate - cir - excess_rate) / frame_rate
    assert p.de_marked / p.frames == pytest.approx(de_share, abs=0.01)
    assert p.excess_dropped / p.frames == pytest.approx(drop_share, abs=0.01)
    if drop_share == 0:
        assert p.excess_dropped == 0
    t, v = result.series["pvc.p.de_marked"].t, result.series["pvc.p.de_marked"].v
    assert v[-1] == p.de_marked and t == sorted(t)


@pytest.mark.parametrize("delay", [0.02, 0.05])
@pytest.mark.parametrize("be", [0, 193_000])
def test_a_pvc_whose_cir_is_the_port_speed_never_polices_a_single_transfer(delay, be):
    """The switch polices frames as they arrive from the access link, which delivers at
    most the port speed: with CIR = the T1 port speed the committed bucket (Bc = CIR / 8)
    refills during each frame's own serialisation as fast as the frame drains it. So a TCP
    transfer whose window bursts faster than that into the router's queue loses nothing
    and is marked nothing, and gets the T1's payload rate (1460 of each 1508 frame bytes)
    less slow start, even with Be = 0 and 50 ms access links."""
    scenario = fr_net(
        pvcs=[pvc(cir=T1, bc=T1 / 8, be=be)],
        flows=[greedy(rcv_buf=65535)],
        duration=60.0,
        delay=delay,
    )
    result = simulate(scenario)
    p = result.pvcs["p"]
    assert p.excess_dropped == 0 and p.de_marked == 0
    assert result.links["a1:r1>sw"].queue_max > 10  # the window did burst into the router
    payload_rate = T1 * 1460 / 1508
    assert result.flows["f"].goodput_bps > 0.95 * payload_rate


# --- policing discipline: Tc intervals or token buckets ----------------------------------


def policed_rate(policing: str, bc: float, be: float = 0.0) -> float:
    """Frame bit/s a CBR stream at twice the CIR gets through a PVC (the switch -> r2 port
    carries only what the policer admits)."""
    cir = 256e3
    result = simulate(
        fr_net(
            pvcs=[pvc(cir=cir, bc=bc, be=be, policing=policing)],
            flows=[cbr("u", frame_rate=2 * cir)],
            duration=100.0,
        )
    )
    return frame_rate_on(result, "a2:sw>r2")


def test_interval_and_token_bucket_policing_agree_when_bc_is_whole_frames():
    """Bc = 8 frames of 4,384 bits: each Tc interval passes exactly Bc, and the bucket
    refills exactly Bc per Tc: both give CIR in the long run."""
    bc = 8 * FRAME_BITS
    bucket, interval = policed_rate("token_bucket", bc), policed_rate("interval", bc)
    assert bucket == pytest.approx(256e3, rel=0.01)
    assert interval == pytest.approx(bucket, rel=0.01)


@pytest.mark.parametrize("be_frames", [0, 1.5])
def test_interval_policing_loses_the_part_of_bc_and_be_smaller_than_a_frame(be_frames):
    """Bc = 2.5 frames, Be = 0 or 1.5 frames. Per Tc interval the switch commits the 2
    whole frames that fit Bc and marks DE the 1 that fits Be; the half frame left of each
    is lost when the interval ends: (floor(Bc/F) + floor(Be/F)) * F / Tc = 0.8 x CIR (1.2 x
    with Be). The token bucket carries it over: CIR + Be/Tc = 1 x CIR (1.6 x)."""
    cir, bc, be = 256e3, 2.5 * FRAME_BITS, be_frames * FRAME_BITS
    tc = bc / cir
    whole = (2 + int(be_frames)) * FRAME_BITS / tc
    assert policed_rate("interval", bc, be) == pytest.approx(whole, rel=0.01)
    assert policed_rate("token_bucket", bc, be) == pytest.approx(cir + be / tc, rel=0.01)


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


# --- residual errors, determinism, zero cost ---------------------------------------------


def test_residual_errors_lose_frames_at_the_configured_rate():
    rate = 0.02
    result = simulate(
        fr_net(
            pvcs=[pvc(cir=T1, residual_error_rate=rate)],
            flows=[cbr("u", frame_rate=500e3)],
            duration=100.0,
        )
    )
    p, u = result.pvcs["p"], result.flows["u"]
    n = p.frames
    assert p.residual_error_rate == pytest.approx(rate, abs=4 * (rate * (1 - rate) / n) ** 0.5)
    assert u.packets_dropped == round(p.residual_error_rate * n)


def test_identical_seeds_give_identical_results():
    scenario = fr_net(
        pvcs=[pvc(cir=256e3, bc=32000, be=16000, becn_shaping=True, residual_error_rate=0.01)],
        flows=[greedy(rcv_buf=65535)],
        a2_rate=200e3,
        a2_limit=20,
        duration=60.0,
    )
    a, b = simulate(scenario), simulate(scenario)
    other = simulate(scenario, seed=2)
    strip = {"wall_time"}
    assert a.model_dump(exclude=strip) == b.model_dump(exclude=strip)
    assert a.pvcs["p"].model_dump() != other.pvcs["p"].model_dump()


def test_pvc_entry_and_exit_are_spliced_around_the_hops_it_carries():
    scenario = fr_net(pvcs=[pvc(cir=T1)], flows=[greedy()])
    net = Network(scenario, 1)
    fwd = net._path("h1", "h2")
    assert [type(h) for h in fwd] == [
        Egress,
        PvcDirection,
        Egress,
        PvcIngress,
        Egress,
        PvcExit,
        Egress,
    ]
    assert fwd[1].forward and [fwd[2].key, fwd[4].key] == ["a1:r1>sw", "a2:sw>r2"]
    assert fwd[3] is fwd[1].ingress  # policed at the switch, after the access link
    rev = net._path("h2", "h1")
    assert not rev[1].forward and rev[1].opposite is fwd[1]
    assert isinstance(net.ports[("a2", "sw", "r2")].queue, FrQueue)
    assert not isinstance(net.ports[("lan1", "h1", "r1")].queue, FrQueue)


def test_without_pvcs_the_path_is_bare_ports():
    d = fr_net(pvcs=[pvc(cir=T1)], flows=[greedy()]).model_dump(mode="json")
    d["frame_relay"] = None
    net = Network(Scenario.model_validate(d), 1)
    assert net.frame_relay is None
    assert all(type(h) is Egress for h in net._path("h1", "h2"))
    assert not any(isinstance(port.queue, FrQueue) for port in net.ports.values())


def test_a_pvc_at_port_speed_changes_nothing_in_the_riverbed_lab():
    """riverbed.md: the presets carry no PVC because a contract at the port speed (CIR = T1,
    Be = 0) would be equivalent. With the policer at the switch it is, to the bit: the
    64 KB window's bursts wait in the router's queue and reach the switch at the T1 rate."""
    from engine.presets import load_preset

    plain = load_preset("riverbed-t1-64k")
    d = plain.model_dump(mode="json")
    d["frame_relay"] = {"pvcs": [pvc("pvc1", src="branch", dst="dc", cir="T1", be=0)]}
    with_pvc = simulate(Scenario.model_validate(d))
    assert with_pvc.pvcs["pvc1"].excess_dropped == 0 and with_pvc.pvcs["pvc1"].de_marked == 0
    a, b = simulate(plain).flows["backup"], with_pvc.flows["backup"]
    assert b.completion_time == a.completion_time and b.bytes_delivered == a.bytes_delivered
