"""`simulate()`: build the network from a Scenario, run it, and return a complete Result.

It runs in three fixed phases (build, run, finalize), like desmod's `simulate()`. The run
advances in slices of simulated time so that the caller's `progress` is called a bounded
number of times and `should_stop` can cancel cooperatively between slices.
"""

from __future__ import annotations

import gc
import hashlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Literal, cast

from simpy.core import StopSimulation

from engine import native
from engine.analysis.warnings import scenario_warnings
from engine.budget import PointBudget
from engine.capture import attach, pcap_file
from engine.diagnosis import diagnose
from engine.flows import Flow, TcpFlow, UdpFlow
from engine.framerelay import FrameRelay
from engine.host import attach_small_queues, hold_back
from engine.kernel import SLICES, Kernel, Periodic, stream
from engine.net import Egress, make_loss, make_queue
from engine.packet import Path
from engine.recorder import LinkProbe
from engine.result import (
    CaptureSummary,
    LinkSummary,
    Result,
    Series,
    TcpFlowSummary,
    UdpFlowSummary,
)
from engine.sampler import RateSampler
from engine.scenario import Scenario
from engine.scenario.topology import Topology
from engine.shaping import interface_shapers, splice
from engine.trace import Trace
from engine.usage import FlowUsage
from engine.version import ENGINE_VERSION

#: What `simulate()` hands a snapshot: the simulated time reached, and how to read the
#: series so far (see `simulate`).
Snapshot = Callable[[float, Callable[[], "dict[str, Series]"]], None]


class SimulationCancelled(Exception):
    """`should_stop()` returned True; the run was abandoned between two slices."""


def _ports(env: Kernel, scenario: Scenario, seed: int) -> dict[tuple[str, str, str], Egress]:
    """One port per link direction, by (link, from, to), each with its probe."""
    ports: dict[tuple[str, str, str], Egress] = {}
    framing: dict[tuple[str, int | None, float], dict[int, tuple[int, float]]] = {}
    for link in scenario.links:
        sides: tuple[tuple[str, str, Literal["a_to_b", "b_to_a"]], ...] = (
            (link.a, link.b, "a_to_b"),
            (link.b, link.a, "b_to_a"),
        )
        for src, dst, direction in sides:
            name = f"link:{link.id}:{src}>{dst}"
            loss = None
            if link.loss.direction in (direction, "both"):
                loss = make_loss(
                    link.loss, stream(seed, name + ":loss"), link.encap, link.overhead_bytes
                )
            queue = make_queue(link.queue_of(direction), seed, name + ":queue")
            rate = link.rate_from(src)
            table = framing.setdefault((link.encap, link.overhead_bytes, rate), {})
            port = Egress(env, link, src, dst, queue, loss, table)
            port.probe = LinkProbe(port)
            ports[(link.id, src, dst)] = port
    return ports


