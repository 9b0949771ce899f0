"""Traffic shaping at a router (engine/shaping.py): a token bucket (depth bc + be, filled at
the shaped rate) in front of a port or a PVC direction, its queue visible as series and
counters, and its rate a bound of the diagnosis like a link's.

The Frame Relay backup of issue 23 (bench/goldens.py `frame_relay_backup`): ws -[lan1
100 Mb/s]- branch =[access1 768 kb/s, 15 ms]= cloud =[access2]= dc -[lan2]- server, a PVC
with CIR 256 kb/s, Bc = Be = 32 kbit (Tc = 125 ms: the policer admits CIR + Be/Tc = 512
kb/s of frames in the long run), a 16 KiB window. A 1,460-byte segment is a 1,508-byte
frame (8 bytes of Frame Relay framing): 12,064 bits.
"""

from __future__ import annotations

import sys
from pathlib import Path
from statistics import mean
from typing import Any

import pytest
from engine_helpers import bulk, cbr, dumbbell
from pydantic import ValidationError

from engine import Scenario, simulate
from engine.net import wire_bytes

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from goldens import frame_relay_backup  # noqa: E402  (the issue's case, one home)

from engine.analysis.warnings import scenario_warnings

pytestmark = pytest.mark.unit

MSS = 1460
FRAME_BITS = (MSS + 40 + 8) * 8  # 12,064
CIR = 256e3


def backup(nbytes: int, **pvc: Any) -> Scenario:
    data = frame_relay_backup()
    data["flows"][0]["bytes"] = nbytes
    data["frame_relay"]["pvcs"][0].update(pvc)
    return Scenario.model_validate(data)


def hop_time(ip_bytes: int) -> float:
    """ws to server (or back) for one IP packet: propagation and serialisation per link."""
    lan = wire_bytes("ethernet", ip_bytes) * 8 / 100e6 + 0.1e-3
    access = wire_bytes("frame_relay", ip_bytes) * 8 / 768e3 + 15e-3
    return 2 * lan + 2 * access


def test_shaping_at_cir_plus_be_uses_the_excess_burst_without_a_discard():
    """Shaped at CIR + Be/Tc = 512 kb/s with a 32 kbit bucket, the PVC never sends more
    than 32 kbit + 512 kb/s x T, which the policer's buckets (32 + 32 kbit, refilled at
    256 + 256 kb/s) always admit: no discard, and the transfer runs at the shaped rate.

    The bound, derived: the handshake (a 52-byte SYN out, its SYN-ACK back), then every
    frame through the shaper (34,246 full frames and one of 850 + 48 bytes), less the
    bucket's 32 kbit that leave at once, at 512 kb/s, then the last frame's way to the
    server. Policed without shaping the same transfer takes 986 s; shaped to the CIR,
    1,614 s."""
    rate, bucket = 512e3, 32e3
    result = simulate(backup(50_000_000, shaping={"rate": rate, "bc": bucket}))
    pvc = result.pvcs["p1"]
    assert pvc.excess_dropped == 0 and pvc.shaper_dropped == 0
    full, last = divmod(50_000_000, MSS)
    frame_bits = full * FRAME_BITS + (last + 40 + 8) * 8
    handshake = 2 * hop_time(40 + 12)
    bound = handshake + (frame_bits - bucket) / rate + hop_time(last + 40)
    took = result.flows["backup"].completion_time
    assert took >= bound * (1 - 1e-9), (took, bound)
    assert took <= bound * 1.03, (took, bound)
    # The shaped rate is the flow's bound, and the diagnosis says so.
    diagnosis = result.diagnosis["backup"]
    assert diagnosis.bottleneck == "pvc:p1" and diagnosis.limit == "link_capacity"
    assert diagnosis.bounds.link_bps == pytest.approx(rate * MSS / (FRAME_BITS / 8), rel=0.01)


def test_a_pvc_shaped_to_its_cir_is_the_diagnosed_bound_and_its_queue_explains_the_rtt():
    """Shaped to the CIR (`becn_shaping`), the transfer runs at 256 kb/s of frames, 247.9
    kb/s of payload: the diagnosis names the PVC with that bound (not the 495.7 kb/s its
    contract would admit). Every data frame waits in the shaper: the one-way delay is the
    path's plus the shaper's mean wait, the RTT rises from the base by that wait, and the
    shaper's queue obeys Little's law (frames per second x wait = frames waiting)."""
    result = simulate(backup(5_000_000, becn_shaping=True))
    flow, diagnosis = result.flows["backup"], result.diagnosis["backup"]
    shaped_payload = CIR * MSS / (FRAME_BITS / 8)
    assert diagnosis.bottleneck == "pvc:p1" and diagnosis.limit == "link_capacity"
    assert diagnosis.bounds.link_bps == pytest.approx(shaped_payload, rel=0.05)
    assert flow.goodput_bps <= diagnosis.bounds.link_bps
    shaper = result.pvcs["p1"].shaper
    assert shaper is not None and shaper.rate_bps == CIR
    waits = result.series["pvc.p1.queue_delay"].v
    assert mean(waits) == pytest.approx(shaper.delay_mean, rel=1e-9)
    assert flow.delay_mean == pytest.approx(hop_time(MSS + 40) + shaper.delay_mean, rel=0.005)
    # RTT samples are one timed segment per round trip, so they see the wait less evenly.
    rise = flow.rtt_mean - flow.rtt_min
    assert rise == pytest.approx(shaper.delay_mean, rel=0.1)
    sim_time = result.sim_time
    little = shaper.frames / sim_time * shaper.delay_mean
    assert shaper.queue_mean == pytest.approx(little, rel=0.01)
    # The 16 KiB window (11 segments) bounds the queue: one of them is always beyond it.
    assert max(result.series["pvc.p1.queue_packets"].v) == shaper.queue_max == 10


