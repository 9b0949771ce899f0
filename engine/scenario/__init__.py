"""The scenario language: the pydantic models of docs/scenario.md and their whole-scenario rules.

Owns what a client posts and the engine simulates: `Scenario` and its parts, the checks
that need the whole scenario (unique ids, references, routes, MTU) reported at the
offending field's path, the canonical JSON and hash that identify what is simulated,
advisory `warnings()`, and `load_scenario` for JSON or YAML text and files.

After validation every quantity is an SI number (seconds, bytes, bit/s; see
engine.units), so a scenario dumps, hashes and round-trips the same however it was written.

One job per module: `common` (limits, ids, the error collector, the base model),
`network` (nodes, links), `shaping` (router traffic shaping), `framerelay` (switches,
PVCs), `tcp` (the TCP stack's options), `flows` (what runs,
and captures), `document` (`Scenario`, its cross-checks and identity), `warnings`
(advisories), `files` (JSON and YAML).
"""

from engine.scenario.common import (
    MAX_CAPTURE_BYTES,
    MAX_CAPTURE_PACKETS,
    MAX_CAPTURE_TOTAL,
    MAX_CAPTURES,
    MAX_INT,
    MAX_ITEMS,
)
from engine.scenario.document import Scenario
from engine.scenario.files import ScenarioFormatError, load_scenario
from engine.scenario.flows import CaptureSpec, Flow, TcpBulkFlow, UdpCbrFlow
from engine.scenario.framerelay import FrameRelaySpec, FrSwitchSpec, Pvc
from engine.scenario.network import Link, LossSpec, Node, QueueSpec
from engine.scenario.shaping import ShapingSpec
from engine.scenario.tcp import DelayedAckSpec, TcpSpec

__all__ = [
    "MAX_CAPTURES",
    "MAX_CAPTURE_BYTES",
    "MAX_CAPTURE_PACKETS",
    "MAX_CAPTURE_TOTAL",
    "MAX_INT",
    "MAX_ITEMS",
    "CaptureSpec",
    "DelayedAckSpec",
    "Flow",
    "FrSwitchSpec",
    "FrameRelaySpec",
    "Link",
    "LossSpec",
    "Node",
    "Pvc",
    "QueueSpec",
    "Scenario",
    "ScenarioFormatError",
    "ShapingSpec",
    "TcpBulkFlow",
    "TcpSpec",
    "UdpCbrFlow",
    "load_scenario",
]
