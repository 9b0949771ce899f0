"""Frame Relay PVCs (engine/framerelay/), each test tied to the mechanism's definition.

Topology: h1 -[lan1]- r1 =[a1]= sw =[a2]= r2 -[lan2]- h2, with optionally h3 -[lan3]- r3
=[a3]= sw; the `a*` links are Frame Relay (8 bytes of framing), `sw` is an fr_switch. CIR,
Bc and Be count frame bits on the PVC's first link: a UDP datagram of 512 payload bytes is
a 548-byte frame (512 + 8 UDP + 20 IP + 8 Frame Relay) = 4,384 bits. The network and its
flows: framerelay_net.py; the switch queues and BECN shaping: test_engine_framerelay_switch.py.
"""

from __future__ import annotations

import pytest
from framerelay_net import FRAME_BITS, T1, cbr, fr_net, frame_rate_on, greedy, pvc

from engine import Scenario, simulate
from engine.framerelay import FrQueue, PvcDirection, PvcExit, PvcIngress
from engine.net import Egress
from engine.simulation import Network

pytestmark = pytest.mark.unit


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
