"""What a run will hold in a worker's memory, before it runs: its series points (as many as
the recorder's point budget lets it keep), the state of its flows and ports, the packets in
flight, its capture files, and the process itself. A service refuses a run estimated over
its memory budget; the figures below are measured peaks of real runs (bench/memory_bench.py
prints each case's estimate beside the resident memory it reached), rounded up, so the
estimate errs high.
"""

from __future__ import annotations

import math
from typing import Any

from engine.analysis.paths import PathFacts
from engine.budget import MIN_CAP, POINT_BUDGET, TRACE_CAP
from engine.recorder import RESERVOIR
from engine.scenario import Scenario, TcpBulkFlow
from engine.tcp.cc import congestion_ops

MIB = 1 << 20
#: A worker's process with the engine, the database driver and Celery loaded, at rest.
PROCESS = 160 * MIB
#: A recorded point at the run's peak: its two doubles in the trace, the two Python floats
#: of the Result's lists (and their list slots), and the packed copy the worker stores.
POINT = 100
#: A TCP flow's sender, receiver, recovery, probe, accounting and sampler columns; a UDP
#: flow's source and sink; one direction of a link (its port, queue and probe).
TCP_FLOW = 64 * 1024
UDP_FLOW = 16 * 1024
PORT = 8 * 1024
#: A packet in flight or waiting, with its slots and its place in a line.
PACKET = 400
#: A capture's file is held as its records, then the file, then the file deflated.
CAPTURE_COPIES = 3

#: A TCP flow's change-driven traces that move with nearly every segment or ACK (seq,
#: inflight, ack, cwnd, srtt, the one-way delay); its other four change at losses and
#: timeouts; a paced sender adds its rate, a rate-based one (BBR) two more, all moving
#: with every ACK.
TCP_BUSY_TRACES, TCP_QUIET_TRACES, PACING_TRACES = 6, 4, 3
QUIET_POINTS = 64  # what a trace that moves at losses and timeouts is given
#: A flow's time-accounting state (`flow.<id>.state`, engine.accounting) changes when a
#: send attempt stops for another reason than the last: a few times per loss, never per
#: segment. A quarter of its segments bounds it (tests/unit/test_estimate.py's cases with
#: loss change state at 5-18% of their segments).
STATE_SHARE = 0.25


def _points(n: float) -> int:
    return int(min(TRACE_CAP, max(n, 0.0)))


def series_points(
    scenario: Scenario, facts: dict[str, PathFacts], horizon: float
) -> tuple[int, int]:
    """(series, points they would record with no budget but each one's TRACE_CAP)."""
    beats = horizon / float(scenario.sample_interval) if horizon < math.inf else math.inf
    # Every port's utilisation is sampled; a queue moves where packets wait, at a flow's
    # bottleneck (an arrival and a departure per packet at most), and elsewhere at drops,
    # which are rare, as the drops themselves.
    series = 3 * 2 * len(scenario.links)
    points = 2 * len(scenario.links) * (_points(beats) + 2 * QUIET_POINTS)
    waiting: dict[str, float] = {}
    # A strategy's traits, read from an instance: compiled (mypyc), its class holds none.
    traits: dict[str, tuple[bool, bool]] = {}
    for flow in scenario.flows:
        f = facts[flow.id]
        waiting[f.bottleneck] = waiting.get(f.bottleneck, 0.0) + 2 * f.est_packets
        if not isinstance(flow, TcpBulkFlow):
            continue
        if flow.tcp.variant not in traits:
            cc = congestion_ops(flow.tcp)
            traits[flow.tcp.variant] = (cc.always_paces, cc.rate_based)
        always_paces, rate_based = traits[flow.tcp.variant]
        paced = bool(flow.tcp.pacing) or always_paces
        busy = TCP_BUSY_TRACES + paced + (PACING_TRACES - 1) * rate_based
        ack_every = flow.tcp.delayed_ack.count if flow.tcp.delayed_ack.enabled else 1
        segments = f.est_packets * ack_every / (ack_every + 1)  # est_packets: data and ACKs
        series += busy + TCP_QUIET_TRACES + 2  # and its goodput and state
        points += busy * _points(segments) + TCP_QUIET_TRACES * QUIET_POINTS + _points(beats)
        points += _points(STATE_SHARE * segments) + QUIET_POINTS
    points += sum(_points(n) for n in waiting.values())
    if scenario.frame_relay is not None:
        pvcs = len(scenario.frame_relay.pvcs)
        series += 3 * pvcs
        points += 3 * pvcs * QUIET_POINTS
    return series, points


def memory(
    scenario: Scenario, facts: dict[str, PathFacts], horizon: float, capture_bytes: int
) -> dict[str, Any]:
    """The run's peak memory in bytes, with the series points it will hold (the recorder's
    budget, or a floor of MIN_CAP per series for runs of very many series)."""
    series, wanted = series_points(scenario, facts, horizon)
    held = min(wanted, max(POINT_BUDGET, series * MIN_CAP))
    flows = sent = reservoirs = 0.0
    for flow in scenario.flows:
        f = facts[flow.id]
        reservoirs += 8 * min(RESERVOIR, f.est_packets)
        if isinstance(flow, TcpBulkFlow):
            flows += TCP_FLOW
            # At most its window of segments out, and as many ACKs.
            sent += min(f.est_packets, 2 * (f.window_bytes or 0) / flow.tcp.mss)
        else:
            flows += UDP_FLOW
            sent += f.est_packets
    total = (
        PROCESS
        + held * POINT
        + flows
        + PORT * 2 * len(scenario.links)
        + reservoirs
        + min(sent, _network_room(scenario)) * PACKET
        + CAPTURE_COPIES * capture_bytes
    )
    return {"bytes": int(min(total, 2**62)), "series": series, "series_points": int(held)}


SMALLEST_PACKET = 40  # bytes: an IPv4 and TCP header, an ACK


def _network_room(scenario: Scenario) -> float:
    """The most packets the network can hold at once, whoever sends them: every queue full
    and every wire carrying its rate x delay of the smallest packets."""
    room = 0.0
    for link in scenario.links:
        on_wire = float(link.rate) * float(link.delay) / (8 * SMALLEST_PACKET)
        for direction in ("a_to_b", "b_to_a"):
            queue = link.queue_of(direction)
            waiting = queue.limit_packets or (queue.limit_bytes or 0) / SMALLEST_PACKET
            room += waiting + on_wire + 1
    return room
