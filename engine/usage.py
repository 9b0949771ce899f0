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
- a shaper (a PVC's or an interface's) is read the same way: the frame bits it let
  through, and what its bucket and rate allowed (`Shaper.allowance`);
- a flow that stops sending at `stop` still delivers what was in flight: its window ends
  at `stop` and those late bits are added to each bound as they are.

Both are true upper bounds whatever the flows did: the property test
(tests/unit/test_diagnosis_properties.py) checks them against generated scenarios.

Cost: one snapshot per flow at its start (an event only for flows starting after 0) and
one at its end, each reading the ports, PVC directions and shapers on its path; nothing per
packet beyond a PVC direction's and a shaper's counter of the bits it let through.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, NamedTuple

from engine.framerelay import PvcDirection
from engine.kernel import Later
from engine.net import Egress
from engine.packet import Path
from engine.shaping import Shaper

if TYPE_CHECKING:
    from engine.flows import TcpFlow
    from engine.kernel import Kernel
    from engine.result import TcpFlowSummary


@dataclass(frozen=True)
class Share:
    """What one resource on a flow's path could have carried of its payload while it ran."""

    resource: str  # a port key "<link>:<from>><to>", "pvc:<id>", "shaper:<port key>"
    bound_bps: float  # payload bit/s over the flow's active time, at most
    capacity_bps: float  # the same for the flow alone on the resource
    others_fraction: float  # share of the resource the other traffic took meanwhile
    kind: Literal["port", "contract", "shaper"] = "port"  # what the resource is


class _Meter(NamedTuple):
    """A resource that counts the frame bits it lets through: a PVC direction's contract or
    a shaper."""

    resource: str
    kind: Literal["contract", "shaper"]
    gate: PvcDirection | Shaper
    port: Egress  # the port whose framing its bits count
    rate: float  # its long-run frame bit rate


class _Snapshot:
    __slots__ = ("time", "busy", "passed", "delivered")

    def __init__(self, time: float, busy: list[float], passed: list[int], delivered: int):
        self.time = time
        self.busy = busy
        self.passed = passed  # frame bits each meter let through so far
        self.delivered = delivered


class FlowUsage:
    """The ports, PVC directions and shapers of one TCP flow's data path, read at its start
    and end."""

    def __init__(self, env: Kernel, flow: TcpFlow):
        self.env = env
        self.flow = flow
        path = flow.sender.path
        self.ports = [hop for hop in path if isinstance(hop, Egress)]
        self.meters = _meters(path)
        self.start: _Snapshot | None = None
        self.end: _Snapshot | None = None
        self.allowance_at_start: list[float] = []
        if flow.start <= 0:
            self.start = self._read()
            self.allowance_at_start = [m.gate.tokens(0.0) for m in self.meters]
        else:
            Later(env, flow.start, self._on_start, None)

    def _on_start(self, _: None) -> None:
        self.start = self._read()
        now = self.env._now
        self.allowance_at_start = [m.gate.tokens(now) for m in self.meters]

    def _read(self) -> _Snapshot:
        now = self.env._now
        return _Snapshot(
            now,
            [p.busy_time(now) for p in self.ports],
            [_passed(m.gate) for m in self.meters],
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
        tcp = self.flow.spec.tcp
        mss = tcp.payload
        size = mss + tcp.headers
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
        for i, meter in enumerate(self.meters):
            wire = meter.port.wire(size)
            passed = last.passed[i] - start.passed[i]
            others = max(0.0, passed - own_packets * wire * 8)
            allowed = meter.gate.allowance(start.time, last.time, self.allowance_at_start[i])
            ratio = mss / wire
            out.append(
                Share(
                    resource=meter.resource,
                    bound_bps=(max(0.0, allowed - others) * ratio + late) / active,
                    capacity_bps=meter.rate * ratio,
                    others_fraction=others / allowed if allowed > 0 else 0.0,
                    kind=meter.kind,
                )
            )
        return out


def _meters(path: Path) -> list[_Meter]:
    """The PVC contracts and shapers on `path`, in order."""
    out = []
    for hop in path:
        if isinstance(hop, PvcDirection):
            port = hop.first_port
            assert port is not None  # set when the PVC's path is spliced
            name = f"pvc:{hop.circuit.id}"
            out.append(_Meter(name, "contract", hop, port, hop.long_run_rate))
            if hop.shaper is not None:
                out.append(_Meter(name, "shaper", hop.shaper, port, hop.shaper.ceiling))
        elif isinstance(hop, Shaper):
            assert hop.port is not None  # an interface shaper's
            out.append(_Meter(hop.key, "shaper", hop, hop.port, hop.ceiling))
    return out


def _passed(gate: PvcDirection | Shaper) -> int:
    return gate.admitted_bits if isinstance(gate, PvcDirection) else gate.passed_bits