def test_a_token_bucket_lets_its_depth_through_at_once_then_spaces_at_its_rate():
    """UDP at twice the shaped rate R into an interface shaper whose bucket holds 10 frames
    (D = 10 b): the bucket drains at 2R - R = R, so frames leave undelayed while it still
    holds a frame, for (D - b) / R seconds, 2 (D - b) / b = 18 frames after the first: 19
    undelayed, then every frame waits and they leave at R: the N frames of the 5 s are all
    through (N b - D) / R after the start, and the last reaches its host a few ms later."""
    frame = wire_bytes("ppp", 512 + 28) * 8  # a 512-byte datagram on the PPP WAN
    rate = 100e3
    scenario = dumbbell(
        rate=1e6,
        delay=0.01,
        flows=[cbr(rate=2 * rate * 512 * 8 / frame, stop=5.0)],
        duration=10.0,
    )
    data = scenario.model_dump(mode="json")
    data["links"][1]["shaping_a_to_b"] = {"rate": rate, "bc": 10 * frame}
    result = simulate(Scenario.model_validate(data))
    shaper = result.links["wan:r1>r2"].shaper
    assert shaper is not None
    assert shaper.frames + shaper.dropped == result.flows["u"].packets_sent
    assert shaper.frames - shaper.delayed == 19
    assert shaper.dropped == 0  # the queue (1,000 frames) holds the 5 s of excess
    # The last datagram is sent at (N - 1) x its interval, reaches the shaper over lan1,
    # waits longest of all, and leaves when the N frames less the bucket are through,
    # counted from the first frame's arrival.
    interval = 512 * 8 / (2 * rate * 512 * 8 / frame)
    lan1 = wire_bytes("ethernet", 540) * 8 / 100e6 + 1e-4
    arrives = (shaper.frames - 1) * interval + lan1
    drained = lan1 + (shaper.frames * frame - 10 * frame) / rate
    assert arrives + shaper.delay_max == pytest.approx(drained, rel=1e-9)
    assert "link.wan.r1>r2.shaper_queue_packets" in result.series
    assert "link.wan.r1>r2.shaper_delay" in result.series


def test_an_interface_shaper_is_the_flows_bound():
    """A 1 Mb/s WAN shaped at 400 kb/s (PPP: a full segment is 1,508 bytes on the wire):
    the flow gets at most 400 kb/s x 1460 / 1508 of payload, the diagnosis names the
    shaper as the bottleneck, and the dry run knows it before the run."""
    rate = 400e3
    scenario = dumbbell(
        rate=1e6, delay=0.02, flows=[bulk(nbytes=500_000, rcv_buf=65535)], duration=60.0
    )
    data = scenario.model_dump(mode="json")
    data["links"][1]["shaping_a_to_b"] = {"rate": rate, "bc": 12_064}
    shaped = Scenario.model_validate(data)
    result = simulate(shaped)
    payload = rate * MSS / (MSS + 48)
    diagnosis = result.diagnosis["f"]
    assert diagnosis.bottleneck == "shaper:wan:r1>r2" and diagnosis.limit == "link_capacity"
    assert result.flows["f"].goodput_bps <= diagnosis.bounds.link_bps
    assert diagnosis.bounds.link_bps == pytest.approx(payload, rel=0.05)
    from engine.analysis import path_facts

    facts = path_facts(shaped)["f"]
    assert facts.bottleneck == "shaper:wan:r1>r2" and facts.link_bps == pytest.approx(payload)


@pytest.mark.parametrize(
    ("where", "spec", "loc"),
    [
        ("link", {"bc": 1000}, ("links", 1, "shaping_a_to_b", "rate")),
        ("link", {"rate": 1e5, "adaptive": "becn"}, ("links", 1, "shaping_a_to_b", "adaptive")),
        ("host", {"rate": 1e5}, ("links", 0, "shaping_a_to_b")),
        ("pvc", {"rate": 1e5, "min_cir": 1e4}, ("frame_relay", "pvcs", 0, "shaping", "min_cir")),
        ("pvc", {"adaptive": "becn", "bc": 0}, ("frame_relay", "pvcs", 0, "shaping", "bc")),
        ("pvc+becn", {"rate": 1e5}, ("frame_relay", "pvcs", 0, "becn_shaping")),
    ],
)
def test_bad_shaping_is_refused_at_its_field(where: str, spec: dict, loc: tuple):
    data = frame_relay_backup()
    if where == "link":
        data["links"][1]["shaping_a_to_b"] = spec
    elif where == "host":
        data["links"][0]["shaping_a_to_b"] = spec
    else:
        data["frame_relay"]["pvcs"][0]["shaping"] = spec
        data["frame_relay"]["pvcs"][0]["becn_shaping"] = where == "pvc+becn"
    with pytest.raises(ValidationError) as caught:
        Scenario.model_validate(data)
    assert loc in [tuple(e["loc"]) for e in caught.value.errors()]


def test_shaping_above_what_the_contract_admits_is_warned():
    """cir + be / Tc = 256 + 32 / 0.125 = 512 kb/s: a shaper at 600 kb/s feeds the policer
    more than it admits in the long run; at 512 kb/s it does not."""
    assert any("512 kbit/s" in w for w in scenario_warnings(backup(1000, shaping={"rate": 600e3})))
    assert not any("shaping" in w for w in scenario_warnings(backup(1000, shaping={"rate": 512e3})))
