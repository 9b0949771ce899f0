"""Scenario builders and trace readers shared by the engine tests (test_engine_*.py).

Scenarios are built as plain dicts, like a client would send them, and validated with
`Scenario.model_validate`. The default topology is one full-duplex link between two hosts,
so a round trip is exactly computable: propagation both ways plus serialisation of one
data segment forward and one ACK back (`rtt`).
"""

from __future__ import annotations

import bisect
import copy
import math
from typing import Any

from engine import Scenario, simulate
from engine.flows import TcpFlow
from engine.net import wire_bytes
from engine.packet import Kind, Packet
from engine.result import Result
from engine.simulation import Network

IP_TCP = 40  # IPv4 + TCP headers, no options (engine/packet.py TCP_IP_HEADERS)
#: The builders' hosts queue at their own interface like a router (`egress: drop`): the
#: textbook scenarios here make a host's link the bottleneck and its queue the one that
#: overflows. Linux hosts' backpressure (the engine's default) is tested in
#: test_engine_host.py.
HOSTS = {"kind": "host", "egress": "drop"}
IP_UDP = 28


def link(
    link_id: str,
    a: str,
    b: str,
    *,
    rate: float,
    delay: float,
    encap: str = "ppp",
    limit_packets: int = 1000,
    loss: dict | None = None,
    mtu: int = 1500,
) -> dict:
    d: dict[str, Any] = {
        "id": link_id,
        "a": a,
        "b": b,
        "rate": rate,
        "delay": delay,
        "encap": encap,
        "mtu": mtu,
        "queue": {"discipline": "droptail", "limit_packets": limit_packets},
    }
    if loss is not None:
        d["loss"] = loss
    return d


def tcp_opts(**overrides: Any) -> dict:
    """A deterministic textbook TCP: no handshake, no delayed ACKs, 1 s initial RTO, RFC 5681
    / 6582 / 6675 fast recovery (not PRR) with RFC 6675's duplicate-ACK loss detection (not
    RACK-TLP), RFC 5681 slow start (no HyStart) and growth per ACK (not Linux's per
    segment acknowledged)."""
    opts: dict[str, Any] = {
        "variant": "reno",
        "mss": 1460,
        "rcv_buf": 65535,
        "window_scaling": False,
        "initial_cwnd": 1,
        "delayed_ack": {"enabled": False},
        "handshake": False,
        "min_rto": 1.0,
        "max_rto": 60.0,
        "initial_rto": 1.0,
        "recovery": "classic",
        "slow_start": "standard",
        "ack_counting": "acks",
        "loss_detection": "dupack",
    }
    opts.update(overrides)
    return opts


def one_link(
    *,
    rate: float = 1e6,
    delay: float = 0.05,
    encap: str = "ppp",
    limit_packets: int = 1000,
    loss: dict | None = None,
    flows: list[dict] | None = None,
    duration: float = 600.0,
    seed: int = 1,
    **scenario_fields: Any,
) -> Scenario:
    """Host `h1` to host `h2` over link `wan`; data flows a_to_b (h1 -> h2). The queue at
    h1 is the textbook bottleneck queue, which drops (`egress: drop`, see `HOSTS`)."""
    d: dict[str, Any] = {
        "name": "engine-test",
        "seed": seed,
        "duration": duration,
        "nodes": [{"id": "h1", **HOSTS}, {"id": "h2", **HOSTS}],
        "links": [
            link(
                "wan",
                "h1",
                "h2",
                rate=rate,
                delay=delay,
                encap=encap,
                limit_packets=limit_packets,
                loss=loss,
            )
        ],
        "flows": flows if flows is not None else [bulk()],
    }
    d.update(scenario_fields)
    return Scenario.model_validate(d)


