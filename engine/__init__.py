"""tcpfr's engine: the scenario language, a packet-level SimPy simulator of TCP over WAN
links, metrics, analytic bounds and diagnosis, presets, and a CLI (`python -m engine`).

Pure: it imports simpy, numpy, pydantic (and pint, pyyaml), never web, broker or database
code. `simulate()` is a pure function of (scenario, seed, engine version).
"""

# First: it chooses the build (compiled or pure) before any engine module is imported.
from engine import native  # noqa: F401  (isort keeps it first)
from engine.analysis import describe
from engine.result import Result, Series
from engine.scenario import Scenario, load_scenario
from engine.simulation import SimulationCancelled, simulate
from engine.version import ENGINE_VERSION

__all__ = [
    "ENGINE_VERSION",
    "Result",
    "Scenario",
    "Series",
    "SimulationCancelled",
    "describe",
    "load_scenario",
    "simulate",
]
