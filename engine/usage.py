"""What each TCP flow's path carried while the flow ran: the measured share the other
traffic left to it, from which the diagnosis derives a link bound that the flow's goodput
can never exceed.

A static 1/n split of a bottleneck among the flows that ever cross it is wrong as soon as
they do not run at the same time (a 2 MB transfer and a 1 KB one that starts 3 s later are
not "two flows on the link"), and even when they do, TCP does not split a link evenly
(RTT unfairness). So each flow's window [start, end] is measured instead: each port's busy
time (`Egress.busy_time`, exact) and each PVC direction's admitted frame bits and token
levels are read at the flow's start and at its end. Over that window:

- a port was busy for B seconds, of which the flow itself used at most its own packets'
  serialisation (every data segment it sent, full-sized, and its SYNs); the rest, at
  least B - own, was the other traffic's. The flow's packets crossed the port inside the
  window, so its payload is at most (T - others) x rate x MSS / wire(MSS + 40) bits;
- a PVC direction admitted A frame bits, at most own of them the flow's; the contract let
  through at most the tokens in the buckets at the start plus what they earned during the
  window (see `PvcDirection.allowance`), and the flow got what the others left of it;
- a flow that stops sending at `stop` still delivers what was in flight: its window ends
  at `stop` and those late bits are added to each bound as they are.

Both are true upper bounds whatever the flows did: the property test
(tests/unit/test_diagnosis_properties.py) checks them against generated scenarios.

Cost: one snapshot per flow at its start (an event only for flows starting after 0) and
one at its end, each reading the ports and PVC directions on its path; nothing per packet
beyond a PVC direction's admitted-bits counter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.framerelay import PvcDirection
from engine.kernel import Later
from engine.net import Egress
from engine.packet import TCP_IP_HEADERS

if TYPE_CHECKING:
    from engine.flows import TcpFlow
    from engine.kernel import Kernel
    from engine.result import TcpFlowSummary


@dataclass(frozen=True)
class Share:
    """What one resource on a flow's path could have carried of its payload while it ran."""

    resource: str  # a port key "<link>:<from>><to>", or "pvc:<id>"
    bound_bps: float  # payload bit/s over the flow's active time, at most
    capacity_bps: float  # the same for the flow alone on the resource
    others_fraction: float  # share of the resource the other traffic took meanwhile


class _Snapshot:
    __slots__ = ("time", "busy", "admitted", "delivered")

    def __init__(self, time: float, busy: list[float], admitted: list[float], delivered: int):
        self.time = time
        self.busy = busy
        self.admitted = admitted
        self.delivered = delivered


class FlowUsage:
    """The ports and PVC directions of one TCP flow's data path, read at its start and end."""

    def __init__(self, env: Kernel, flow: TcpFlow):
        self.env = env
        self.flow = flow
        path = flow.sender.path
        self.ports = [hop for hop in path if isinstance(hop, Egress)]
        self.pvcs = [hop for hop in path if isinstance(hop, PvcDirection)]
        self.start: _Snapshot | None = None
        self.end: _Snapshot | None = None
        self.allowance_at_start: list[float] = []
        if flow.start <= 0:
            self.start = self._read()
            self.allowance_at_start = [d.tokens(0.0) for d in self.pvcs]
        else:
            Later(env, flow.start, self._on_start, None)

    def _on_start(self, _: None) -> None:
        self.start = self._read()
        now = self.env._now
        self.allowance_at_start = [d.tokens(now) for d in self.pvcs]

    def _read(self) -> _Snapshot:
        now = self.env._now
        return _Snapshot(
            now,
            [p.busy_time(now) for p in self.ports],
            [d.admitted_bits for d in self.pvcs],
            self.flow.delivered_bytes,
        )

    def on_done(self) -> None:
        self.end = self._read()

    def shares(self, end: float, summary: TcpFlowSummary) -> list[Share]:
        """Each resource's bound on the flow's payload rate over its active time."""
        start = self.start
        if start is None:
            return []
        last = self.end if self.end is not None else self._read()
        # A flow that stops sending (`stop`) still delivers what was in flight: those bits
        # may cross a resource after its window, so they are added to what it allowed.
        late = (self.flow.delivered_bytes - last.delivered) * 8
        window = last.time - start.time
        active = self.flow.active_time(end)
        if window <= 0 or active <= 0:
            return []
        mss = self.flow.spec.tcp.mss
        size = mss + TCP_IP_HEADERS
        # Every data segment sent and every SYN: at most this many of the flow's packets
        # crossed each port of its data path.
        sender = self.flow.sender
        own_packets = summary.segments_sent + sender.syn_retries + 1
        out = []
        for i, port in enumerate(self.ports):
            wire = port.wire(size)
            tx = wire * 8 / port.rate
            busy = last.busy[i] - start.busy[i]
            others = max(0.0, busy - own_packets * tx)
            ratio = mss / wire
            out.append(
                Share(
                    resource=port.key,
                    bound_bps=((window - others) * port.rate * ratio + late) / active,
                    capacity_bps=port.rate * ratio,
                    others_fraction=others / window,
                )
            )
        for i, direction in enumerate(self.pvcs):
            first = direction.first_port
            assert first is not None  # set when the PVC's path is spliced
            wire = first.wire(size)
            bits = wire * 8
            admitted = last.admitted[i] - start.admitted[i]
            others = max(0.0, admitted - own_packets * bits)
            allowed = direction.allowance(start.time, last.time, self.allowance_at_start[i])
            ratio = mss / wire
            out.append(
                Share(
                    resource=f"pvc:{direction.circuit.id}",
                    bound_bps=(max(0.0, allowed - others) * ratio + late) / active,
                    capacity_bps=direction.long_run_rate * ratio,
                    others_fraction=others / allowed if allowed > 0 else 0.0,
                )
            )
        return out