def dumbbell(
    *,
    access_rate: float = 100e6,
    access_delay: float = 0.0001,
    rate: float = 1e6,
    delay: float = 0.05,
    encap: str = "ppp",
    limit_packets: int = 1000,
    loss: dict | None = None,
    flows: list[dict] | None = None,
    duration: float = 600.0,
    seed: int = 1,
    **scenario_fields: Any,
) -> Scenario:
    """h1 -[lan1]- r1 -[wan]- r2 -[lan2]- h2: fast ethernet access, a slow WAN bottleneck."""
    d = {
        "name": "engine-test-dumbbell",
        "seed": seed,
        "duration": duration,
        "nodes": [
            {"id": "h1", **HOSTS},
            {"id": "r1", "kind": "router"},
            {"id": "r2", "kind": "router"},
            {"id": "h2", **HOSTS},
        ],
        "links": [
            link("lan1", "h1", "r1", rate=access_rate, delay=access_delay, encap="ethernet"),
            link(
                "wan",
                "r1",
                "r2",
                rate=rate,
                delay=delay,
                encap=encap,
                limit_packets=limit_packets,
                loss=loss,
            ),
            link("lan2", "r2", "h2", rate=access_rate, delay=access_delay, encap="ethernet"),
        ],
        "flows": flows if flows is not None else [bulk()],
    }
    d.update(scenario_fields)
    return Scenario.model_validate(d)


def bulk(
    flow_id: str = "f",
    *,
    nbytes: int | None = 200 * 1460,
    start: float = 0.0,
    stop: float | None = None,
    **tcp: Any,
) -> dict:
    d: dict[str, Any] = {
        "id": flow_id,
        "kind": "tcp_bulk",
        "src": "h1",
        "dst": "h2",
        "start": start,
        "tcp": tcp_opts(**tcp),
    }
    if nbytes is not None:
        d["bytes"] = nbytes
    if stop is not None:
        d["stop"] = stop
    return d


def cbr(
    flow_id: str = "u",
    *,
    rate: float,
    packet_size: int = 512,
    start: float = 0.0,
    stop: float | None = None,
) -> dict:
    d: dict[str, Any] = {
        "id": flow_id,
        "kind": "udp_cbr",
        "src": "h1",
        "dst": "h2",
        "rate": rate,
        "packet_size": packet_size,
        "start": start,
    }
    if stop is not None:
        d["stop"] = stop
    return d


def script_loss(*drops: int, direction: str = "a_to_b") -> dict:
    return {"model": "script", "drop": list(drops), "direction": direction}


# --- the steady-state TCP models the tests check against, written from the papers ----------


#: Student's t at 0.975 with 2 degrees of freedom (any t table): a 95% interval of 3 seeds.
T975_2 = 4.302653


def mathis_reference_bps(mss: int, rtt: float, p: float, b: int) -> float:
    """Mathis, Semke, Mahdavi, Ott (1997): MSS / RTT * sqrt(3 / (2 b p)), b segments
    acknowledged per ACK; written here from the paper, independently of engine.diagnosis."""
    return mss * 8 / rtt * math.sqrt(3 / (2 * b * p))


def padhye_bps(mss: int, rtt: float, p: float, b: int, t0: float) -> float:
    """Padhye, Firoiu, Towsley, Kurose (1998), eq. (32) without the window limit."""
    return (
        mss
        * 8
        / (
            rtt * math.sqrt(2 * b * p / 3)
            + t0 * min(1.0, 3 * math.sqrt(3 * b * p / 8)) * p * (1 + 32 * p * p)
        )
    )


def ser(nbytes: int, rate: float) -> float:
    """Serialisation time of `nbytes` wire bytes at `rate` bit/s."""
    return nbytes * 8 / rate


def rtt(*, rate: float, delay: float, encap: str = "ppp", mss: int = 1460) -> float:
    """Round trip of one full segment and its ACK over one idle link."""
    return (
        2 * delay
        + ser(wire_bytes(encap, mss + IP_TCP), rate)
        + ser(wire_bytes(encap, IP_TCP), rate)
    )


def run(scenario: Scenario, seed: int | None = None) -> Result:
    return simulate(scenario, seed=seed)


