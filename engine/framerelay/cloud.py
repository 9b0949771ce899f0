"""The Frame Relay part of a built network (`FrameRelay`): the scenario's PVCs, the
Frame Relay queue on every switch port and `frame_relay` link, and each path through a PVC
spliced with the PVC's hops (engine/framerelay/pvc.py)."""

from __future__ import annotations

from engine.framerelay.pvc import Circuit
from engine.framerelay.switch import FrQueue
from engine.kernel import Kernel
from engine.net import Egress
from engine.packet import Path
from engine.result import PvcSummary
from engine.scenario import Scenario
from engine.scenario.topology import Hop, Topology
from engine.trace import Trace


class FrameRelay:
    """Builds the PVCs of a scenario, wraps Frame Relay ports, and splices PVC paths."""

    def __init__(
        self,
        env: Kernel,
        scenario: Scenario,
        seed: int,
        ports: dict[tuple[str, str, str], Egress],
    ):
        spec = scenario.frame_relay
        assert spec is not None and spec.pvcs
        self.scenario = scenario
        switches = {node.id for node in scenario.nodes if node.kind == "fr_switch"}
        for port in ports.values():
            if port.src in switches or port.encap == "frame_relay":
                port.use_queue(FrQueue(port.queue, port, spec.switch))
        self.circuits = {pvc.id: Circuit(env, pvc, seed) for pvc in spec.pvcs}

    def wrap(self, topology: Topology, hops: list[Hop], ports: tuple[Egress, ...]) -> Path:
        """The path of `ports` (one per hop) with the PVC's entry and exit hops spliced in."""
        span = topology.pvc_span(hops)
        if span is None:
            return ports
        circuit = self.circuits[span.pvc.id]
        direction = circuit.forward if span.forward else circuit.reverse
        first, last = span.first, span.last
        carried = ports[first:last]
        direction.attach(carried[0])
        for port in carried:
            if isinstance(port.queue, FrQueue):
                direction.egress_at.setdefault(port.src, port.queue)
        return (
            *ports[:first],
            direction,
            carried[0],
            direction.ingress,
            *carried[1:],
            direction.exit,
            *ports[last:],
        )

    def summaries(self, end: float) -> dict[str, PvcSummary]:
        return {cid: c.summary(end) for cid, c in self.circuits.items()}

    def series(self) -> dict[str, Trace]:
        out: dict[str, Trace] = {}
        for circuit in self.circuits.values():
            out.update(circuit.series())
        return out