class Network:
    """The built model: ports per link direction, flows, probes."""

    def __init__(self, scenario: Scenario, seed: int):
        self.env = env = Kernel()
        self.scenario = scenario
        self.seed = seed
        self.topology = Topology(scenario)  # one per run: every path asks it
        self.warnings: list[str] = list(scenario_warnings(scenario, self.topology))
        self.ports = _ports(env, scenario, seed)
        pushing = {n.id for n in scenario.nodes if n.kind == "host" and n.egress == "backpressure"}
        hold_back(pushing, self.ports)
        links = {link.id: link for link in scenario.links}
        self.shapers = interface_shapers(env, self.ports, links)
        self.taps = attach(scenario.capture, self.ports, links) if scenario.capture else []
        fr = scenario.frame_relay
        self.frame_relay = FrameRelay(env, scenario, seed, self.ports) if fr and fr.pvcs else None
        self.flows: list[TcpFlow | UdpFlow] = []
        self.pending: set[str] = set()
        self.finished = False  # every finite flow is done and stop_when_done holds
        self.done = env.event()
        for spec in scenario.flows:
            fwd = self._path(spec.src, spec.dst)
            flow: TcpFlow | UdpFlow
            if spec.kind == "tcp_bulk":
                rev = self._path(spec.dst, spec.src)
                flow = TcpFlow(env, spec, seed, fwd, rev, self._flow_done)
            else:
                flow = UdpFlow(env, spec, seed, fwd, self._flow_done)
            self.flows.append(flow)
            if flow.finite:
                self.pending.add(flow.id)
            flow.schedule()
        if pushing:
            senders = [f.sender for f in self.flows if isinstance(f, TcpFlow)]
            attach_small_queues(env, pushing, senders)
        self.usage = {f.id: FlowUsage(env, f) for f in self.flows if isinstance(f, TcpFlow)}
        self.goodput = {
            f.id: Trace("bit/s", rate=True) for f in self.flows if isinstance(f, TcpFlow)
        }
        tcp = [f for f in self.flows if isinstance(f, TcpFlow)]
        self.sampler = RateSampler(
            float(scenario.sample_interval),
            tcp,
            [self.goodput[f.id] for f in tcp],
            list(self.ports.values()),
        )
        # Rate-type series (goodput per TCP flow, utilisation per port): one beat every
        # interval, read by the RateSampler.
        Periodic(env, float(scenario.sample_interval), self.sampler.beat)
        self.budget = self._share_points(tcp)

    def _share_points(self, tcp: list[TcpFlow]) -> PointBudget:
        """Every series of the run draws its points from one budget (engine.recorder)."""
        traces = [
            t for port in self.ports.values() if port.probe for t in port.probe.series().values()
        ]
        for f in tcp:
            traces += f.probe.series().values()
        traces += self.goodput.values()
        if self.frame_relay is not None:
            traces += self.frame_relay.series().values()
        for shaper in self.shapers.values():
            traces += shaper.series("", "queue", "delay").values()
        # A paced or BBR sender adds up to three traces when it starts.
        budget = PointBudget(series=len(traces) + 3 * len(tcp))
        for trace in traces:
            trace.share(budget)
        for f in tcp:
            f.probe.budget = budget
        return budget

    def _path(self, src: str, dst: str) -> Path:
        hops = self.topology.route(src, dst)
        if not hops:
            raise ValueError(f"no route from {src} to {dst}")
        path: Path = tuple(self.ports[(h.link_id, h.src, h.dst)] for h in hops)
        if self.frame_relay is not None:
            path = self.frame_relay.wrap(self.topology, hops, path)
        if self.shapers:
            path = splice(path, self.shapers)
        return path

    def _flow_done(self, flow: Flow) -> None:
        usage = self.usage.get(flow.id)
        if usage is not None:
            usage.on_done()
        self.pending.discard(flow.id)
        if not self.pending and self.scenario.stop_when_done and not self.finished:
            self.finished = True
            self.done.succeed()


