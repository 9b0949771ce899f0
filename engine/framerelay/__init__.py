"""Frame Relay PVCs: ingress policing (CIR, Bc, Be), DE-first discard and FECN/BECN marking
in the switches, shaping (BECN-adaptive or not), residual frame errors, and their counters.

Built only when the scenario has a `frame_relay` section with at least one PVC; otherwise
nothing here exists and the packet path is untouched (zero cost). One module per job:

- `cloud`: builds the PVCs, wraps Frame Relay ports, splices PVC paths (`FrameRelay`);
- `pvc`: one PVC, its counters, summary and series (`Circuit`), and the hops it adds to a
  path: entry, policer, exit (`PvcDirection`, ...);
- `policing`: the contract's counting disciplines (`TokenBucket`, `IntervalPolicer`);
- `shaping`: a PVC's shaper (engine/shaping.py's) and its BECN adaptation;
- `switch`: a switch port's DE discard and FECN/BECN marking (`FrQueue`, `CycleAverage`).
"""

from engine.framerelay.cloud import FrameRelay
from engine.framerelay.policing import IntervalPolicer, TokenBucket
from engine.framerelay.pvc import Circuit, PvcDirection, PvcExit, PvcIngress
from engine.framerelay.shaping import BecnAdaptation, pvc_shaper
from engine.framerelay.switch import CycleAverage, FrQueue

__all__ = [
    "BecnAdaptation",
    "Circuit",
    "CycleAverage",
    "FrQueue",
    "FrameRelay",
    "IntervalPolicer",
    "PvcDirection",
    "PvcExit",
    "PvcIngress",
    "TokenBucket",
    "pvc_shaper",
]