def series(result: Result, key: str) -> tuple[list[float], list[float]]:
    s = result.series[key]
    return list(s.t), list(s.v)


def value_at(result: Result, key: str, t: float) -> float:
    """The traced value in force at time `t` (the last point at or before t)."""
    ts, vs = series(result, key)
    i = bisect.bisect_right(ts, t) - 1
    assert i >= 0, f"{key} has no point at or before t={t}"
    return vs[i]


def first_time(result: Result, key: str, predicate) -> tuple[float, float]:
    """The first (t, v) of a series whose value satisfies `predicate`."""
    for t, v in zip(*series(result, key), strict=True):
        if predicate(v):
            return t, v
    raise AssertionError(f"no point of {key} satisfies the predicate")


def with_seed(scenario: Scenario, seed: int) -> Scenario:
    d = copy.deepcopy(scenario.model_dump(mode="json"))
    d["seed"] = seed
    return Scenario.model_validate(d)


# --- the scripted-loss testbed of the variant modules -----------------------------------
#
# 1 Mbit/s, 50 ms each way, PPP: a full segment serialises in 12.064 ms and the unloaded
# round trip is 112.448 ms. The receive window holds W = 20 segments, more than that
# round trip carries (~9.3 segments), so by data packet 60 the sender is steadily
# rwnd-limited with exactly W segments in flight: a loss detected then has FlightSize W.

LOSS_RATE = 1e6
LOSS_DELAY = 0.05
W = 20


def loss_testbed(
    variant: str, *drops: int, segments: int = 200, window: int = W, **tcp: Any
) -> Scenario:
    """A bulk flow `f` of `segments` full segments with data packets `drops` lost."""
    loss = script_loss(*drops) if drops else None
    return one_link(
        rate=LOSS_RATE,
        delay=LOSS_DELAY,
        loss=loss,
        flows=[bulk(nbytes=segments * 1460, variant=variant, rcv_buf=window * 1460, **tcp)],
    )


def after(result: Result, key: str, t0: float) -> list[tuple[float, float]]:
    """The points of a series at or after t0."""
    return [(t, v) for t, v in zip(*series(result, key), strict=True) if t >= t0]


SEGMENT_TIME = ser(wire_bytes("ppp", 1460 + IP_TCP), LOSS_RATE)  # 12.064 ms


def time_ack_reaches(result: Result, seq: int, flow: str = "f") -> float:
    """When the cumulative ACK first reaches byte `seq`."""
    return first_time(result, f"flow.{flow}.ack", lambda v: v >= seq)[0]


def third_dupack_time(result: Result, lost_index: int, flow: str = "f") -> float:
    """When the third duplicate ACK for lost segment `lost_index` reaches the sender.

    The testbed's bottleneck is busy back to back (20 segments of window against ~9.3 of
    round trip), so ACKs arrive one segment time apart. The lost segment still used its
    slot on the wire (a link loss model discards it after serialisation), so the ACK of
    segment lost_index - 1 is followed by duplicates 2, 3 and 4 segment times later.
    """
    return time_ack_reaches(result, lost_index * 1460, flow) + 4 * SEGMENT_TIME


def built(scenario: Scenario) -> Network:
    """The model `simulate()` runs, built and not run: real ports, flows and endpoints for
    the tests that drive one piece by hand. (Compiled, the engine checks the type of what
    it is handed: a stand-in for a port, a flow or a packet is refused.)"""
    return Network(scenario, scenario.seed)


def tcp_flows(net: Network) -> list[TcpFlow]:
    return [f for f in net.flows if isinstance(f, TcpFlow)]


def segment(flow: TcpFlow, length: int = 1460, kind: Kind = Kind.DATA) -> Packet:
    """A packet of `flow` carrying `length` payload bytes, on no path."""
    pkt = Packet(flow, kind, length + IP_TCP, (), 0.0)
    pkt.length = length
    return pkt