def simulate(
    scenario: Scenario,
    *,
    seed: int | None = None,
    progress: Callable[[float], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    snapshot: Snapshot | None = None,
) -> Result:
    """Run `scenario` and return its Result; the same scenario and seed give the same Result.

    `snapshot(now, read)` is called between slices, as `progress` is: `read()` gives the
    series recorded up to `now`, copied; it only makes the rate sampler's beats points
    early (`_read`), so calling it or not leaves the Result as it was. The caller decides how often it is worth reading."""
    wall0 = time.perf_counter()
    run_seed = scenario.seed if seed is None else seed
    with _collector_paused():
        net = Network(scenario, run_seed)
    env = net.env
    duration = float(scenario.duration)
    net.done.callbacks.append(StopSimulation.callback)
    step = duration / SLICES
    while True:
        target = min(duration, env.now + step)
        env.advance(target)
        if net.finished or env.now >= duration:
            break
        if progress is not None:
            progress(_fraction(net, duration))
        if snapshot is not None:
            snapshot(env.now, partial(_read, net))
        if should_stop is not None and should_stop():
            raise SimulationCancelled()
    if progress is not None:
        progress(1.0)
    with _collector_paused():
        return _finalize(net, run_seed, time.perf_counter() - wall0)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while building the model or its result: both allocate
    tens of thousands of objects per thousand flows and free none, so every pass the
    allocations would trigger finds nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _fraction(net: Network, duration: float) -> float:
    by_time = net.env.now / duration
    finite = [(f.delivered_bytes, f.total) for f in net.flows if isinstance(f, TcpFlow) and f.total]
    if finite and net.scenario.stop_when_done:
        by_bytes = min(delivered / total for delivered, total in finite)
        return max(by_time, by_bytes)
    return by_time


def _finalize(net: Network, seed: int, wall: float) -> Result:
    env = net.env
    end = env.now
    net.sampler.flush()
    flows: dict[str, TcpFlowSummary | UdpFlowSummary] = {f.id: f.summary(end) for f in net.flows}
    links = _links(net, end)
    pvcs = net.frame_relay.summaries(end) if net.frame_relay is not None else {}
    series = _series(net)
    result = Result(
        engine_version=ENGINE_VERSION,
        engine_build=native.engine_build(),
        scenario_hash=net.scenario.scenario_hash(),
        seed=seed,
        sim_time=end,
        wall_time=wall,
        events=env.next_eid(),
        warnings=net.warnings,
        flows=flows,
        links=links,
        pvcs=pvcs,
        series=series,
        diagnosis={},
    )
    # usage is kept for the TCP flows only
    shares = {
        fid: u.shares(end, cast(TcpFlowSummary, result.flows[fid])) for fid, u in net.usage.items()
    }
    result.diagnosis = diagnose(net.scenario, result, shares, net.topology)
    for tap in net.taps:
        data, packets = pcap_file(tap, net.scenario, net.flows, end)
        spec = tap.spec
        assert spec.at is not None  # CaptureSpec's validator names the end
        result.captures.append(
            CaptureSummary(
                link=spec.link,
                direction=spec.direction,
                at=spec.at,
                packets=packets,
                missed=tap.missed,
                snaplen=spec.snaplen,
                bytes=len(data),
                sha256=hashlib.sha256(data).hexdigest(),
            )
        )
        result._pcaps[(spec.link, spec.direction)] = data
    return result


def _links(net: Network, end: float) -> dict[str, LinkSummary]:
    """Each port's summary."""
    links: dict[str, LinkSummary] = {}
    for port in net.ports.values():
        shaper = net.shapers.get(port.key)
        links[port.key] = LinkSummary(
            packets=port.packets,
            bytes=port.bytes,
            drops=port.drops,
            error_drops=port.error_drops,
            utilization=port.busy_time(end) / end if end > 0 else 0.0,
            queue_mean=port.queue_wait_total(end) / end if end > 0 else 0.0,
            queue_max=port.queue_max,
            queue_delay_mean=port.wait_total / port.packets if port.packets else 0.0,
            shaper=shaper.summary(end) if shaper is not None else None,
        )
    return links


def _series(net: Network) -> dict[str, Series]:
    """The run's series as recorded so far, those with points: read, never changed, so the
    Result's and a snapshot's are made alike."""
    return {key: trace.series() for key, trace in _traces(net) if len(trace.t)}


def _read(net: Network) -> dict[str, Series]:
    """A snapshot's series: the sampler's beats so far become points first (where its
    blocks end leaves every point as it is), so the rate series are as recent as the rest."""
    net.sampler.flush()
    return _series(net)


def _traces(net: Network) -> Iterator[tuple[str, Trace]]:
    """Every trace of the run by its key: each port's (and its shaper's), each TCP flow's,
    the Frame Relay PVCs'."""
    for port in net.ports.values():
        shaper = net.shapers.get(port.key)
        assert port.probe is not None
        traces = port.probe.series()
        if shaper is not None:
            traces.update(shaper.series(port.probe.prefix, "shaper_queue_packets", "shaper_delay"))
        yield from traces.items()
    for f in net.flows:
        if isinstance(f, TcpFlow):
            yield from f.probe.series().items()
            yield f"flow.{f.id}.state", f.sender.clock.trace
            yield f"flow.{f.id}.goodput_bps", net.goodput[f.id]
    if net.frame_relay is not None:
        yield from net.frame_relay.series().items()
